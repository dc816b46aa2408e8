/*
 * FNV-1a (32 bits) over a packed key: the hash of qpx's khash tables
 * keyed by addresses (address handles, qpx_ud's peers). Keys are packed
 * and have their unused bytes zeroed, so that equal keys hash equal.
 */
#ifndef QPX_UCS_HASH_H_
#define QPX_UCS_HASH_H_

#include <stddef.h>
#include <stdint.h>

static inline uint32_t qpx_hash_fnv1a(const void *key, size_t length)
{
    const uint8_t *p = key;
    uint32_t h       = 2166136261u;
    size_t i;

    for (i = 0; i < length; ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

#endif
