/*
 * qpx address handle cache (qpx_ah.h).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_ah.h"

#include <string.h>


void qpx_ah_cache_init(qpx_ah_cache_t *cache, struct ibv_pd *pd,
                       uint8_t port_num, uint8_t sgid_index)
{
    cache->pd         = pd;
    cache->port_num   = port_num;
    cache->sgid_index = sgid_index;
    kh_init_inplace(qpx_ah, &cache->hash);
}


void qpx_ah_cache_cleanup(qpx_ah_cache_t *cache)
{
    struct ibv_ah *ah;
    int ret;

    kh_foreach_value(&cache->hash, ah, {
        ret = ibv_destroy_ah(ah);
        if (ret != 0) {
            ucs_warn("ibv_destroy_ah(%p) failed: %s", ah, strerror(ret));
        }
    });
    kh_destroy_inplace(qpx_ah, &cache->hash);
}


/* The bytes of addr its flags use; the rest zero (one key per port) */
static void qpx_ah_key_init(qpx_ah_key_t *key, const qpx_device_addr_t *addr)
{
    memset(key, 0, sizeof(*key));
    key->addr.flags = addr->flags;
    key->addr.lid   = addr->lid;
    if (addr->flags & QPX_DEVICE_ADDR_FLAG_GID) {
        memcpy(key->addr.gid, addr->gid, sizeof(key->addr.gid));
    }
}


struct ibv_ah *qpx_ah_cache_find(const qpx_ah_cache_t *cache,
                                 const qpx_device_addr_t *addr)
{
    qpx_ah_key_t key;
    khiter_t iter;

    qpx_ah_key_init(&key, addr);
    iter = kh_get(qpx_ah, &cache->hash, key);
    return (iter == kh_end(&cache->hash)) ? NULL : kh_val(&cache->hash, iter);
}


ucs_status_t qpx_ah_cache_get(qpx_ah_cache_t *cache,
                              const qpx_device_addr_t *addr,
                              struct ibv_ah **ah_p)
{
    struct ibv_ah_attr ah_attr;
    struct ibv_ah *ah;
    qpx_ah_key_t key;
    khiter_t iter;
    int ret;

    qpx_ah_key_init(&key, addr);
    iter = kh_get(qpx_ah, &cache->hash, key);
    if (iter != kh_end(&cache->hash)) {
        *ah_p = kh_val(&cache->hash, iter);
        return UCS_OK;
    }

    qpx_device_ah_attr(&key.addr, cache->port_num, cache->sgid_index,
                       &ah_attr);
    ah = ibv_create_ah(cache->pd, &ah_attr);
    if (ah == NULL) {
        ucs_error("ibv_create_ah(lid %u, port %u) failed: %m", addr->lid,
                  cache->port_num);
        return qpx_device_err_status(errno);
    }

    iter = kh_put(qpx_ah, &cache->hash, key, &ret);
    if (ret < 0) {
        ucs_error("failed to add an address handle to the cache");
        ibv_destroy_ah(ah);
        return UCS_ERR_NO_MEMORY;
    }

    kh_val(&cache->hash, iter) = ah;
    *ah_p                      = ah;
    return UCS_OK;
}
