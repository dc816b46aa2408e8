/*
 * softverbs' wire: the delay and loss a request meets when it leaves its
 * port for another one (SOFTVERBS_WIRE_DELAY, SOFTVERBS_WIRE_LOSS, parsed
 * by sv_env.c into sv_g.wire).
 *
 * Where the wire is. An HCA loops a packet between two QPs of one port
 * back inside itself; anything else crosses a link: to the other port of
 * the same HCA, to another HCA of the host, to another host (in
 * contrib/cluster-one-host.sh, host i owns device slot i-1, so a pair of
 * slots is a pair of hosts). The destination is the QP the request is for
 * (an RC/UC/XRC QP's dest_qp_num, a UD datagram's remote QPN, a DCI's
 * DCT), whose port the registry knows; a request to a QP that does not
 * exist, or to a multicast group, crosses no wire here.
 *
 * How the delay is modelled. A WQE is stamped when posted with the time it
 * reaches the far end (due_ns); the requester executes the head of the
 * send queue no earlier, so requests keep their order and a burst
 * pipelines: the second WQE of a burst is due one delay after its own
 * post, not after the first one's arrival. The responder's answer to a
 * reliable request (ACK or NAK, read response, atomic result) crosses
 * back: the WQE completes one more delay after it was executed (a round
 * trip after its post), and the requester executes the WQEs behind it
 * meanwhile, as an HCA keeps sending while ACKs are on their way
 * (sv_req.c). A read's data is placed when it is executed, its completion
 * comes with the answer; UD and UC requests have no answer. Ping-pong
 * latencies (one way each) are the hardware's. A request sent again after
 * an ACK timeout crosses again, after an RNR NAK the NAK's way back too.
 * A head that waits marks the process's earliest due time (sv_wire_wait),
 * so that a poll of any of its CQs runs the requesters once it has come
 * (a program may poll its receive CQ only, as qpx_ud does between its
 * signalled sends). Delays are lower bounds: nothing is executed early,
 * but a process that does not run (descheduled, asleep in
 * ibv_get_cq_event, which wakes every millisecond while WQEs wait; the
 * mlx5 engine between its naps) executes late. The head of a UD QP's
 * queue also holds the datagrams behind it, including ones for its own
 * port. The far end's slot is looked up once, at post (w->wire).
 *
 * Loss is decided when the request is executed: a reliable QP's request
 * gets no response and goes again after the ACK timeout (as
 * SOFTVERBS_RC_DROP), a UD datagram or a UC message is gone.
 */
#include "sv.h"

/* The QP a request of qp is addressed to, NULL: none known */
static const struct sv_shm_qp *sv_wire_dest(const struct sv_qp *qp,
                                            const struct sv_swqe *w)
{
    uint32_t qpn;

    if ((qp->sv_type == IBV_QPT_UD) || (qp->sv_type == SV_QPT_DCI)) {
        qpn = w->ud_qpn;
    } else {
        qpn = qp->attr.dest_qp_num;
    }
    return sv_shm_qp_lookup(qpn & 0xffffff);
}

/* The rule of the pair of slots (a, b), in either direction, else the
 * default */
static double sv_wire_rule(const struct sv_wire_rule *rules, int n,
                           double dflt, uint8_t a, uint8_t b)
{
    int i;

    for (i = 0; i < n; i++) {
        if (((rules[i].a == a) && (rules[i].b == b)) ||
            ((rules[i].a == b) && (rules[i].b == a))) {
            return rules[i].value;
        }
    }
    return dflt;
}

/* Slot of the far end of a request that leaves its port; -1: it does not */
static int sv_wire_far_slot(const struct sv_qp *qp, const struct sv_swqe *w)
{
    const struct sv_shm_qp *dq = sv_wire_dest(qp, w);

    if ((dq == NULL) ||
        ((dq->dev == qp->shm->dev) && (dq->port == qp->shm->port))) {
        return -1;
    }
    return dq->dev;
}

/* The value the rules give the request w of qp on its way (0: within
 * its port) */
static double sv_wire_value(const struct sv_qp *qp, const struct sv_swqe *w,
                            const struct sv_wire_rule *rules, int n,
                            double dflt)
{
    if (!w->wire || ((dflt == 0.0) && (n == 0))) {
        return 0.0;
    }
    return sv_wire_rule(rules, n, dflt, qp->shm->dev,
                        (uint8_t)(w->wire - 1));
}

/* The delay of the request w of qp on its way, in ns (0: none) */
uint64_t sv_wire_delay_ns(const struct sv_qp *qp, const struct sv_swqe *w)
{
    return (uint64_t)sv_wire_value(qp, w, sv_g.wire.delay, sv_g.wire.ndelay,
                                   sv_g.wire.delay_ns);
}

/* At post (under the QP's lock): whether w leaves its port, and when it
 * is due at the far end */
void sv_wire_stamp(const struct sv_qp *qp, struct sv_swqe *w)
{
    uint64_t delay;

    w->due_ns = 0;
    w->wire   = 0;
    if (!sv_g.wire.on || (w->opcode == IBV_WR_BIND_MW) ||
        (w->opcode == IBV_WR_LOCAL_INV)) {
        return; /* a local operation sends nothing */
    }
    w->wire = (uint8_t)(sv_wire_far_slot(qp, w) + 1);
    delay   = sv_wire_delay_ns(qp, w);
    if (delay != 0) {
        w->due_ns = sv_now_ns() + delay;
    }
}

/* The probability that w is lost on its way (0 within a port) */
double sv_wire_loss(const struct sv_qp *qp, const struct sv_swqe *w)
{
    return sv_wire_value(qp, w, sv_g.wire.loss_rule, sv_g.wire.nloss,
                         sv_g.wire.loss);
}

/* A send queue's head waits on the wire until due_ns: the process's
 * earliest such time, for the polls of other CQs (sv_cq_sweep_others) */
void sv_wire_wait(uint64_t due_ns)
{
    uint64_t cur = __atomic_load_n(&sv_g.wire_due, __ATOMIC_RELAXED);

    /* relaxed: a hint of when to run the requesters, which decide from
     * each WQE's own due_ns under its QP's lock */
    while (((cur == 0) || (due_ns < cur)) &&
           !__atomic_compare_exchange_n(&sv_g.wire_due, &cur, due_ns, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

/* 1 when a head's due time has come (the mark is cleared: the requesters
 * that still wait mark it again), for one caller to run the requesters */
int sv_wire_take_due(uint64_t now)
{
    uint64_t cur = __atomic_load_n(&sv_g.wire_due, __ATOMIC_RELAXED);

    return (cur != 0) && (now >= cur) &&
           __atomic_compare_exchange_n(&sv_g.wire_due, &cur, 0, 0,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
