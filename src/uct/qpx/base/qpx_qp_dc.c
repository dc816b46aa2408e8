/*
 * qpx QP lifecycle of mlx5 DC QPs (mlx5dv_create_qp(3)): DC initiators and
 * DC targets, created through the direct-verbs API only, so that the same
 * code runs on rdma-core's mlx5 provider and on softverbs.
 *
 * The state transitions and their attribute masks are those the kernel's
 * mlx5_ib accepts (modify_dci_qp_is_ok for a DCI, mlx5_ib_modify_dct for a
 * DCT), which are not the IBA table of an RC QP: a DCI has no remote QP or
 * PSN and no access flags; a DCT never goes beyond RTR.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_qp.h"

#include <infiniband/mlx5dv.h>
#include <errno.h>
#include <string.h>


/* Every RC operation a DCI may post (rdma-core providers/mlx5/qp.c accepts
 * the RC set for a DCI) */
#define QPX_QP_DCI_SEND_OPS (IBV_QP_EX_WITH_SEND | \
                             IBV_QP_EX_WITH_SEND_WITH_IMM | \
                             IBV_QP_EX_WITH_RDMA_WRITE | \
                             IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
                             IBV_QP_EX_WITH_RDMA_READ | \
                             IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
                             IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)


typedef struct qpx_qp_dc_arg {
    enum mlx5dv_dc_type type;
    uint64_t            dc_key;
} qpx_qp_dc_arg_t;


static struct ibv_qp *qpx_qp_dc_create_one(struct ibv_pd *pd,
                                           struct ibv_qp_init_attr *attr,
                                           void *arg)
{
    const qpx_qp_dc_arg_t *dc = arg;
    struct mlx5dv_qp_init_attr dv_attr;
    struct ibv_qp_init_attr_ex ex;
    struct ibv_qp *qp;

    memset(&ex, 0, sizeof(ex));
    memset(&dv_attr, 0, sizeof(dv_attr));
    ex.qp_context        = attr->qp_context;
    ex.send_cq           = attr->send_cq;
    ex.recv_cq           = attr->recv_cq;
    ex.qp_type           = IBV_QPT_DRIVER;
    ex.sq_sig_all        = attr->sq_sig_all;
    ex.comp_mask         = IBV_QP_INIT_ATTR_PD;
    ex.pd                = pd;
    dv_attr.comp_mask    = MLX5DV_QP_INIT_ATTR_MASK_DC;
    dv_attr.dc_init_attr.dc_type = dc->type;
    if (dc->type == MLX5DV_DCTYPE_DCI) {
        /* no receive queue: max_recv_* must be 0 (the kernel's
         * check_qp_attr refuses a DCI with any) */
        ex.cap.max_send_wr     = attr->cap.max_send_wr;
        ex.cap.max_send_sge    = attr->cap.max_send_sge;
        ex.cap.max_inline_data = attr->cap.max_inline_data;
        ex.comp_mask          |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        ex.send_ops_flags      = QPX_QP_DCI_SEND_OPS;
    } else {
        /* a DCT takes only the PD bit (rdma-core create_dct) and receives
         * from its SRQ */
        ex.srq                              = attr->srq;
        dv_attr.dc_init_attr.dct_access_key = dc->dc_key;
    }

    qp = mlx5dv_create_qp(pd->context, &ex, &dv_attr);
    if ((qp != NULL) && (dc->type == MLX5DV_DCTYPE_DCI)) {
        attr->cap = ex.cap; /* granted */
    }
    return qp;
}


ucs_status_t qpx_qp_dci_create(struct ibv_pd *pd, const qpx_device_t *dev,
                               struct ibv_qp_init_attr *init_attr,
                               ucs_log_level_t exhausted_level,
                               struct ibv_qp **qp_p)
{
    qpx_qp_dc_arg_t arg = {.type = MLX5DV_DCTYPE_DCI};
    struct ibv_qp_init_attr attr = *init_attr;
    ucs_status_t status;

    attr.qp_type          = IBV_QPT_DRIVER;
    attr.srq              = NULL;
    attr.cap.max_recv_wr  = 0;
    attr.cap.max_recv_sge = 0;
    status = qpx_qp_create_with(pd, dev, &attr, qpx_qp_dc_create_one, &arg,
                                exhausted_level, qp_p);
    if (status == UCS_OK) {
        init_attr->cap = attr.cap;
    }
    return status;
}


ucs_status_t qpx_qp_dct_create(struct ibv_pd *pd,
                               struct ibv_qp_init_attr *init_attr,
                               uint64_t dc_key, ucs_log_level_t exhausted_level,
                               struct ibv_qp **qp_p)
{
    qpx_qp_dc_arg_t arg = {.type = MLX5DV_DCTYPE_DCT, .dc_key = dc_key};
    struct ibv_qp *qp;

    if (init_attr->srq == NULL) {
        ucs_error("a DC target needs an SRQ");
        return UCS_ERR_INVALID_PARAM;
    }
    qp = qpx_qp_dc_create_one(pd, init_attr, &arg);
    if (qp == NULL) {
        ucs_log(qpx_device_err_exhausted(errno) ? exhausted_level :
                UCS_LOG_LEVEL_ERROR,
                "mlx5dv_create_qp(DCT, srq %p) failed: %m", init_attr->srq);
        return (errno == EOPNOTSUPP) ? UCS_ERR_UNSUPPORTED :
               qpx_device_err_status(errno);
    }

    *qp_p = qp;
    return UCS_OK;
}


/*
 * A DC QP to INIT, then RTR, with exactly the attributes mlx5dv_create_qp(3)
 * names for each: INIT with its port and P_Key index, and for a DCT its
 * access flags (a DCI only sends: none); RTR with the path MTU and the
 * local port's address vector (a DCI's destination comes with each work
 * request, mlx5dv_wr_set_dc_addr), and for a DCT its RNR timer. A DCT (and
 * its number) exists on the HCA from RTR on.
 */
static ucs_status_t qpx_qp_dc_to_rtr(struct ibv_qp *qp, uint8_t port_num,
                                     int is_dct, int access_flags,
                                     const qpx_qp_connect_attr_t *conn)
{
    struct ibv_qp_attr attr;
    ucs_status_t status;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = port_num;
    attr.qp_access_flags = access_flags;
    status = qpx_qp_modify(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                      IBV_QP_PORT |
                                      (is_dct ? IBV_QP_ACCESS_FLAGS : 0));
    if (status != UCS_OK) {
        return status;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state         = IBV_QPS_RTR;
    attr.min_rnr_timer    = conn->min_rnr_timer;
    attr.path_mtu         = conn->path_mtu;
    attr.ah_attr          = conn->ah_attr;
    attr.ah_attr.port_num = port_num;
    return qpx_qp_modify(qp, &attr, IBV_QP_STATE | IBV_QP_PATH_MTU |
                                    IBV_QP_AV |
                                    (is_dct ? IBV_QP_MIN_RNR_TIMER : 0));
}


ucs_status_t qpx_qp_dci_connect(struct ibv_qp *qp, uint8_t port_num,
                                const qpx_qp_connect_attr_t *conn)
{
    ucs_status_t status;

    status = qpx_qp_dc_to_rtr(qp, port_num, 0, 0, conn);
    if (status != UCS_OK) {
        return status;
    }
    return qpx_qp_to_rts(qp, conn);
}


ucs_status_t qpx_qp_dct_listen(struct ibv_qp *qp, uint8_t port_num,
                               int access_flags,
                               const qpx_qp_connect_attr_t *conn)
{
    return qpx_qp_dc_to_rtr(qp, port_num, 1, access_flags, conn);
}
