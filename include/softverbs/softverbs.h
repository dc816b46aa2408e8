/*
 * softverbs: a user-space verbs device (replacement libibverbs.so.1).
 *
 * Environment variables understood by the library; see docs/softverbs.md.
 */
#ifndef SOFTVERBS_SOFTVERBS_H
#define SOFTVERBS_SOFTVERBS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of soft HCAs on the host (default 1, at most 8). */
#define SOFTVERBS_ENV_NUM_DEVICES  "SOFTVERBS_NUM_DEVICES"
/* The registry's device slot this host's first HCA is (0..7, default 0):
 * processes sharing one registry with other first slots are other hosts
 * (contrib/cluster-one-host.sh). */
#define SOFTVERBS_ENV_FIRST_DEVICE "SOFTVERBS_FIRST_DEVICE"
/* Ports of each soft HCA (1..4, default 1). */
#define SOFTVERBS_ENV_NUM_PORTS    "SOFTVERBS_NUM_PORTS"
/* Link layer of the ports: "infiniband" (default) or "ethernet" (RoCE),
 * one value for all ports or a comma-separated value per port. */
#define SOFTVERBS_ENV_LINK_LAYER   "SOFTVERBS_LINK_LAYER"
/* Network device(s) RoCE ports take their GIDs and MTU from (default: the
 * first one up with an IPv4 address, else lo); one, or one per port. */
#define SOFTVERBS_ENV_NETDEV       "SOFTVERBS_NETDEV"
/* A directory for softverbs' event sockets, shared by processes of one
 * registry in different network namespaces (default: abstract sockets). */
#define SOFTVERBS_ENV_SOCKET_DIR   "SOFTVERBS_SOCKET_DIR"
/* Path of the host-wide shared registry (default /dev/shm/softverbs). */
#define SOFTVERBS_ENV_SHM          "SOFTVERBS_SHM"
/* Size in MiB of the registry's ring arena (default 4096, sparse). */
#define SOFTVERBS_ENV_SHM_MB       "SOFTVERBS_SHM_MB"
/* "fail" (default, as mlx5) or "clamp": caps above the device limits. */
#define SOFTVERBS_ENV_CAP_POLICY   "SOFTVERBS_CAP_POLICY"
/* Host-wide object limits: creation beyond them fails with ENOMEM. */
#define SOFTVERBS_ENV_MAX_QP       "SOFTVERBS_MAX_QP"
#define SOFTVERBS_ENV_MAX_CQ       "SOFTVERBS_MAX_CQ"
#define SOFTVERBS_ENV_MAX_MR       "SOFTVERBS_MAX_MR"
#define SOFTVERBS_ENV_MAX_SRQ      "SOFTVERBS_MAX_SRQ"
#define SOFTVERBS_ENV_DC           "SOFTVERBS_DC"
/* 1: the device is also an mlx5 device for programs that drive its queues
 * directly (mlx5dv_is_supported true, mlx5dv_init_obj of RC QPs, CQs and
 * SRQs, a ConnectX-5 PCI identity in the sysfs tree); 0 (default): verbs
 * only. */
#define SOFTVERBS_ENV_MLX5         "SOFTVERBS_MLX5"
/* Probability (0..1) that a UD packet is lost. */
#define SOFTVERBS_ENV_UD_DROP      "SOFTVERBS_UD_DROP"
/* Probability (0..1) that a UD packet is held back and delivered after
 * the next one sent by the same QP (reordering). */
#define SOFTVERBS_ENV_UD_REORDER   "SOFTVERBS_UD_REORDER"
#define SOFTVERBS_ENV_RC_READ_REORDER "SOFTVERBS_RC_READ_REORDER"
/* Probability (0..1) that a request of a connected QP (RC, UC, XRC, DC) is
 * lost on the wire: reliable ones are sent again after the ACK timeout
 * (retry_cnt), a UC message is gone. */
#define SOFTVERBS_ENV_RC_DROP      "SOFTVERBS_RC_DROP"
/* Fault injection: a responder that completes a receive waits this long
 * (e.g. "200ms", at most 1 s) between its checks of the target QP and the
 * completion it writes: the window in which the target can be reset or
 * destroyed meanwhile, made wide enough for a test to hit
 * (conformance stress/reset_while_responding). */
#define SOFTVERBS_ENV_RESP_DELAY   "SOFTVERBS_RESP_DELAY"
/* The wire between ports (another port, HCA or host): a one-way delay,
 * e.g. "50us", and a probability that a request crossing it is lost;
 * each may add A-B=value items for the device slots A and B
 * ("50us,0-1=2ms"). Traffic within one port is never delayed or lost. */
#define SOFTVERBS_ENV_WIRE_DELAY   "SOFTVERBS_WIRE_DELAY"
#define SOFTVERBS_ENV_WIRE_LOSS    "SOFTVERBS_WIRE_LOSS"
/* Print errors decided by the library to stderr when set to 1. */
#define SOFTVERBS_ENV_DEBUG        "SOFTVERBS_DEBUG"

/* Take port `port` (1..) of device `dev_name` ("softverbs0") down (up 0)
 * or up while programs run, as a link that drops: every context of the
 * device gets IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE, ibv_query_port
 * reports the state, and no packet crosses a down port (RC requests end
 * with retry exceeded, datagrams are lost, librdmacm cannot resolve to it).
 * Returns 0, ENODEV or EINVAL. Since SOFTVERBS_1.2. */
int softverbs_set_port_state(const char *dev_name, unsigned port, int up);

/* Live objects of one process (pid) or of the whole host (pid == 0).
 * The fields up to mr_bytes are SOFTVERBS_1.0's structure (programs linked
 * against that version get only those); the DC fields came with 1.1. */
struct softverbs_stats {
    uint32_t pid;
    uint32_t num_qp;
    uint32_t num_qp_by_type[4];   /* RC, UC, UD, other (DCI and DCT) */
    uint32_t num_qp_by_state[7];  /* enum ibv_qp_state */
    uint32_t num_cq;
    uint32_t num_srq;
    uint32_t num_mr;
    uint64_t mr_bytes;
    /* SOFTVERBS_1.1 */
    uint32_t num_dci;             /* mlx5 DC initiators */
    uint32_t num_dct;             /* mlx5 DC targets */
    uint64_t dc_switches;         /* DCI WQEs sent to another target than
                                     the DCI's WQE before */
    uint64_t dc_key_violations;   /* DC requests a DCT dropped for a wrong
                                     access key */
};

/*
 * Fill stats with the live objects of process pid (0: all processes).
 * Returns 0 or an errno value. Exported as softverbs_get_stats@SOFTVERBS_1.1
 * (and @SOFTVERBS_1.0, filling the 1.0 fields only) from the replacement
 * libibverbs.so.1.
 */
int softverbs_get_stats(uint32_t pid, struct softverbs_stats *stats);

/*
 * Fill up to max entries of stats, one per process that has the registry
 * attached (pid set), from a single pass over the registry. Returns the
 * number of entries filled, or a negative errno value. Exported as
 * softverbs_get_proc_stats@SOFTVERBS_1.1 (and @SOFTVERBS_1.0, an array of
 * 1.0 structures).
 */
int softverbs_get_proc_stats(struct softverbs_stats *stats, int max);

#ifdef __cplusplus
}
#endif

#endif
