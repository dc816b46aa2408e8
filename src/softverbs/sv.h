/*
 * softverbs internal definitions: the process-local verbs objects, over
 * the host-wide shared registry (sv_registry.h).
 */
#ifndef SV_H
#define SV_H

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <softverbs/softverbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <errno.h>
#include <sys/uio.h>

#define SV_EXPORT        __attribute__((visibility("default")))
#define SV_LIKELY(x)     __builtin_expect(!!(x), 1)
#define SV_UNLIKELY(x)   __builtin_expect(!!(x), 0)
#define sv_container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

#include "sv_registry.h"

/* ---------------------------------------------------------------------
 * Process-local objects
 * ------------------------------------------------------------------- */
struct sv_device {
    struct ibv_device ibdev;      /* first: handed to the application */
    int      index;               /* its GUID: sv_device_guid(index) */
};

struct sv_context {
    struct verbs_context vctx;    /* ends with struct ibv_context */
    struct sv_device *dev;
    uint32_t ctx_id;
    pthread_mutex_t lock;
};

/* A thread domain (ibv_alloc_td(3)): a hint only, softverbs keeps its
 * locks; it counts the parent domains that name it (sv_pd.c) */
struct sv_td {
    struct ibv_td td;
    uint32_t refs;
};

/* A protection domain, or a parent domain (ibv_alloc_parent_domain(3)),
 * which has the pd_id of the PD it contains: the two are one protection
 * domain to every check, as the man page makes them interchangeable */
struct sv_pd {
    struct ibv_pd pd;
    uint32_t pd_id;
    uint32_t refs;                /* MRs, MWs, QPs, SRQs, AHs, CQs and
                                     parent domains using it */
    struct sv_pd *parent_of;      /* parent domain: the PD it contains */
    struct sv_td *td;             /* parent domain: its thread domain */
    void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
                   size_t alignment, uint64_t resource_type);
    void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
                 uint64_t resource_type);
    void *pd_context;
};

static inline struct sv_pd *sv_pd(struct ibv_pd *pd)
{
    return sv_container_of(pd, struct sv_pd, pd);
}

static inline void sv_pd_ref(struct ibv_pd *pd, int delta)
{
    __atomic_fetch_add(&sv_pd(pd)->refs, delta, __ATOMIC_RELAXED);
}

/* PDs, parent and thread domains (sv_pd.c). A buffer of the process for
 * an object of pd: from the parent domain's allocator if it has one (NULL:
 * it failed), else calloc; *custom says which, for sv_pd_buf_free */
struct ibv_pd *sv_alloc_pd(struct ibv_context *ctx);
void *sv_pd_buf_alloc(struct ibv_pd *pd, size_t size, uint64_t type,
                      int *custom);
void  sv_pd_buf_free(struct ibv_pd *pd, void *buf, uint64_t type, int custom);
void  sv_pd_init_ops(struct verbs_context *v);

struct sv_mr {
    struct ibv_mr mr;
    uint32_t index;
    uint32_t *dm_refs;            /* MR on device memory: the DM's MR count */
};

/* Memory windows (sv_mw.c). Keys of windows have index bit 16 set, above
 * every MR index (rxe keeps MWs in an index range of their own too,
 * RXE_MIN_MW_INDEX), so that an rkey names a window or an MR by itself */
#define SV_MW_KEY_BASE 0x10000u
static inline int sv_key_is_mw(uint32_t key)
{
    return (key >> 8) >= SV_MW_KEY_BASE;
}

struct sv_mw {
    struct ibv_mw mw;
    uint32_t index;
};

void sv_mw_init_ops(struct verbs_context *v);
struct sv_qp;
struct sv_swqe;
/* requester: execute a BIND_MW / LOCAL_INV WQE (an sv_resp_status) */
int  sv_mw_local_op(struct sv_qp *qp, struct sv_swqe *w);
/* responder: a Send with Invalidate's rkey, on behalf of QP dq: 0 or -1 */
int  sv_mw_remote_invalidate(const struct sv_shm_qp *dq, uint32_t rkey);
/* responder: the rkey of a window (an sv_resp_status, riov set), held in
 * holds as an MR's key is (sv_xfer.h) until the transfer is done */
struct sv_mr_holds;
int  sv_mw_check_rkey(const struct sv_shm_qp *dq, uint32_t rkey,
                      uint64_t addr, uint64_t len, unsigned access,
                      struct iovec *riov, struct sv_mr_holds *holds);

/* Access flags an MR takes (ibv_reg_mr(3)) */
#define SV_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
                      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
                      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | \
                      IBV_ACCESS_RELAXED_ORDERING)
/* Device memory of each device, per process (max_dm_size) */
#define SV_MAX_DM    (128 * 1024)

/* MRs (sv_obj.c): registration at iova, a DM MR's link to its DM, the
 * verbs_context ops of MRs and device memory (sv_obj.c, sv_dm.c) */
struct ibv_mr *sv_mr_reg(struct ibv_pd *pd, void *addr, size_t length,
                         uint64_t iova, unsigned access);
void sv_mr_set_dm(struct ibv_mr *mr, uint32_t *dm_refs);
void sv_obj_init_ops(struct verbs_context *v);
void sv_dm_init_ops(struct verbs_context *v);
void *sv_dm_buf(struct ibv_dm *dm, uint64_t *length);

struct sv_ah {
    struct ibv_ah ah;
    struct ibv_ah_attr attr;
    struct mlx5_wqe_av av;        /* mlx5dv_init_obj(AH), sv_mlx5_obj.c */
};

struct sv_comp_channel {
    struct ibv_comp_channel ch;
    uint32_t ch_id;
};

struct sv_qp;
struct sv_cq;
struct sv_srq;

struct sv_obj_hooks {
    void (*qp_detach)(struct sv_qp *qp);    /* ibv_destroy_qp */
    void (*qp_reset)(struct sv_qp *qp);     /* ibv_modify_qp to RESET */
    void (*cq_detach)(struct sv_cq *cq);    /* ibv_destroy_cq */
    void (*srq_detach)(struct sv_srq *srq); /* ibv_destroy_srq */
};

struct sv_cq {
    struct ibv_cq_ex cq;          /* begins with struct ibv_cq */
    uint32_t index;
    struct sv_shm_cq *shm;
    struct sv_cq_hdr *ring;
    struct sv_cq_slot *slots;
    pthread_mutex_t lock;
    struct sv_qp **qps;           /* local QPs using this CQ */
    int nqps, qps_cap;
    uint32_t sq_pending;          /* local QPs with unfinished send WQEs */
    struct sv_cqe cur;            /* ibv_cq_ex current entry */
    uint64_t cur_ts;              /* its completion time */
    struct sv_cq *next, *prev;    /* sv_g.cq_list */
    /* events handed to the user, under cq.cq.mutex: ibv_destroy_cq waits
     * until as many were acknowledged (ibv_ack_cq_events,
     * ibv_ack_async_event), as libibverbs does with the kernel's counts */
    uint32_t comp_events_reported;
    uint32_t async_events_reported;
    struct ibv_pd *parent_domain; /* IBV_CQ_INIT_ATTR_MASK_PD, referenced */
    uint32_t xrc_srqs;            /* XRC SRQs using it: destroy EBUSY */
    uint32_t mlx5_cqe_size;       /* mlx5dv_create_cq's CQE size, 0: 64 */
    struct sv_mlx5_cq *mlx5;      /* its mlx5 front (sv_mlx5_front.h) */
};

struct sv_srq {
    struct ibv_srq srq;
    uint32_t index;
    struct sv_shm_srq *shm;
    struct sv_rq_hdr *ring;
    pthread_mutex_t lock;
    uint32_t events_reported;     /* under srq.mutex, see struct sv_cq */
    uint32_t max_wr;              /* granted: the ring's size, 0 for an
                                     SRQ created with max_wr 0 */
    struct sv_xrcd *xrcd;         /* XRC SRQ: the handle it was made with */
    struct sv_cq   *xrc_cq;       /* XRC SRQ: its CQ */
    struct sv_mlx5_srq *mlx5;     /* its mlx5 front (sv_mlx5_front.h) */
};

/* Send WQE, process-local (the requester is the poster) */
enum sv_swqe_state {
    SV_SWQE_POSTED = 0,           /* not yet executed */
    SV_SWQE_WAIT,                 /* RNR or retry timer running */
    SV_SWQE_DONE,                 /* executed, not yet completed: ahead
                                     of the head (UD reorder, a read
                                     overtaken), or its answer still on
                                     the wire (deadline_ns, sv_wire.c) */
};

struct sv_swqe {
    uint64_t wr_id;
    uint32_t opcode;              /* enum ibv_wr_opcode */
    uint32_t send_flags;
    uint32_t imm_data;
    uint32_t num_sge;
    uint32_t rkey;
    uint32_t state;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    uint32_t ud_qpn, ud_qkey;     /* DCI: the DCT number in ud_qpn */
    uint64_t dc_key;              /* DCI: the target's access key */
    uint16_t ud_dlid;
    uint8_t  ud_port;
    uint8_t  ud_has_grh;
    uint32_t length;              /* total bytes */
    uint32_t rnr_left;
    uint32_t retry_left;
    uint32_t rnr_timer;           /* responder's, from its RNR NAK */
    uint32_t held;                /* read held once for a later WQE to
                                     overtake (SOFTVERBS_RC_READ_REORDER) */
    uint64_t deadline_ns;         /* WAIT: the timer; DONE: when the
                                     answer is back (0: it is) */
    uint64_t due_ns;              /* not executed before (wire delay); 0:
                                     at once */
    union ibv_gid ud_dgid;
    /* BIND_MW: the window's key when posted, the MR's lkey (0: unbind),
     * the range (remote_addr, bind_len) and access; rkey is the new key.
     * LOCAL_INV, SEND_WITH_INV: imm_data holds the key to invalidate */
    uint32_t mw_rkey;
    uint32_t mr_lkey;
    uint64_t bind_len;
    uint32_t bind_access;
    uint8_t  ud_sgid_index;       /* UD, DCI: the AV's source GID */
    uint8_t  wire;                /* leaves its port: the far end's
                                     device slot + 1, 0: it does not
                                     (sv_wire_stamp) */
    uint8_t  done_status;         /* DONE: its enum ibv_wc_status */
    uint8_t  pad_mw;
    uint32_t xrc_srqn;            /* XRC_SEND: the remote SRQ (XRCETH) */
    struct ibv_sge sge[];         /* then inline data */
};

struct sv_qp {
    struct ibv_qp_ex qpx;         /* begins with struct ibv_qp */
    struct mlx5dv_qp_ex dv;       /* DCI: mlx5dv_qp_ex_from_ibv_qp_ex() */
    uint32_t index;
    uint8_t  sv_type;             /* registry type: ibv_qp_type or SV_QPT_ */
    struct sv_shm_qp *shm;
    struct sv_cq *scq, *rcq;
    struct sv_srq *srq;
    struct sv_rq_hdr *rq;
    pthread_mutex_t lock;
    struct ibv_qp_cap cap;
    int is_ex;
    uint64_t send_ops_flags;
    /* send queue (from the parent domain's allocator when sq_custom) */
    char    *sq;
    int      sq_custom;
    uint32_t sq_size, sq_stride, sq_sge; /* sq_sge: SGEs a slot holds */
    uint32_t sq_head, sq_tail;    /* head: oldest unfinished */
    uint32_t sq_retired;          /* WQEs before it had their CQE polled */
    int      sq_pending;          /* counted in scq->sq_pending */
    /* attributes as last modified, but not the state: attr.qp_state and
     * attr.cur_qp_state are not kept (ibv_query_qp reads shm->state) */
    struct ibv_qp_attr attr;
    int      has_held_ud;         /* UD reordering: one held packet */
    uint64_t peer_probe_ns;       /* last liveness probe of a peer */
    uint32_t events_reported;     /* under qpx.qp_base.mutex, see sv_cq */
    /* ibv_wr_* API state */
    struct ibv_send_wr *wr_list;
    int      wr_count, wr_cap;
    int      wr_err;
    /* DCI: the target of the last WQE executed (switch counting) */
    uint32_t dc_last_dctn;
    uint16_t dc_last_dlid;
    struct sv_xrcd *xrcd;         /* XRC_RECV: its handle's domain */
    struct sv_mlx5_qp *mlx5;      /* its mlx5 front (sv_mlx5_front.h) */
};

/* The smallest power of two >= v (1 for 0): the rings' sizes */
static inline uint32_t sv_pow2_roundup(uint32_t v)
{
    uint32_t p = 1;

    while (p < v) {
        p <<= 1;
    }
    return p;
}

static inline struct sv_context *sv_ctx(struct ibv_context *c)
{
    return sv_container_of(c, struct sv_context, vctx.context);
}
static inline struct sv_qp *sv_qp(struct ibv_qp *q)
{
    return sv_container_of(q, struct sv_qp, qpx.qp_base);
}
/* A reliable requester: RC, or a DC initiator (acknowledged, retried, RDMA
 * read and atomics; mlx5dv_create_qp(3): "DCI ... reliable") */
static inline int sv_qp_reliable(uint8_t sv_type)
{
    /* an XRC initiator is RC whose requests name an SRQ (Annex A14) */
    return (sv_type == IBV_QPT_RC) || (sv_type == SV_QPT_DCI) ||
           (sv_type == IBV_QPT_XRC_SEND);
}
static inline struct sv_cq *sv_cq(struct ibv_cq *c)
{
    return (struct sv_cq *)c;
}
static inline struct sv_srq *sv_srq(struct ibv_srq *s)
{
    return (struct sv_srq *)s;
}
static inline struct sv_swqe *sv_sq_wqe(struct sv_qp *qp, uint32_t i)
{
    return (struct sv_swqe *)(qp->sq + (size_t)(i & (qp->sq_size - 1)) *
                              qp->sq_stride);
}
static inline void *sv_swqe_inline(struct sv_qp *qp, struct sv_swqe *w)
{
    return &w->sge[qp->sq_sge];
}
static inline struct sv_rwqe *sv_rq_wqe(struct sv_rq_hdr *rq, uint64_t i)
{
    return (struct sv_rwqe *)((char *)(rq + 1) +
                              (size_t)(i & (rq->size - 1)) * rq->stride);
}

/* Environment values (sv_env.c): an unsigned value in [min, max] (above
 * max: max when clamp), def when unset; a malformed value is named on
 * stderr and def used */
uint64_t sv_env_uint(const char *name, uint64_t min, uint64_t max,
                     uint64_t def, int clamp);
void sv_env_bad(const char *name, const char *value, const char *want,
                const char *used);
/* the SOFTVERBS_* settings into sv_g; returns the arena size in bytes */
uint64_t sv_env_init(void);
/* sv_wire.c: SOFTVERBS_WIRE_DELAY / _LOSS for a posted WQE */
void sv_wire_stamp(const struct sv_qp *qp, struct sv_swqe *w);
uint64_t sv_wire_delay_ns(const struct sv_qp *qp, const struct sv_swqe *w);
double sv_wire_loss(const struct sv_qp *qp, const struct sv_swqe *w);
void sv_wire_wait(uint64_t due_ns);
int sv_wire_take_due(uint64_t now);

/* time: CLOCK_MONOTONIC in ns, also the device clock of completion
 * timestamps (1 GHz, hca_core_clock in kHz; 63-bit mask as mlx5's) */
uint64_t sv_now_ns(void);
uint64_t sv_now_coarse_ns(void);
#define SV_CLOCK_KHZ 1000000ull
#define SV_TS_MASK   0x7fffffffffffffffull

/* The device table (sv_devices.c): the device of a LID, whether a device
 * is one of this host's list; the directory of the sysfs tree */
struct sv_device *sv_device_by_lid(uint16_t lid);
int sv_device_is_listed(const struct sv_device *dev);
const char *sv_sysfs_env(char *buf, size_t len);
void sv_sysfs_root(char *buf, size_t len, int ndevs, int nports);

/* LID of a port: port p (1-based) of device i has i * num_ports + p */
static inline uint16_t sv_port_lid(int index, uint8_t port)
{
    return (uint16_t)(index * sv_g.num_ports + port);
}

/* Port a (unicast) LID belongs to */
static inline uint8_t sv_lid_port(uint16_t lid)
{
    return (uint8_t)((lid - 1) % sv_g.num_ports + 1);
}

static inline int sv_port_valid(uint8_t port)
{
    return (port >= 1) && (port <= sv_g.num_ports);
}

/* A slot's node GUID, from its number: known for every host's slot, so
 * that other hosts' GIDs are too */
static inline uint64_t sv_device_guid(int index)
{
    return 0x0002c90300a00000ull + index + 1;
}

/* Apply SOFTVERBS_CAP_POLICY to a requested capability: fail (the
 * default, EINVAL as mlx5) or clamp (lowered to the limit, written back) */
static inline int sv_cap_check(uint32_t *val, uint32_t max)
{
    if (*val <= max) {
        return 0;
    }
    if (sv_g.cap_fail) {
        return EINVAL;
    }
    *val = max;
    return 0;
}

/* a port's GID (sv_gid.c), an AH's attributes (sv_obj.c), a device's
 * attributes (sv_dev.c) */
void sv_device_gid(int index, uint8_t port, union ibv_gid *gid);
int sv_ah_attr_valid(const struct ibv_ah_attr *attr, uint8_t port,
                     int no_dlid_ok);
void sv_device_attr(struct ibv_device_attr *attr, struct sv_device *dev);

/* CQ rings (sv_cq_ring.c): max_cqe, allocation under the registry lock.
 * A ring being resized has this bit in its tail: producers wait for the
 * ring that replaces it */
#define SV_CQ_TAIL_CLOSED (1ull << 63)
uint32_t sv_cq_max_cqe(void);
uint64_t sv_cq_ring_alloc(uint32_t cqe, uint64_t *len);

/* CQ (sv_cq.c), whether a CQE waits at the consumer index (sv_cq_ring.c),
 * CQE production and arming (sv_cq_push.c), polling and completion
 * channels of the owner (sv_cq_poll.c): sv_cq_progress_all runs every
 * local CQ's requesters (ibv_get_cq_event), sv_cq_init_poll_ex sets the
 * ibv_cq_ex functions */
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *ctx,
                                  struct ibv_cq_init_attr_ex *attr);
void sv_cq_add_qp(struct sv_cq *cq, struct sv_qp *qp);
void sv_cq_del_qp(struct sv_cq *cq, struct sv_qp *qp);
int  sv_cq_push(uint32_t cq_index, const struct sv_cqe *cqe,
                const struct sv_cqe_inl *inl, int solicited);
int  sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int  sv_cq_holds_cqe(struct sv_cq *cq);
void sv_cq_event(struct sv_cq *cq);
int  sv_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
void sv_cq_clean(struct sv_cq *cq, struct sv_qp *qp);
void sv_cq_progress_all(void);
void sv_cq_init_poll_ex(struct sv_cq *cq, uint64_t wc_flags);

/* RQ rings */
int  sv_rq_post(struct sv_rq_hdr *rq, struct ibv_recv_wr *wr,
                struct ibv_recv_wr **bad);
int  sv_rq_take(struct sv_rq_hdr *rq, struct sv_rwqe *out);
void sv_rq_flush(struct sv_rq_hdr *rq, uint32_t cq_index, uint32_t qpn);
uint64_t sv_rq_alloc(uint32_t *wr, uint32_t *sge, uint64_t *len_out);
uint32_t sv_rq_count(struct sv_rq_hdr *rq);
int  sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                      struct ibv_recv_wr **bad);
int  sv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

#include "sv_qp_state.h"   /* the QP state (needs struct sv_shm_qp); QP: */

/* posting and the ibv_wr_* functions (sv_post.c) */
int  sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                  struct ibv_send_wr **bad);
int  sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                  struct ibv_recv_wr **bad);
void sv_qp_init_wr_ops(struct sv_qp *qp);
/* flush the QP's own receive queue (sv_qp_state.c) */
void sv_qp_flush_rq(struct sv_qp *qp);
/* ibv_create_qp_ex of every type but DC (sv_qp.c) */
struct ibv_qp *sv_create_qp_ex(struct ibv_context *ctx,
                               struct ibv_qp_init_attr_ex *attr);
/* the comp_mask attributes, the SRQ of a new QP: 0 or the errno; the send
 * queue's WQE blocks; a QP of registry type sv_type, attributes checked by
 * the caller (sv_qp_create.c) */
int sv_qp_init_attr_check(const struct ibv_qp_init_attr_ex *attr);
int sv_qp_srq_check(const struct ibv_qp_init_attr_ex *attr);
uint32_t sv_qp_mlx5_sq_blocks(const struct ibv_qp_cap *cap, uint8_t type);
struct ibv_qp *sv_qp_create(struct ibv_context *ctx,
                            struct ibv_qp_init_attr_ex *attr, uint8_t sv_type);
/* DC address of a WR built by the ibv_wr_* API (mlx5dv_wr_set_dc_addr) */
struct sv_dc_addr {
    struct ibv_ah *ah;            /* NULL: not set */
    uint32_t dctn;
    uint64_t key;
};
int  sv_post_send_wqe(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
                      const struct sv_dc_addr *dc);
/* a QP's mlx5dv_qp_ex functions (sv_post.c) */
void sv_qp_init_dv_ops(struct sv_qp *qp);
/* ibv_modify_qp of a DCI or DCT: 0 or EINVAL (sv_dc.c) */
int  sv_dc_modify_check(struct sv_qp *qp, enum ibv_qp_state cur,
                        enum ibv_qp_state next, int mask);
/* the DC address of the WR being built (sv_post.c) */
struct sv_dc_addr *sv_wr_cur_dc(struct sv_qp *qp);

/* event sockets (sv_event.c); ports: link layers, GID tables, state
 * (sv_gid.c, sv_port.c) */
#include "sv_gid.h"

#endif
