/*
 * softverbs: entry points that real clients import but that have little
 * meaning on a soft device (sysfs, fork support, kernel ABI copies, ECE,
 * object import).
 */
#include "sv.h"
#include "sv_stub.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>
#include <infiniband/sa.h>

SV_EXPORT const char *ibv_get_sysfs_path(void)
{
    const char *env = getenv("SYSFS_PATH");

    return env ? env : "/sys";
}

SV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
                                  char *buf, size_t size)
{
    char *path;
    ssize_t len;
    int fd;

    if (asprintf(&path, "%s/%s", dir, file) < 0) {
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        return -1;
    }
    len = read(fd, buf, size);
    close(fd);
    if (len > 0) {
        if ((size_t)len == size) {
            len--;
        }
        if (buf[len - 1] == '\n') {
            buf[--len] = '\0';
        } else {
            buf[len] = '\0';
        }
    }
    return len;
}

SV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
                                        struct ibv_device *dev,
                                        const char *fnfmt, ...)
{
    errno = ENOENT;
    return -1;
}

SV_EXPORT int ibv_fork_init(void)
{
    /* no pinned pages: fork() is always safe */
    return 0;
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

SV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    return 0;
}

SV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    return 0;
}

SV_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
                                          struct ib_uverbs_ah_attr *src)
{
    memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
    dst->grh.flow_label    = src->grh.flow_label;
    dst->grh.sgid_index    = src->grh.sgid_index;
    dst->grh.hop_limit     = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid              = src->dlid;
    dst->sl                = src->sl;
    dst->src_path_bits     = src->src_path_bits;
    dst->static_rate       = src->static_rate;
    dst->is_global         = src->is_global;
    dst->port_num          = src->port_num;
}

SV_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
                                          struct ib_uverbs_qp_attr *src)
{
    dst->cur_qp_state        = src->cur_qp_state;
    dst->path_mtu            = src->path_mtu;
    dst->path_mig_state      = src->path_mig_state;
    dst->qkey                = src->qkey;
    dst->rq_psn              = src->rq_psn;
    dst->sq_psn              = src->sq_psn;
    dst->dest_qp_num         = src->dest_qp_num;
    dst->qp_access_flags     = src->qp_access_flags;
    dst->cap.max_send_wr     = src->max_send_wr;
    dst->cap.max_recv_wr     = src->max_recv_wr;
    dst->cap.max_send_sge    = src->max_send_sge;
    dst->cap.max_recv_sge    = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index          = src->pkey_index;
    dst->alt_pkey_index      = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining         = src->sq_draining;
    dst->max_rd_atomic       = src->max_rd_atomic;
    dst->max_dest_rd_atomic  = src->max_dest_rd_atomic;
    dst->min_rnr_timer       = src->min_rnr_timer;
    dst->port_num            = src->port_num;
    dst->timeout             = src->timeout;
    dst->retry_cnt           = src->retry_cnt;
    dst->rnr_retry           = src->rnr_retry;
    dst->alt_port_num        = src->alt_port_num;
    dst->alt_timeout         = src->alt_timeout;
}

/* The scalar fields of a path record, under the same names in the verbs
 * and the kernel ABI structures (the GIDs differ in type) */
#define SV_PATH_REC_COPY(_dst, _src) \
    do { \
        (_dst)->dlid = (_src)->dlid; \
        (_dst)->slid = (_src)->slid; \
        (_dst)->raw_traffic = (_src)->raw_traffic; \
        (_dst)->flow_label = (_src)->flow_label; \
        (_dst)->hop_limit = (_src)->hop_limit; \
        (_dst)->traffic_class = (_src)->traffic_class; \
        (_dst)->reversible = (_src)->reversible; \
        (_dst)->numb_path = (_src)->numb_path; \
        (_dst)->pkey = (_src)->pkey; \
        (_dst)->sl = (_src)->sl; \
        (_dst)->mtu_selector = (_src)->mtu_selector; \
        (_dst)->mtu = (_src)->mtu; \
        (_dst)->rate_selector = (_src)->rate_selector; \
        (_dst)->rate = (_src)->rate; \
        (_dst)->packet_life_time_selector = (_src)->packet_life_time_selector; \
        (_dst)->packet_life_time = (_src)->packet_life_time; \
        (_dst)->preference = (_src)->preference; \
    } while (0)

SV_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                           struct ib_user_path_rec *src)
{
    memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
    memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
    SV_PATH_REC_COPY(dst, src);
}

SV_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                                         struct ibv_sa_path_rec *src)
{
    memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
    memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
    SV_PATH_REC_COPY(dst, src);
}

SV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
                                          struct ibv_ah_attr *attr,
                                          uint8_t eth_mac[6],
                                          uint16_t *vid)
{
    /* InfiniBand link layer: there is no Ethernet L2 address */
    return EINVAL;
}

SV_STUB_ERR(ibv_set_ece, struct ibv_qp *qp, struct ibv_ece *ece)

SV_STUB_ERR(ibv_query_ece, struct ibv_qp *qp, struct ibv_ece *ece)

SV_STUB_NULL(struct ibv_context *, ibv_import_device, int cmd_fd)

SV_STUB_NULL(struct ibv_pd *, ibv_import_pd, struct ibv_context *context,
             uint32_t pd_handle)

SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SV_STUB_NULL(struct ibv_mr *, ibv_import_mr, struct ibv_pd *pd,
             uint32_t mr_handle)

SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SV_STUB_NULL(struct ibv_dm *, ibv_import_dm, struct ibv_context *context,
             uint32_t dm_handle)

SV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
                                         enum ibv_wr_opcode op,
                                         uint32_t flags)
{
    /* payload is copied in order before the completion is pushed */
    return 1;
}

SV_STUB_NULL(struct ibv_mr *, ibv_reg_dmabuf_mr, struct ibv_pd *pd,
             uint64_t offset, size_t length, uint64_t iova, int fd, int access)

SV_EXPORT void __verbs_log(void *ctx, int level, const char *fmt, ...)
{
}
