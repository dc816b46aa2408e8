/*
 * softverbs libmlx5.so.1: the soft HCA is not an mlx5 device, so
 * mlx5dv_is_supported() is false and the direct-verbs entry points that
 * clients import fail with EOPNOTSUPP.
 *
 * DC support (mlx5dv_create_qp with MLX5DV_QP_INIT_ATTR_MASK_DC and
 * mlx5dv_wr_set_dc_addr) would add DCI/DCT QP types to the QP layer:
 * a DCI is a requester whose destination is taken per WR, a DCT a
 * responder reached by (DCT number, DC key), as UD is per WR today.
 */
#include <infiniband/mlx5dv.h>
#include <errno.h>
#include <stddef.h>

#include "sv_stub.h"

SV_EXPORT bool mlx5dv_is_supported(struct ibv_device *device)
{
    return false;
}

SV_STUB_ERR(mlx5dv_query_device, struct ibv_context *ctx,
            struct mlx5dv_context *attrs)

SV_STUB_ERR(mlx5dv_init_obj, struct mlx5dv_obj *obj, uint64_t obj_type)

SV_STUB_NULL(struct ibv_context *, mlx5dv_open_device,
             struct ibv_device *device, struct mlx5dv_context_attr *attr)

SV_STUB_NULL(struct ibv_cq_ex *, mlx5dv_create_cq, struct ibv_context *context,
             struct ibv_cq_init_attr_ex *cq_attr,
             struct mlx5dv_cq_init_attr *mlx5_cq_attr)

SV_STUB_NULL(struct ibv_qp *, mlx5dv_create_qp, struct ibv_context *context,
             struct ibv_qp_init_attr_ex *qp_attr,
             struct mlx5dv_qp_init_attr *mlx5_qp_attr)

SV_STUB_NULL(struct mlx5dv_qp_ex *, mlx5dv_qp_ex_from_ibv_qp_ex,
             struct ibv_qp_ex *qp)

SV_STUB_NULL(struct mlx5dv_mkey *, mlx5dv_create_mkey,
             struct mlx5dv_mkey_init_attr *attr)

SV_STUB_ERR(mlx5dv_destroy_mkey, struct mlx5dv_mkey *mkey)

SV_STUB_NULL(struct mlx5dv_devx_event_channel *, mlx5dv_devx_create_event_channel,
             struct ibv_context *context,
             enum mlx5dv_devx_create_event_channel_flags flags)

SV_EXPORT void mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *ch)
{
}

SV_EXPORT ssize_t mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *ch,
                                        struct mlx5dv_devx_async_event_hdr *data,
                                        size_t len)
{
    errno = EOPNOTSUPP;
    return -1;
}

SV_STUB_ERR(mlx5dv_devx_subscribe_devx_event,
            struct mlx5dv_devx_event_channel *ch, struct mlx5dv_devx_obj *obj,
            uint16_t events_sz, uint16_t events_num[], uint64_t cookie)

SV_STUB_ERR(mlx5dv_crypto_login, struct ibv_context *context,
            struct mlx5dv_crypto_login_attr *attr)

SV_STUB_NULL(struct mlx5dv_dek *, mlx5dv_dek_create,
             struct ibv_context *context, struct mlx5dv_dek_init_attr *attr)

SV_STUB_ERR(mlx5dv_dek_destroy, struct mlx5dv_dek *dek)

SV_STUB_NULL(struct mlx5dv_devx_uar *, mlx5dv_devx_alloc_uar,
             struct ibv_context *context, uint32_t flags)

SV_EXPORT void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar)
{
}

SV_STUB_ERR(mlx5dv_devx_general_cmd, struct ibv_context *context,
            const void *in, size_t inlen, void *out, size_t outlen)

SV_STUB_NULL(struct mlx5dv_devx_obj *, mlx5dv_devx_obj_create,
             struct ibv_context *context, const void *in, size_t inlen,
             void *out, size_t outlen)

SV_STUB_ERR(mlx5dv_devx_obj_destroy, struct mlx5dv_devx_obj *obj)

SV_STUB_ERR(mlx5dv_devx_obj_modify, struct mlx5dv_devx_obj *obj,
            const void *in, size_t inlen, void *out, size_t outlen)

SV_STUB_ERR(mlx5dv_devx_obj_query, struct mlx5dv_devx_obj *obj, const void *in,
            size_t inlen, void *out, size_t outlen)

SV_STUB_NULL(struct mlx5dv_devx_umem *, mlx5dv_devx_umem_reg,
             struct ibv_context *ctx, void *addr, size_t size, uint32_t access)

SV_STUB_ERR(mlx5dv_devx_umem_dereg, struct mlx5dv_devx_umem *umem)

SV_STUB_ERR(mlx5dv_devx_qp_modify, struct ibv_qp *qp, const void *in,
            size_t inlen, void *out, size_t outlen)

SV_STUB_ERR(mlx5dv_devx_qp_query, struct ibv_qp *qp, const void *in,
            size_t inlen, void *out, size_t outlen)

SV_STUB_ERR(mlx5dv_dci_stream_id_reset, struct ibv_qp *qp, uint16_t stream_id)
