/*
 * softverbs libefa.so.1: the soft HCA is not an EFA device; every efadv
 * entry point fails with EOPNOTSUPP.
 */
#include <infiniband/efadv.h>
#include <errno.h>

#define SV_EXPORT __attribute__((visibility("default")))

SV_EXPORT struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *pd,
                                                struct ibv_qp_init_attr *attr,
                                                uint32_t driver_qp_type)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ctx,
                                            struct ibv_qp_init_attr_ex *attr,
                                            struct efadv_qp_init_attr *efa,
                                            uint32_t inlen)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT int efadv_query_device(struct ibv_context *ctx,
                                 struct efadv_device_attr *attr,
                                 uint32_t inlen)
{
    return EOPNOTSUPP;
}

SV_EXPORT int efadv_query_ah(struct ibv_ah *ah, struct efadv_ah_attr *attr,
                             uint32_t inlen)
{
    return EOPNOTSUPP;
}

SV_EXPORT struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ctx,
                                            struct ibv_cq_init_attr_ex *attr,
                                            struct efadv_cq_init_attr *efa,
                                            uint32_t inlen)
{
    errno = EOPNOTSUPP;
    return NULL;
}

SV_EXPORT struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *cq)
{
    errno = EOPNOTSUPP;
    return NULL;
}
