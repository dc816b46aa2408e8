/*
 * softverbs librdmacm: what its CM does not offer, failing cleanly: ECE
 * rejects (EOPNOTSUPP). rsockets are in sv_rsocket*.c.
 */
#include "sv_cm.h"

#include <errno.h>

SV_CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *priv,
                                 uint8_t len)
{
    errno = EOPNOTSUPP;
    return -1;
}
