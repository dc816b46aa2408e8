/*
 * softverbs' host-wide shared registry: its limits and layout (one file in
 * /dev/shm, mapped by every process at the same layout), the process-global
 * state that points at it, and the registry's locks, allocator and
 * lookups. Included by sv.h; the process-local objects are sv.h's.
 */
#ifndef SV_REGISTRY_H
#define SV_REGISTRY_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#include "sv_log.h"


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
/* What a reset or a destroy made of a CQE of its QP (sv_cq_clean) */
enum sv_cqe_clean {
    SV_CQE_LIVE    = 0,           /* as made: returned if its QP's life is */
    SV_CQE_DROPPED = 1,           /* not returned */
    SV_CQE_FLUSHED = 2            /* returned as a flush, whatever became of
                                     its QP (its buffer is not lost) */
};

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
    uint8_t  cleaned;             /* enum sv_cqe_clean: its QP went to
                                     RESET or away */
    uint8_t  life;                /* its QP's life (sv_shm_qp.life) read
                                     before the state that let it be made */
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
    uint8_t  av_is_global, av_sgid_index;
    uint8_t  life;                /* lives so far: one more at each RESET,
                                     stored after the state (sv_qp_modify.c);
                                     a CQE of another life is stale */
    uint8_t  av_pad;
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
    uint64_t   resp_delay_ns;   /* SOFTVERBS_RESP_DELAY: before a
                                   receive's CQE (sv_resp.c) */
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

#endif
