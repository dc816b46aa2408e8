/*
 * Address handles by peer port, shared by the endpoints of an interface
 * that address their peers per work request (DC, UD): one ibv_ah per peer
 * device address, whatever the number of endpoints or remote interfaces
 * there, created on first use and destroyed with the cache.
 */
#ifndef QPX_AH_H_
#define QPX_AH_H_

#include "qpx_device.h"

#include <ucs/datastruct/khash.h>
#include <ucs/qpx_hash.h>


/* Key: the device address with the bytes its flags do not use zeroed */
typedef struct qpx_ah_key {
    qpx_device_addr_t addr;
} UCS_S_PACKED qpx_ah_key_t;


static UCS_F_ALWAYS_INLINE khint32_t qpx_ah_key_hash(qpx_ah_key_t key)
{
    return qpx_hash_fnv1a(&key, sizeof(key));
}

static UCS_F_ALWAYS_INLINE int qpx_ah_key_equal(qpx_ah_key_t a, qpx_ah_key_t b)
{
    return !memcmp(&a, &b, sizeof(a));
}

KHASH_INIT(qpx_ah, qpx_ah_key_t, struct ibv_ah*, 1, qpx_ah_key_hash,
           qpx_ah_key_equal);


typedef struct qpx_ah_cache {
    struct ibv_pd *pd;
    uint8_t       port_num;
    uint8_t       sgid_index; /* the local port's GID (RoCE) */
    khash_t(qpx_ah) hash;
} qpx_ah_cache_t;


void qpx_ah_cache_init(qpx_ah_cache_t *cache, struct ibv_pd *pd,
                       uint8_t port_num, uint8_t sgid_index);

/* Destroy every address handle of the cache */
void qpx_ah_cache_cleanup(qpx_ah_cache_t *cache);

/* The address handle to reach addr (owned by the cache) */
ucs_status_t qpx_ah_cache_get(qpx_ah_cache_t *cache,
                              const qpx_device_addr_t *addr,
                              struct ibv_ah **ah_p);

/* The address handle of addr if the cache has one, else NULL (none made) */
struct ibv_ah *qpx_ah_cache_find(const qpx_ah_cache_t *cache,
                                 const qpx_device_addr_t *addr);

#endif
