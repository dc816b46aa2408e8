/*
 * softverbs port state: a port taken down and up while programs run
 * (softverbs_set_port_state, `softverbs-stat port <dev>:<port> down|up`).
 *
 * The state of every port of the host is one bit in the registry
 * (port_down, per device), so every process sees it at once:
 *
 *   ACTIVE --down--> DOWN (phys_state Disabled) --up--> ACTIVE
 *
 * What a port that goes down does, as an HCA whose link drops:
 *  - ibv_query_port answers IBV_PORT_DOWN, phys_state 3 (Disabled);
 *  - every context of the device gets IBV_EVENT_PORT_ERR on its async fd
 *    (and IBV_EVENT_PORT_ACTIVE when it comes back), element.port_num set:
 *    ib_core dispatches port events to every context of the device
 *    (ib_dispatch_event), and mlx5 raises them on link down / up;
 *  - no packet leaves or enters it: a request whose requester or
 *    responder is on a down port gets no response, so RC and DC requests
 *    end with IBV_WC_RETRY_EXC_ERR once their retries run out (as on a
 *    fabric: the requester cannot tell a dead link from a dead peer), UD
 *    datagrams are lost;
 *  - librdmacm cannot resolve an address to it (RDMA_CM_EVENT_ADDR_ERROR,
 *    ENETUNREACH), so new connections on it fail at once.
 * QPs keep their state: when the port comes back, traffic that has not
 * failed yet goes on.
 */
#include "sv.h"

#include <string.h>
#include <stdlib.h>

int sv_port_is_up(int dev, uint8_t port)
{
    if ((dev < 0) || (dev >= SV_MAX_DEVS) || (port < 1) ||
        (port > SV_MAX_PORTS) || (sv_g.shm == NULL)) {
        return 1;
    }
    /* relaxed: a flag another process flips; no data is published with
     * it, and a packet that races the change may go either way, as one on
     * a wire would */
    return !(__atomic_load_n(&sv_g.shm->port_down[dev], __ATOMIC_RELAXED) &
             (1u << (port - 1)));
}

/* The port event to every context of the host: contexts of other devices
 * drop it (ibv_get_async_event); a context that is gone is a socket no
 * longer bound, and the send fails at once */
static void sv_port_event(int dev, uint8_t port, enum ibv_event_type type)
{
    uint32_t n = __atomic_load_n(&sv_g.shm->next_ctx_id, __ATOMIC_RELAXED);
    uint32_t id;

    for (id = 1; id < n; id++) {
        sv_ev_async(id, SV_EV_PORT, type, port, (uint64_t)dev);
    }
}

/* "softverbs<N>" to its index, or -1 */
static int sv_port_dev_index(const char *name)
{
    char *end;
    long i;

    if (strncmp(name, "softverbs", 9) != 0) {
        return -1;
    }
    i = strtol(name + 9, &end, 10);
    if ((end == name + 9) || (*end != '\0') || (i < 0) || (i >= sv_g.num_devs)) {
        return -1;
    }
    return (int)i + sv_g.first_dev; /* this host's device: its slot */
}

/*
 * Take port `port` of device `dev_name` down (up == 0) or up. Returns 0,
 * ENODEV (no such device), EINVAL (no such port) or the registry's error.
 * Setting the state a port already has changes nothing and sends no event.
 */
SV_EXPORT int softverbs_set_port_state(const char *dev_name, unsigned port,
                                       int up)
{
    uint32_t bit, old;
    int dev, ret;

    ret = sv_shm_init();
    if (ret != 0) {
        return ret;
    }
    dev = (dev_name != NULL) ? sv_port_dev_index(dev_name) : -1;
    if (dev < 0) {
        return ENODEV;
    }
    if ((port < 1) || (port > (unsigned)sv_g.num_ports)) {
        return EINVAL;
    }
    bit = 1u << (port - 1);
    /* acq_rel: one change wins; its events follow it */
    if (up) {
        old = __atomic_fetch_and(&sv_g.shm->port_down[dev], ~bit,
                                 __ATOMIC_ACQ_REL);
    } else {
        old = __atomic_fetch_or(&sv_g.shm->port_down[dev], bit,
                                __ATOMIC_ACQ_REL);
    }
    if (!!(old & bit) == !up) {
        return 0; /* already so */
    }
    sv_port_event(dev, (uint8_t)port,
                  up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
    return 0;
}
