/*
 * The engine of the mlx5 personality (sv_mlx5_front.h): one thread per
 * process that plays the HCA behind the fronts. A round, under
 * sv_mlx5.lock:
 *   1. SRQs: receive WQEs the program's counter covers are posted to the
 *      internal SRQ, following next_wqe_index from head 0 (the linked
 *      list of mlx5dv_init_obj(3)'s SRQ), wr_id = the WQE's index;
 *   2. send queues: WQEs up to the doorbell record's producer counter are
 *      parsed (control, remote address, atomic, inline and data segments;
 *      a WQE may wrap from the end of the queue to its start) and posted
 *      to the internal QP, wr_id = the WQE index of the control segment;
 *      inline bytes go through a registered bounce area (one slot per
 *      basic block, reused only when the program reuses the block, i.e.
 *      after the WQE's completion);
 *   3. CQs: internal completions are written as mlx5 CQEs (sv_mlx5_cq.c).
 * UD and DCI WQEs carry an address vector, which becomes an address handle
 * kept per QP; a UD QP's receive queue is mirrored in order (2b).
 * The requester runs in the poster's thread (sv_req.c), so the engine's
 * posts move the data, and its polls of the internal CQs drive RNR and ACK
 * retries.
 *
 * CPU (two cores shared with the programs it serves, and with other
 * processes' engines): a doorbell is a plain store that wakes nobody, so
 * the engine polls, and bounds what polling costs in both directions.
 * Idle, it naps for a quarter of the time since it last found work,
 * between 20 us and 1 ms: a post is seen at most a quarter of the idle
 * time late, and an engine idle for T wakes about log(T) times, not T/20us
 * (eight engines of an MPI job napping 20 us each starved the host's other
 * processes). Busy, it rounds without a nap for at most 200 us, then naps
 * 20 us: at SCHED_FIFO (sv_mlx5_engine_prio) a thread that never sleeps
 * holds its core against every normal process until the kernel's
 * real-time throttle.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/prctl.h>

#include "sv.h"
#include "sv_xfer.h"
#include "sv_log.h"
#include "sv_mlx5_front.h"
#include "sv_qp_state.h"

#define SV_MLX5_BUSY_NS     200000  /* rounds in a row with work, at most */
#define SV_MLX5_SLEEP_MIN   20000   /* ns: the shortest nap */
#define SV_MLX5_SLEEP_MAX   1000000 /* ns: the longest nap */
#define SV_MLX5_SLEEP_SHIFT 2       /* idle nap: a quarter of idle time */

/* The fronts the engine serves: created and destroyed by the object layer
 * above (sv_mlx5_obj.c), followed here, and handed down to the CQ writer
 * (sv_mlx5_cq.c) */
struct sv_mlx5_fronts sv_mlx5 = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* --- send queues -------------------------------------------------------- */

/* A WQE's bytes from block ci on, across the end of the queue */
static void sv_mlx5_wqe_copy(const struct sv_mlx5_qp *f, uint16_t ci,
                             void *dst, size_t len)
{
    size_t qbytes = (size_t)f->wqe_cnt * MLX5_SEND_WQE_BB;
    size_t off    = (size_t)(ci & (f->wqe_cnt - 1)) * MLX5_SEND_WQE_BB;
    size_t first  = (len < qbytes - off) ? len : qbytes - off;

    memcpy(dst, f->sq_buf + off, first);
    memcpy((char *)dst + first, f->sq_buf, len - first);
}

struct sv_mlx5_wr {
    struct ibv_send_wr wr;
    struct ibv_sge     sge[SV_MLX5_MAX_SGE];
};

/* The data segments of a WQE (inline ones through the bounce slot) from
 * byte off to end into w; 0 or EINVAL */
static int sv_mlx5_wqe_data(struct sv_mlx5_qp *f, uint16_t ci,
                            const uint8_t *wqe, size_t off, size_t end,
                            struct sv_mlx5_wr *w)
{
    char *slot = f->bounce + (size_t)(ci & (f->wqe_cnt - 1)) *
                             MLX5_SEND_WQE_BB;
    const struct mlx5_wqe_data_seg *d;
    size_t used = 0;
    uint32_t bc;

    while (off + 16 <= end) {
        memcpy(&bc, wqe + off, sizeof(bc));
        bc = be32toh(bc);
        if (w->wr.num_sge == SV_MLX5_MAX_SGE) {
            return EINVAL;
        }
        if (bc & MLX5_INLINE_SEG) {
            bc &= ~MLX5_INLINE_SEG;
            if (off + 4 + bc > end) {
                return EINVAL;
            }
            memcpy(slot + used, wqe + off + 4, bc);
            w->sge[w->wr.num_sge].addr   = (uintptr_t)(slot + used);
            w->sge[w->wr.num_sge].length = bc;
            w->sge[w->wr.num_sge].lkey   = f->bounce_mr->lkey;
            used += bc;
            off  += (4 + bc + 15) & ~(size_t)15;
        } else {
            d = (const void *)(wqe + off);
            w->sge[w->wr.num_sge].addr   = be64toh(d->addr);
            w->sge[w->wr.num_sge].length = bc;
            w->sge[w->wr.num_sge].lkey   = be32toh(d->lkey);
            off += sizeof(*d);
        }
        if (w->sge[w->wr.num_sge].length != 0) {
            w->wr.num_sge++;
        }
    }
    return 0;
}

/* The address handle of an address vector (its LID, SL, rate, path bits
 * and, with the GRH bit, the GRH fields: mlx5_create_ah's encoding read
 * back), made on first use and kept while the QP lives; NULL when the QP
 * has SV_MLX5_MAX_AH of them or the device refuses the address */
static struct ibv_ah *sv_mlx5_av_ah(struct sv_mlx5_qp *f,
                                    const struct mlx5_wqe_av *av, int ext)
{
    struct ibv_ah_attr a;
    struct sv_mlx5_ah *n;
    uint32_t gfl, i;

    memset(&a, 0, sizeof(a));
    a.dlid          = be16toh(av->rlid);
    a.sl            = av->stat_rate_sl & 0xf;
    a.static_rate   = av->stat_rate_sl >> 4;
    a.src_path_bits = av->fl_mlid & 0x7f;
    a.port_num      = f->qp->attr.port_num ? f->qp->attr.port_num : 1;
    gfl             = ext ? be32toh(av->grh_gid_fl) : 0;
    if (gfl & (1u << 30)) {
        a.is_global          = 1;
        a.grh.sgid_index     = (gfl >> 20) & 0xff;
        a.grh.flow_label     = gfl & 0xfffff;
        a.grh.traffic_class  = av->tclass;
        a.grh.hop_limit      = av->hop_limit;
        memcpy(a.grh.dgid.raw, av->rgid, sizeof(a.grh.dgid.raw));
    }
    for (i = f->nah; i-- > 0;) {
        if (!memcmp(&f->ahs[i].attr, &a, sizeof(a))) {
            return f->ahs[i].ah;
        }
    }
    if (f->nah == f->ah_cap) {
        if (f->ah_cap == SV_MLX5_MAX_AH) {
            sv_error("mlx5: qp 0x%x: more than %u address vectors",
                     f->qp->qpx.qp_base.qp_num, SV_MLX5_MAX_AH);
            return NULL;
        }
        n = realloc(f->ahs, (f->ah_cap ? 2 * f->ah_cap : 16) * sizeof(*n));
        if (n == NULL) {
            return NULL;
        }
        f->ahs    = n;
        f->ah_cap = f->ah_cap ? 2 * f->ah_cap : 16;
    }
    f->ahs[f->nah].ah = ibv_create_ah(f->qp->qpx.qp_base.pd, &a);
    if (f->ahs[f->nah].ah == NULL) {
        return NULL;
    }
    f->ahs[f->nah].attr = a;
    return f->ahs[f->nah++].ah;
}

/* A UD or DCI WQE's datagram segment at *off (48 bytes with the extended
 * AV flag in dqp_dct, else 16): its destination in w or dc */
static int sv_mlx5_wqe_dgram(struct sv_mlx5_qp *f, const uint8_t *wqe,
                             size_t *off, size_t len, struct sv_mlx5_wr *w,
                             struct sv_dc_addr *dc)
{
    const struct mlx5_wqe_av *av = (const void *)(wqe + *off);
    uint32_t dqp;
    int ext;

    if (*off + 16 > len) {
        return EINVAL;
    }
    dqp = be32toh(av->dqp_dct);
    ext = (dqp & MLX5_EXTENDED_UD_AV) != 0;
    if (ext && (*off + sizeof(*av) > len)) {
        return EINVAL;
    }
    *off += ext ? sizeof(*av) : 16;
    if (f->qp->sv_type == SV_QPT_DCI) {
        dc->ah   = sv_mlx5_av_ah(f, av, ext);
        dc->dctn = dqp & 0xffffff;
        dc->key  = be64toh(av->key.dc_key);
        return (dc->ah != NULL) ? 0 : EINVAL;
    }
    w->wr.wr.ud.ah          = sv_mlx5_av_ah(f, av, ext);
    w->wr.wr.ud.remote_qpn  = dqp & 0xffffff;
    w->wr.wr.ud.remote_qkey = be32toh(av->key.qkey.qkey);
    return (w->wr.wr.ud.ah != NULL) ? 0 : EINVAL;
}

/* The WQE at f->sq_ci as an internal WR in w (and a DCI's target in dc):
 * 0, EAGAIN for a NOP (no WR), EINVAL for a WQE the device cannot
 * execute */
static int sv_mlx5_wqe_parse(struct sv_mlx5_qp *f, uint8_t *wqe,
                             unsigned *bbs, struct sv_mlx5_wr *w,
                             struct sv_dc_addr *dc)
{
    const struct mlx5_wqe_ctrl_seg *ctrl = (const void *)wqe;
    const struct mlx5_wqe_raddr_seg *raddr;
    const struct mlx5_wqe_atomic_seg *atomic;
    uint32_t opc = be32toh(ctrl->opmod_idx_opcode);
    size_t len   = (be32toh(ctrl->qpn_ds) & 0x3f) * 16;
    size_t off   = sizeof(*ctrl);

    if (len < sizeof(*ctrl)) {
        len = sizeof(*ctrl);
    }
    *bbs = (unsigned)((len + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB);
    if (len > 64) {
        sv_mlx5_wqe_copy(f, f->sq_ci, wqe, len); /* the rest of it */
    }
    memset(w, 0, sizeof(w->wr));
    w->wr.wr_id   = (opc >> 8) & 0xffff;
    w->wr.sg_list = w->sge;
    w->wr.imm_data = ctrl->imm;
    if (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) {
        w->wr.send_flags |= IBV_SEND_SIGNALED;
    }
    if (ctrl->fm_ce_se & MLX5_WQE_CTRL_SOLICITED) {
        w->wr.send_flags |= IBV_SEND_SOLICITED;
    }
    if (ctrl->fm_ce_se & 0xe0) {
        w->wr.send_flags |= IBV_SEND_FENCE;
    }
    switch (opc & 0xff) {
    case MLX5_OPCODE_NOP:
        return EAGAIN;
    case MLX5_OPCODE_SEND:
        w->wr.opcode = IBV_WR_SEND;
        break;
    case MLX5_OPCODE_SEND_IMM:
        w->wr.opcode = IBV_WR_SEND_WITH_IMM;
        break;
    case MLX5_OPCODE_RDMA_WRITE:
        w->wr.opcode = IBV_WR_RDMA_WRITE;
        break;
    case MLX5_OPCODE_RDMA_WRITE_IMM:
        w->wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        break;
    case MLX5_OPCODE_RDMA_READ:
        w->wr.opcode = IBV_WR_RDMA_READ;
        break;
    case MLX5_OPCODE_ATOMIC_CS:
        w->wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    case MLX5_OPCODE_ATOMIC_FA:
        w->wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        break;
    default:
        sv_error("mlx5: qp 0x%x: WQE opcode 0x%x not supported",
                 f->qp->qpx.qp_base.qp_num, opc & 0xff);
        return EINVAL;
    }
    if (((f->qp->sv_type == IBV_QPT_UD) || (f->qp->sv_type == SV_QPT_DCI)) &&
        (sv_mlx5_wqe_dgram(f, wqe, &off, len, w, dc) != 0)) {
        return EINVAL;
    }
    if ((w->wr.opcode != IBV_WR_SEND) &&
        (w->wr.opcode != IBV_WR_SEND_WITH_IMM)) {
        if (off + sizeof(*raddr) > len) {
            return EINVAL;
        }
        raddr = (const void *)(wqe + off);
        w->wr.wr.rdma.remote_addr = be64toh(raddr->raddr);
        w->wr.wr.rdma.rkey        = be32toh(raddr->rkey);
        off += sizeof(*raddr);
    }
    if ((w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) ||
        (w->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)) {
        if (off + sizeof(*atomic) > len) {
            return EINVAL;
        }
        atomic = (const void *)(wqe + off);
        /* the WQE's operands are big endian; the old value lands in the
         * local buffer in host order (verbs' semantics, what the DV path
         * of UCX's rc_mlx5 reads without a swap) */
        w->wr.wr.atomic.remote_addr = w->wr.wr.rdma.remote_addr;
        w->wr.wr.atomic.rkey        = w->wr.wr.rdma.rkey;
        if (w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
            w->wr.wr.atomic.compare_add = be64toh(atomic->compare);
            w->wr.wr.atomic.swap        = be64toh(atomic->swap_add);
        } else {
            w->wr.wr.atomic.compare_add = be64toh(atomic->swap_add);
        }
        off += sizeof(*atomic);
    }
    return sv_mlx5_wqe_data(f, f->sq_ci, wqe, off, len, w);
}

/* A WQE the device refuses: its error CQE, and the QP goes to the error
 * state, which flushes what follows (a local QP operation error) */
static void sv_mlx5_wqe_fail(struct sv_mlx5_qp *f, uint16_t idx)
{
    struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
    struct sv_qp *qp        = f->qp;

    if (sv_qp_state(qp->shm) == IBV_QPS_RESET) {
        return; /* reset meanwhile: the WQE is gone with its queue */
    }

    if ((qp->scq != NULL) && (qp->scq->mlx5 != NULL)) {
        sv_mlx5_cqe_err(qp->scq->mlx5, MLX5_CQE_REQ_ERR,
                        MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, 0,
                        qp->qpx.qp_base.qp_num, idx);
    }
    ibv_modify_qp(&qp->qpx.qp_base, &attr, IBV_QP_STATE);
}

static int sv_mlx5_sq_consume(struct sv_mlx5_qp *f)
{
    uint8_t wqe[64 + 63 * 16] __attribute__((aligned(16)));
    struct sv_dc_addr dc;
    struct sv_mlx5_wr w;
    enum ibv_qp_state st;
    unsigned bbs;
    uint16_t pi;
    int ret, n = 0;

    /* acquire: the program fences its WQE stores before the record */
    pi = (uint16_t)be32toh(__atomic_load_n(&f->dbrec[MLX5_SND_DBR],
                                           __ATOMIC_ACQUIRE));
    st = sv_qp_state(f->qp->shm);
    /* an HCA executes nothing before RTS; ERR flushes what is posted */
    if ((st == IBV_QPS_RESET) || (st == IBV_QPS_INIT) ||
        (st == IBV_QPS_RTR)) {
        return 0;
    }
    while (!f->nop_wait && (f->sq_ci != pi)) {
        sv_mlx5_wqe_copy(f, f->sq_ci, wqe, 64);
        memset(&dc, 0, sizeof(dc));
        ret = sv_mlx5_wqe_parse(f, wqe, &bbs, &w, &dc);
        if (ret == EAGAIN) {
            if (w.wr.send_flags & IBV_SEND_SIGNALED) {
                f->nop_wait = 1;
                f->nop_idx  = (uint16_t)w.wr.wr_id;
            }
        } else if (ret != 0) {
            sv_mlx5_wqe_fail(f, (uint16_t)w.wr.wr_id);
        } else {
            ret = sv_post_send_wqe(&f->qp->qpx.qp_base, &w.wr,
                                   (f->qp->sv_type == SV_QPT_DCI) ? &dc :
                                                                   NULL);
            if (ret == ENOMEM) {
                break; /* the internal queue is full: next round */
            }
            st = sv_qp_state(f->qp->shm);
            if ((ret != 0) && ((st == IBV_QPS_RESET) || (st == IBV_QPS_INIT) ||
                               (st == IBV_QPS_RTR))) {
                /* the program reset the QP meanwhile (its reset zeroed the
                 * record and this index): nothing to run or to fail */
                break;
            }
            if (ret != 0) {
                sv_error("mlx5: qp 0x%x: WQE %u refused (%d)",
                         f->qp->qpx.qp_base.qp_num,
                         (unsigned)w.wr.wr_id, ret);
                sv_mlx5_wqe_fail(f, (uint16_t)w.wr.wr_id);
            }
        }
        f->sq_ci += bbs;
        n++;
    }
    return n;
}

/* --- receive queues ----------------------------------------------------- */

/*
 * The SRQ's WQEs the program's counter covers, posted to the internal SRQ
 * along their links. A WQE's link is read when the WQE is taken, as the
 * HCA reads it when it fetches the WQE (PRM: the SRQ is a linked list the
 * HCA walks): after that the program may complete the WQE, free it and
 * link another behind it (libmlx5's mlx5_free_srq_wqe), and the link it had
 * when posted is the one that counts. Read later (when the next WQE is
 * taken), a WQE completed and freed meanwhile would lead to the WQE freed
 * behind it, skipping those posted after it.
 */
static int sv_mlx5_srq_mirror(struct sv_mlx5_srq *f)
{
    const struct mlx5_wqe_srq_next_seg *next;
    const struct mlx5_wqe_data_seg *d;
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    uint16_t counter, idx;
    int n = 0;

    /* acquire: the program fences its WQE stores before the counter */
    counter = (uint16_t)be32toh(__atomic_load_n(f->dbrec, __ATOMIC_ACQUIRE));
    while (f->mirrored != counter) {
        idx        = f->next_idx;
        next       = (const void *)(f->buf + (size_t)idx * SV_MLX5_SRQ_STRIDE);
        d          = (const void *)(next + 1);
        sge.addr   = be64toh(d->addr);
        sge.length = be32toh(d->byte_count);
        sge.lkey   = be32toh(d->lkey);
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = idx;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_srq_recv(&f->srq->srq, &wr, &bad) != 0) {
            break; /* the internal ring is full: next round */
        }
        f->next_idx = be16toh(next->next_wqe_index) & f->tail;
        f->mirrored++;
        n++;
    }
    return n;
}

/* A UD QP's receive queue: WQE i (mod rq_cnt) while the number posted
 * runs behind the program's counter; wr_id = the running 16-bit counter,
 * which the receive CQE's wqe_counter carries back (ud_mlx5 asserts it) */
static int sv_mlx5_rq_mirror(struct sv_mlx5_qp *f)
{
    const struct mlx5_wqe_data_seg *d;
    struct ibv_recv_wr wr, *bad;
    struct ibv_sge sge;
    uint16_t counter;
    int n = 0;

    if (f->rq_cnt == 0) {
        return 0;
    }
    /* acquire: the program fences its WQE stores before the counter */
    counter = (uint16_t)be32toh(__atomic_load_n(&f->dbrec[MLX5_RCV_DBR],
                                                __ATOMIC_ACQUIRE));
    while (f->rq_mirrored != counter) {
        d          = (const void *)(f->rq_buf +
                                    (size_t)(f->rq_mirrored & (f->rq_cnt - 1)) *
                                    sizeof(*d));
        sge.addr   = be64toh(d->addr);
        sge.length = be32toh(d->byte_count);
        sge.lkey   = be32toh(d->lkey);
        memset(&wr, 0, sizeof(wr));
        wr.wr_id   = f->rq_mirrored;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        if (ibv_post_recv(&f->qp->qpx.qp_base, &wr, &bad) != 0) {
            break; /* the internal queue is full: next round */
        }
        f->rq_mirrored++;
        n++;
    }
    return n;
}

/* --- the thread --------------------------------------------------------- */

int sv_mlx5_engine_round(void)
{
    struct sv_mlx5_srq *s;
    struct sv_mlx5_qp *q;
    struct sv_mlx5_cq *c;
    int n = 0;

    for (s = sv_mlx5.srqs; s != NULL; s = s->next) {
        n += sv_mlx5_srq_mirror(s);
    }
    for (q = sv_mlx5.qps; q != NULL; q = q->next) {
        n += sv_mlx5_rq_mirror(q);
        n += sv_mlx5_sq_consume(q);
    }
    for (c = sv_mlx5.cqs; c != NULL; c = c->next) {
        n += sv_mlx5_cq_drain(c, sv_mlx5.qps);
    }
    return n;
}

/*
 * The engine must run as soon as its nap ends, although the program's
 * threads poll without ever blocking: on a host with as many busy pollers
 * as cores, the fair scheduler would let it run only at the next tick
 * (4 ms), once per hop. A real-time priority (SCHED_FIFO 1) makes its
 * wake-up preempt them; its naps (sv_mlx5_engine_nap) give them the CPU
 * back between its rounds. Without the privilege (EPERM) it stays a normal thread, and
 * latencies are the scheduler's.
 */
static void sv_mlx5_engine_prio(void)
{
    struct sched_param sp = { .sched_priority = 1 };
    int err;

    err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    if (err != 0) {
        sv_error("mlx5: engine at normal priority (SCHED_FIFO: %s)",
                 strerror(err));
    }
}

/* How long the engine naps after a round: n rounds of work since busy_since
 * (ns), the last work at last (sv_mlx5_engine.c's header) */
static uint64_t sv_mlx5_engine_nap(int n, uint64_t now, uint64_t *busy_since,
                                   uint64_t last)
{
    uint64_t nap;

    if (n > 0) {
        if (*busy_since == 0) {
            *busy_since = now;
        } else if (now - *busy_since >= SV_MLX5_BUSY_NS) {
            *busy_since = 0;
            return SV_MLX5_SLEEP_MIN;
        }
        return 0;
    }
    *busy_since = 0;
    nap         = (now - last) >> SV_MLX5_SLEEP_SHIFT;
    return (nap < SV_MLX5_SLEEP_MIN) ? SV_MLX5_SLEEP_MIN :
           (nap > SV_MLX5_SLEEP_MAX) ? SV_MLX5_SLEEP_MAX : nap;
}

static void *sv_mlx5_engine_main(void *arg)
{
    uint64_t last = sv_now_ns(), busy_since = 0, now, nap;
    struct timespec ts;
    int n, stop;

    (void)arg;
    /* naps of microseconds: the default timer slack (50 us) would stretch
     * each one */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    sv_mlx5_engine_prio();
    /* it runs WQEs the program wrote earlier: their buffers may be gone */
    sv_mem_deferred_thread();
    for (;;) {
        pthread_mutex_lock(&sv_mlx5.lock);
        stop = sv_mlx5.engine_stop;
        n    = stop ? 0 : sv_mlx5_engine_round();
        pthread_mutex_unlock(&sv_mlx5.lock);
        if (stop) {
            return NULL;
        }
        now = sv_now_ns();
        if (n > 0) {
            last = now;
        }
        nap = sv_mlx5_engine_nap(n, now, &busy_since, last);
        if (nap != 0) {
            ts.tv_sec  = 0;
            ts.tv_nsec = (long)nap;
            nanosleep(&ts, NULL);
        }
    }
}

static pid_t sv_mlx5_engine_pid;

/* fork: the child gets the lock free (the engine may hold it in the
 * parent) and no engine: its first front starts one */
static void sv_mlx5_fork_prepare(void)
{
    pthread_mutex_lock(&sv_mlx5.lock);
}

static void sv_mlx5_fork_release(void)
{
    pthread_mutex_unlock(&sv_mlx5.lock);
}

/* at exit: the engine stops between rounds, before the registry goes */
static void sv_mlx5_engine_exit(void)
{
    int started;

    pthread_mutex_lock(&sv_mlx5.lock);
    started            = sv_mlx5.engine_started &&
                         (sv_mlx5_engine_pid == getpid());
    sv_mlx5.engine_stop = 1;
    pthread_mutex_unlock(&sv_mlx5.lock);
    if (started) {
        pthread_join(sv_mlx5.engine, NULL);
    }
}

/* under sv_mlx5.lock; a forked child starts its own on its first front */
void sv_mlx5_engine_start(void)
{
    sigset_t all, old;
    int err;

    if (sv_mlx5.engine_started && (sv_mlx5_engine_pid == getpid())) {
        return;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&sv_mlx5.engine, NULL, sv_mlx5_engine_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        sv_warn("mlx5: the engine thread could not start (%s): mlx5 queues"
                " will not be served", strerror(err));
        return;
    }
    if (!sv_mlx5.engine_started) {
        atexit(sv_mlx5_engine_exit);
        pthread_atfork(sv_mlx5_fork_prepare, sv_mlx5_fork_release,
                       sv_mlx5_fork_release);
    }
    sv_mlx5.engine_started = 1;
    sv_mlx5_engine_pid     = getpid();
}
