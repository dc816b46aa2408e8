/*
 * softverbs internal definitions: the host-wide shared registry and the
 * process-local verbs objects.
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

#define SV_MAX_DEVS       8       /* registry tables; SOFTVERBS_MAX_* below */
#define SV_QP_TBL         65536
#define SV_CQ_TBL         16384
#define SV_MR_TBL         65536
#define SV_MW_TBL         4096    /* memory windows (rxe's RXE_MAX_MW) */
#define SV_SRQ_TBL        4096
#define SV_PROC_TBL       1024
#define SV_MCAST_TBL      256
#define SV_MCAST_QPS      64
#define SV_MAX_SGE        30
#define SV_MR_HOLDS       32      /* per process (sv_obj.c) */
/* largest send WQE: inline room (sv_qp_create.c) */
#define SV_MAX_SQ_DESC    768
#define SV_MAX_PORTS      4
/* GID table entries of a RoCE port (sv_gid.c): the default pair and
 * one pair per address of its netdev */
#define SV_GID_TBL_LEN    16
#define SV_MAX_WR         32768
#define SV_MAX_CQE        (4 * 1024 * 1024 - 1)
#define SV_MAX_RD_ATOM    16
#define SV_GRH_LEN        40
#define SV_MTU            4096
#define SV_MAX_MSG        0x80000000u
#define SV_MCAST_LID_BASE 0xc000
#define SV_QKEY_PRIV      0x80000000u
#define SV_LAYOUT_VERSION 21     /* bump when a shared structure changes */
#define SV_QUARANTINE_MAX 4096
/* The sizes of the shared structures are part of the magic too, so that a
 * registry written by another layout is replaced even if nobody bumped the
 * version */
#define SV_MAGIC          (0x7376657262730000ull ^ \
                           ((uint64_t)sizeof(struct sv_shm_hdr) << 16) ^ \
                           ((uint64_t)sizeof(struct sv_cq_slot) << 8) ^ \
                           ((uint64_t)sizeof(struct sv_shm_qp) << 24) ^ \
                           ((uint64_t)sizeof(struct sv_shm_cq) << 32) ^ \
                           ((uint64_t)sizeof(struct sv_shm_srq) << 40) ^ \
                           ((uint64_t)sizeof(struct sv_shm_mr) << 20) ^ \
                           ((uint64_t)sizeof(struct sv_shm_mw) << 48) ^ \
                           ((uint64_t)sizeof(struct sv_rwqe) << 12) ^ \
                           SV_LAYOUT_VERSION)

#include "sv_log.h"

/* ---------------------------------------------------------------------
 * Shared registry (one file in /dev/shm, mapped by every process)
 * ------------------------------------------------------------------- */

/* QP types of the registry (sv_shm_qp.type): the ibv_qp_type values, and
 * the mlx5 DC initiator and target, which applications see as
 * IBV_QPT_DRIVER QPs (mlx5dv_create_qp(3)) */
enum {
    SV_QPT_DCI = 0xd0,
    SV_QPT_DCT = 0xd1,
};

enum sv_qp_flag {
    SV_QPF_ERR_BY_PEER = 1 << 0,  /* moved to ERR by a remote requester */
};

/* Owner of objects: a process slot, liveness checked by pid+start time */
struct sv_shm_proc {
    int32_t  pid;
    uint32_t in_use;
    uint64_t start_time;
    uint32_t mr_hold[SV_MR_HOLDS]; /* keys its transfers are moving */
};

/* A receive queue ring (QP RQ or SRQ): single producer (the owner),
 * any number of consumers (requesters of any process) */
struct sv_rq_hdr {
    uint64_t head;                /* consumers, advanced by CAS */
    uint64_t tail_seen;           /* a tail a consumer read: <= tail */
    uint8_t  pad0[48];
    uint64_t tail;                /* producer, store-release */
    uint64_t head_seen;           /* the head the producer read: <= head */
    uint8_t  pad1[48];
    uint32_t size;                /* power of two */
    uint32_t max_sge;
    uint32_t stride;
    uint32_t cap;                 /* WQEs it holds: size, an SRQ's size - 1 */
};

struct sv_rwqe {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t pos;                 /* sv_rq_take's copy: the ring position
                                     it was taken from (low 32 bits) */
    struct ibv_sge sge[];
};

/* One completion in a CQ ring */
struct sv_cqe {
    uint64_t seq;                 /* slot index + 1 when valid */
    uint64_t wr_id;
    uint32_t status;
    uint32_t opcode;
    uint32_t byte_len;
    uint32_t imm_data;            /* network order as in ibv_wc */
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags;
    uint16_t slid;
    uint8_t  sl;
    uint8_t  dlid_path_bits;
    uint32_t vendor_err;
    uint16_t pkey_index;
    uint16_t inl_len;             /* payload carried in the slot (SEND) */
    uint8_t  inl_nsge;
    uint8_t  is_send;             /* send CQE: src_qp holds the SQ index */
    uint8_t  cleaned;             /* its QP went to RESET: not returned */
    uint8_t  pad;
    uint32_t rq_pos;              /* receive: the WQE's ring position
                                     (sv_rwqe.pos), for sv_cq_clean */
};

/* Small SEND payloads travel in the CQ slot: the requester saves a
 * process_vm_writev, the responder's poll_cq scatters the bytes into the
 * receive WQE's buffers (already checked) before returning the WC */
#define SV_CQE_INL      160
#define SV_CQE_INL_SGE  2

struct sv_cqe_inl {
    uint64_t va[SV_CQE_INL_SGE];  /* responder's addresses */
    uint32_t len[SV_CQE_INL_SGE];
    uint64_t ts;                  /* completion time (sv_now_ns), CQs
                                     created with timestamps only */
    uint8_t  data[SV_CQE_INL];
};

struct sv_cq_slot {
    struct sv_cqe     h;
    struct sv_cqe_inl inl;
};
_Static_assert(sizeof(struct sv_cqe) == 64, "CQE header is a cache line");

/* CQ ring: multi producer (any process), single consumer (the owner) */
struct sv_cq_hdr {
    uint64_t head;                /* consumer */
    uint8_t  pad0[56];
    uint64_t tail;                /* producers claim slots by CAS */
    uint64_t head_seen;           /* a head a producer read: <= head */
    uint8_t  pad1[48];
    uint32_t size;                /* power of two >= cqe + 1 */
    uint32_t cqe;                 /* capacity granted to the user */
    uint8_t  pad2[56];            /* the slots that follow start on a
                                     cache line: a CQE header is one line */
};
_Static_assert(sizeof(struct sv_cq_hdr) % 64 == 0,
               "CQ slots start on a cache line");

struct sv_shm_cq {
    uint32_t in_use;
    uint32_t proc;
    int32_t  pid;
    uint32_t ctx_id;              /* owner context: async events */
    uint64_t ring_off;
    uint64_t ring_len;
    uint64_t cookie;              /* owner's struct sv_cq pointer */
    uint32_t ch_id;               /* completion channel (0: none) */
    uint32_t armed;               /* 0, 1 = next, 2 = solicited */
    uint32_t overrun;
    uint32_t flush_req;           /* a QP of this CQ needs flushing */
    uint32_t ts;                  /* producers stamp each CQE (inl.ts) */
};

struct sv_shm_srq {
    uint32_t in_use;
    uint32_t proc;
    int32_t  pid;
    uint32_t ctx_id;
    uint32_t pd_id;
    uint32_t limit;               /* armed limit, 0: disarmed */
    uint64_t ring_off;
    uint64_t ring_len;
    uint64_t cookie;
    uint32_t rcq;                 /* XRC SRQ: its CQ (basic: 0, QP's CQ) */
    uint32_t err;
    uint32_t xrcd;                /* XRC SRQ: its domain's slot + 1 */
    uint32_t pad;
};

struct sv_shm_qp {
    uint32_t in_use;
    uint32_t qpn;
    uint32_t proc;
    int32_t  pid;
    uint32_t ctx_id;
    uint32_t pd_id;
    uint8_t  type;                /* enum ibv_qp_type */
    uint8_t  dev;
    uint8_t  port;
    uint8_t  min_rnr_timer;
    uint32_t state;               /* enum ibv_qp_state: the QP's only
                                     state (sv_qp_state, sv_qp_set_state) */
    uint32_t flags;
    uint32_t dest_qpn;
    uint32_t qkey;
    uint32_t access;              /* qp_access_flags */
    uint32_t scq;                 /* CQ indices + 1 */
    uint32_t rcq;
    uint32_t srq;                 /* SRQ index + 1, 0: own RQ */
    uint32_t mcast_count;
    uint32_t sq_sig_all;
    uint64_t rq_off;              /* own RQ ring (0: none) */
    uint64_t rq_len;
    uint64_t cookie;
    uint64_t dc_key;              /* DCT: the access key requests must carry */
    uint64_t dc_switches;         /* DCI: WQEs sent to another target than
                                     the WQE before (written by the owner) */
    uint64_t dc_key_violations;   /* DCT: requests dropped for a wrong key
                                     (any requester, atomic add) */
    /* RC, UC: the path's GRH (IBV_QP_AV), for RoCE's checks (sv_gid_route) */
    uint8_t  av_is_global, av_sgid_index, av_pad[2];
    uint8_t  av_dgid[16];
    uint32_t av_pad2;
    /* XRC_RECV: domain slot + 1, handles holding it (lock; sv_xrc.c) */
    uint32_t xrcd;
    uint32_t xrc_refs;
};

struct sv_shm_mr {
    uint32_t in_use;
    uint32_t key;                 /* lkey == rkey */
    uint32_t proc;
    int32_t  pid;
    uint32_t pd_id;
    uint32_t access;
    uint64_t addr;                /* iova seen by remote peers */
    uint64_t len;
    uint64_t va;                  /* owner's virtual address */
    uint32_t num_mw;              /* windows bound to it (registry lock):
                                     no deregistration while any (sv_mw.c) */
    uint32_t gen;                 /* sequence lock of ibv_rereg_mr: odd
                                     while it changes the fields above;
                                     a transfer checks them within one
                                     even value (sv_obj.c) */
};

#include "sv_mw.h"    /* struct sv_shm_mw */
#include "sv_xrc.h"   /* struct sv_shm_xrcd */
#include "sv_event.h" /* struct sv_ev_spill */

struct sv_shm_mcast {
    uint32_t in_use;
    uint16_t lid;
    uint16_t nqp;
    union ibv_gid gid;
    uint32_t qpn[SV_MCAST_QPS];
};

/* A RoCE port's addresses as GIDs (IPv4-mapped first), as the processes
 * of the port's host read them: the GID table entries 2.. of the port for
 * every process of the registry, whichever host it is on (sv_gid.c).
 * Written under the registry's lock, read without: seq is odd while an
 * update is under way */
#define SV_GID_MAX_ADDR ((SV_GID_TBL_LEN - 2) / 2)
struct sv_shm_port_addrs {
    uint32_t      seq;
    uint32_t      naddr;
    union ibv_gid addr[SV_GID_MAX_ADDR];
};

struct sv_shm_hdr {
    uint64_t magic;
    uint64_t total_len;
    uint64_t arena_off;
    uint64_t arena_len;
    uint64_t arena_top;           /* bump pointer, under lock */
    uint64_t free_list[48];       /* by power-of-two size class */
    struct {                      /* freed blocks waiting before they go */
        uint64_t off;             /* to free_list, a FIFO kept outside  */
        uint64_t len;             /* the blocks (a late writer may still */
        uint64_t freed_ns;        /* touch their first bytes) */
    } quarantine[SV_QUARANTINE_MAX];
    uint32_t quarantine_first;
    uint32_t quarantine_count;
    pthread_mutex_t lock;         /* robust, process-shared */
    pthread_mutex_t atomic_lock_unused;
    int32_t  atomic_owner;        /* spinlock for remote atomics: pid */
    uint32_t next_pd_id;
    uint32_t next_ctx_id;
    uint32_t next_ch_id;
    uint32_t qp_cursor;
    uint32_t mr_cursor;
    uint32_t num_qp, num_cq, num_mr, num_srq;
    uint32_t num_mw, mw_cursor;
    uint32_t port_down[SV_MAX_DEVS]; /* bit p-1: port p is down (sv_port.c) */
    uint32_t devs_present;        /* bit i: slot i is some host's
                                     (sv_devices.c) */
    struct sv_shm_port_addrs port_addrs[SV_MAX_DEVS][SV_MAX_PORTS];
    struct sv_ev_spill ev_spill;  /* events a full socket refused */
    uint8_t  qp_gen[SV_QP_TBL];
    uint8_t  mr_gen[SV_MR_TBL];
    uint8_t  mw_gen[SV_MW_TBL];
    struct sv_shm_proc  procs[SV_PROC_TBL];
    struct sv_shm_qp    qps[SV_QP_TBL];
    struct sv_shm_cq    cqs[SV_CQ_TBL];
    struct sv_shm_srq   srqs[SV_SRQ_TBL];
    struct sv_shm_mr    mrs[SV_MR_TBL];
    struct sv_shm_mw    mws[SV_MW_TBL];
    struct sv_shm_mcast mcast[SV_MCAST_TBL];
    struct sv_shm_xrcd  xrcds[SV_XRCD_TBL];
};

/*
 * The wire between ports (sv_wire.c): what a request that leaves its port
 * for another one meets on the way. A rule names a pair of device slots
 * (either direction); the default covers every other pair of ports.
 */
#define SV_WIRE_RULES 16
struct sv_wire_rule {
    uint8_t  a, b;                /* device slots, a != b */
    double   value;               /* ns of delay, or a probability */
};

struct sv_wire {
    int      on;                  /* any delay or loss set */
    double   delay_ns, loss;      /* the defaults */
    int      ndelay, nloss;
    struct sv_wire_rule delay[SV_WIRE_RULES];
    struct sv_wire_rule loss_rule[SV_WIRE_RULES];
};

/* Process-global state */
struct sv_global {
    struct sv_shm_hdr *shm;
    char      *base;              /* == (char *)shm */
    uint32_t   proc;              /* my slot */
    int32_t    pid;
    int        num_devs;          /* this host's: slots first_dev .. */
    int        first_dev;
    int        num_ports;         /* of every device, 1..SV_MAX_PORTS */
    int        cap_fail;          /* SOFTVERBS_CAP_POLICY: not clamp */
    uint32_t   max_qp, max_cq, max_mr, max_srq;
    int        dc;                /* SOFTVERBS_DC: DC QPs can be created */
    double     ud_drop, ud_reorder;
    double     rc_read_reorder; /* a write/send passes an earlier read */
    double     rc_drop;         /* a connected QP's request is lost */
    struct sv_wire wire;          /* SOFTVERBS_WIRE_DELAY, _LOSS */
    uint64_t   wire_due;          /* earliest due_ns a send queue's head
                                     waits for, 0: none (sv_wire_wait) */
    int        mlx5;              /* SOFTVERBS_MLX5: the mlx5 personality */
    /* what the mlx5 personality adds to the life of the objects it made a
     * front for (sv_mlx5_obj.c sets it before its first front): the core
     * calls it for an object whose mlx5 pointer is set, and knows nothing
     * else of the personality */
    const struct sv_obj_hooks *hooks;
    int        debug;
    char       shm_path[256];
    char       sock_dir[80];      /* SOFTVERBS_SOCKET_DIR, "": abstract */
    uint32_t   shm_tag;           /* hash of the path: socket names */
    /* local CQs, for progress while blocked in ibv_get_cq_event */
    pthread_mutex_t cq_list_lock;
    struct sv_cq *cq_list;
    uint32_t   sq_pending_qps;    /* local QPs with unfinished send WQEs */
};

extern struct sv_global sv_g;

/* the registry file and this process's slot (sv_shm.c) */
int  sv_shm_init(void);
/* hook run once by the first sv_shm_init() that attaches the registry; set
 * from a constructor (the devices, sv_devices.c) */
void sv_shm_set_init_hook(void (*hook)(void));
/* the registry's locks (sv_core.c) */
void sv_shm_lock(void);
void sv_shm_mutex_lock(pthread_mutex_t *m);
void sv_shm_unlock(void);
void sv_atomic_lock(void);
void sv_atomic_unlock(void);
/* the arena allocator (sv_shm_alloc.c) */
uint64_t sv_shm_alloc(uint64_t len);      /* under lock; 0 on failure */
void sv_shm_free(uint64_t off, uint64_t len);
/* liveness of process slots, reclaim of dead processes (sv_reap.c) */
void sv_shm_reap(void);
void sv_shm_recount(void);                   /* under lock */
void sv_shm_xrcd_free(uint32_t index);       /* under lock */
int  sv_proc_alive(uint32_t proc, int32_t pid);
/* start time of a process (/proc/<pid>/stat), 0 when unknown */
uint64_t sv_proc_start_time(int32_t pid);
static inline void *sv_shm_ptr(uint64_t off) { return sv_g.base + off; }

static inline struct sv_shm_qp *sv_shm_qp_lookup(uint32_t qpn)
{
    struct sv_shm_qp *q = &sv_g.shm->qps[qpn & (SV_QP_TBL - 1)];
    /* acquire: pairs with the release of in_use at creation */
    if (!__atomic_load_n(&q->in_use, __ATOMIC_ACQUIRE) || q->qpn != qpn)
        return NULL;
    return q;
}

static inline struct sv_shm_mr *sv_shm_mr_lookup(uint32_t key)
{
    struct sv_shm_mr *m = &sv_g.shm->mrs[(key >> 8) & (SV_MR_TBL - 1)];
    /* acquire: pairs with the release of in_use at registration */
    if (!__atomic_load_n(&m->in_use, __ATOMIC_ACQUIRE) || m->key != key)
        return NULL;
    return m;
}

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
    SV_SWQE_DONE,                 /* executed out of order (UD reorder) */
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
    uint64_t deadline_ns;
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
    uint8_t  pad_mw[2];
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
