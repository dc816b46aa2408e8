/*
 * FNV-1a (32 bits), the one hash softverbs uses for names it derives from
 * bytes: the registry tag of a SOFTVERBS_SHM path (which the CM's socket
 * names carry too, so two registries never meet), an IPv6 address's port
 * owner key, a multicast address's MLID.
 */
#ifndef SV_HASH_H_
#define SV_HASH_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SV_FNV1A_INIT 2166136261u

/* h continued over n bytes at p (start with SV_FNV1A_INIT) */
static inline uint32_t sv_fnv1a(uint32_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ b[i]) * 16777619u;
    }
    return h;
}

/* The registry tag of a SOFTVERBS_SHM path */
static inline uint32_t sv_fnv1a_str(const char *s)
{
    return sv_fnv1a(SV_FNV1A_INIT, s, strlen(s));
}

#endif
