/*
 * libibverbs' names of its enums (node types, port states, async events,
 * completion statuses) and its rate conversions: ibv_*_str(3) and
 * ibv_rate_to_mult(3). Pure functions, called by programs and by
 * softverbs' own logs; they call nothing.
 */
#include "sv.h"

SV_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
    static const char *const s[] = {
        [IBV_NODE_CA] = "InfiniBand channel adapter",
        [IBV_NODE_SWITCH] = "InfiniBand switch",
        [IBV_NODE_ROUTER] = "InfiniBand router",
        [IBV_NODE_RNIC] = "iWARP NIC",
        [IBV_NODE_USNIC] = "usNIC",
        [IBV_NODE_USNIC_UDP] = "usNIC UDP",
        [IBV_NODE_UNSPECIFIED] = "unspecified",
    };

    if (((unsigned)t >= sizeof(s) / sizeof(s[0])) || (s[t] == NULL)) {
        return "unknown";
    }
    return s[t];
}

SV_EXPORT const char *ibv_port_state_str(enum ibv_port_state st)
{
    static const char *const s[] = {
        "PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED",
        "PORT_ACTIVE", "PORT_ACTIVE_DEFER",
    };

    return ((unsigned)st < 6) ? s[st] : "unknown";
}

SV_EXPORT const char *ibv_event_type_str(enum ibv_event_type ev)
{
    static const char *const s[] = {
        "CQ error", "local work queue catastrophic error",
        "invalid request local work queue error",
        "local access violation work queue error",
        "communication established", "send queue drained",
        "path migrated", "path migration request error",
        "local catastrophic error", "port active", "port error",
        "LID change", "P_Key change", "SM change", "SRQ catastrophic error",
        "SRQ limit reached", "last WQE reached", "client reregistration",
        "GID table change", "WQ fatal",
    };

    return ((unsigned)ev < sizeof(s) / sizeof(s[0])) ? s[ev] : "unknown";
}

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status st)
{
    static const char *const s[] = {
        "success", "local length error", "local QP operation error",
        "local EE context operation error", "local protection error",
        "Work Request Flushed Error", "memory management operation error",
        "bad response error", "local access error",
        "remote invalid request error", "remote access error",
        "remote operation error", "transport retry counter exceeded",
        "RNR retry counter exceeded", "local RDD violation error",
        "remote invalid RD request", "aborted error",
        "invalid EE context number", "invalid EE context state",
        "fatal error", "response timeout error", "general error",
        "TM error", "TM rendezvous error",
    };

    return ((unsigned)st < sizeof(s) / sizeof(s[0])) ? s[st] : "unknown";
}

static const int sv_rate_mult[] = {
    [IBV_RATE_2_5_GBPS] = 1, [IBV_RATE_5_GBPS] = 2, [IBV_RATE_10_GBPS] = 4,
    [IBV_RATE_20_GBPS] = 8, [IBV_RATE_30_GBPS] = 12, [IBV_RATE_40_GBPS] = 16,
    [IBV_RATE_60_GBPS] = 24, [IBV_RATE_80_GBPS] = 32,
    [IBV_RATE_120_GBPS] = 48,
};

SV_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
    return ((unsigned)rate < sizeof(sv_rate_mult) / sizeof(int)) ?
           sv_rate_mult[rate] : 0;
}

SV_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
    unsigned i;

    for (i = 1; i < sizeof(sv_rate_mult) / sizeof(int); i++) {
        if (sv_rate_mult[i] == mult) {
            return i;
        }
    }
    return IBV_RATE_MAX;
}

static const struct { enum ibv_rate rate; int mbps; } sv_rate_mbps[] = {
    {IBV_RATE_2_5_GBPS, 2500}, {IBV_RATE_5_GBPS, 5000},
    {IBV_RATE_10_GBPS, 10000}, {IBV_RATE_20_GBPS, 20000},
    {IBV_RATE_30_GBPS, 30000}, {IBV_RATE_40_GBPS, 40000},
    {IBV_RATE_60_GBPS, 60000}, {IBV_RATE_80_GBPS, 80000},
    {IBV_RATE_120_GBPS, 120000}, {IBV_RATE_14_GBPS, 14062},
    {IBV_RATE_56_GBPS, 56250}, {IBV_RATE_112_GBPS, 112500},
    {IBV_RATE_168_GBPS, 168750}, {IBV_RATE_25_GBPS, 25781},
    {IBV_RATE_100_GBPS, 103125}, {IBV_RATE_200_GBPS, 206250},
    {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_28_GBPS, 28125},
    {IBV_RATE_50_GBPS, 53125}, {IBV_RATE_400_GBPS, 425000},
    {IBV_RATE_600_GBPS, 637500},
};

SV_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < sizeof(sv_rate_mbps) / sizeof(sv_rate_mbps[0]); i++) {
        if (sv_rate_mbps[i].rate == rate) {
            return sv_rate_mbps[i].mbps;
        }
    }
    return 0;
}

SV_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    unsigned i;

    for (i = 0; i < sizeof(sv_rate_mbps) / sizeof(sv_rate_mbps[0]); i++) {
        if (sv_rate_mbps[i].mbps == mbps) {
            return sv_rate_mbps[i].rate;
        }
    }
    return IBV_RATE_MAX;
}
