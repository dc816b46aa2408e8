/*
 * What softverbs' libibverbs exports to its own providers (libmlx5) and to
 * no one else: version node SOFTVERBS_PRIVATE_1.0, as rdma-core's
 * libibverbs exports IBVERBS_PRIVATE_34 to its providers.
 */
#ifndef SV_PROVIDER_H
#define SV_PROVIDER_H

#include <infiniband/mlx5dv.h>

/* mlx5dv_create_qp(3), mlx5dv_qp_ex_from_ibv_qp_ex, mlx5dv_query_device(3)
 * of the soft HCA (sv_dc.c) */
struct ibv_qp *softverbs_dv_create_qp(struct ibv_context *context,
                                      struct ibv_qp_init_attr_ex *attr,
                                      struct mlx5dv_qp_init_attr *dv);
struct mlx5dv_qp_ex *softverbs_dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *q);
int softverbs_dv_query_device(struct ibv_context *ctx,
                              struct mlx5dv_context *attrs);

/* the mlx5 personality (sv_mlx5_obj.c, SOFTVERBS_MLX5=1) */
bool softverbs_dv_is_supported(struct ibv_device *device);
struct ibv_cq_ex *softverbs_dv_create_cq(struct ibv_context *context,
                                         struct ibv_cq_init_attr_ex *cq_attr,
                                         struct mlx5dv_cq_init_attr *dv);
int softverbs_dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type);

#endif
