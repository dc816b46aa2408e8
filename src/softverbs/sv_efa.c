/*
 * softverbs libefa.so.1: the soft HCA is not an EFA device; every efadv
 * entry point fails with EOPNOTSUPP.
 */
#include <infiniband/efadv.h>
#include <errno.h>

#include "sv_stub.h"

SV_STUB_NULL(struct ibv_qp *, efadv_create_driver_qp, struct ibv_pd *pd,
             struct ibv_qp_init_attr *attr, uint32_t driver_qp_type)

SV_STUB_NULL(struct ibv_qp *, efadv_create_qp_ex, struct ibv_context *ctx,
             struct ibv_qp_init_attr_ex *attr, struct efadv_qp_init_attr *efa,
             uint32_t inlen)

SV_STUB_ERR(efadv_query_device, struct ibv_context *ctx,
            struct efadv_device_attr *attr, uint32_t inlen)

SV_STUB_ERR(efadv_query_ah, struct ibv_ah *ah, struct efadv_ah_attr *attr,
            uint32_t inlen)

SV_STUB_NULL(struct ibv_cq_ex *, efadv_create_cq, struct ibv_context *ctx,
             struct ibv_cq_init_attr_ex *attr, struct efadv_cq_init_attr *efa,
             uint32_t inlen)

SV_STUB_NULL(struct efadv_cq *, efadv_cq_from_ibv_cq_ex, struct ibv_cq_ex *cq)
