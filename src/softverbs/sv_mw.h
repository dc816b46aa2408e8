/*
 * softverbs memory windows in the registry: a window's slot and its
 * states (the verbs, binds and checks are sv_mw.c). Included by sv.h for
 * the registry's table of windows.
 */
#ifndef SV_MW_H
#define SV_MW_H

#include <stdint.h>

/* Memory window states (rxe's rxe_mw_state; IBTA vol 1 10.6.7): a type 1
 * window is VALID from its allocation on (bound or not: a length of 0 is
 * unbound), a type 2 window FREE until a bind makes it VALID and an
 * invalidation FREE again; INVALID is a slot without a window */
enum sv_mw_state {
    SV_MW_INVALID = 0,
    SV_MW_FREE,
    SV_MW_VALID,
};

/* A memory window. Changed under the registry lock only (bind,
 * invalidation, deallocation, reclaim), each change inside a write of the
 * sequence lock seq (odd while writing), so that a responder of any
 * process reads a consistent window without a lock (sv_mw.c) */
struct sv_shm_mw {
    uint32_t seq;
    uint32_t in_use;
    uint32_t rkey;                /* (SV_MW_KEY_BASE + index) << 8 | tag */
    uint32_t proc;
    int32_t  pid;
    uint32_t pd_id;
    uint32_t type;                /* IBV_MW_TYPE_1 / _2 */
    uint32_t state;               /* enum sv_mw_state */
    uint32_t access;              /* mw_access_flags of the bind */
    uint32_t mr_key;              /* the MR it is bound to, 0: none */
    uint32_t qpn;                 /* type 2: the QP that bound it */
    uint32_t pad;
    uint64_t addr;                /* start (an iova of the MR) */
    uint64_t len;                 /* 0: not bound */
};

#endif
