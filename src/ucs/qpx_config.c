/*
 * Configuration value types that refuse a minus sign (qpx_config.h)
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Whether a value is written as a negative number: what libucs' sscanf
 * would wrap into a huge unsigned one */
static int qpx_config_is_negative(const char *buf)
{
    while (isspace((unsigned char)*buf)) {
        ++buf;
    }
    return *buf == '-';
}

/* UCX's read of a value, unless the value is negative */
static int qpx_config_read(int (*ucs_read)(const char*, void*, const void*),
                           const char *buf, void *dest, const void *arg)
{
    return !qpx_config_is_negative(buf) && ucs_read(buf, dest, arg);
}

int qpx_config_sscanf_uint(const char *buf, void *dest, const void *arg)
{
    return qpx_config_read(ucs_config_sscanf_uint, buf, dest, arg);
}

int qpx_config_sscanf_ulunits(const char *buf, void *dest, const void *arg)
{
    return qpx_config_read(ucs_config_sscanf_ulunits, buf, dest, arg);
}

int qpx_config_sscanf_memunits(const char *buf, void *dest, const void *arg)
{
    return qpx_config_read(ucs_config_sscanf_memunits, buf, dest, arg);
}

int qpx_config_sscanf_time(const char *buf, void *dest, const void *arg)
{
    return qpx_config_read(ucs_config_sscanf_time, buf, dest, arg);
}

int qpx_config_sscanf_double(const char *buf, void *dest, const void *arg)
{
    return qpx_config_read(ucs_config_sscanf_double, buf, dest, arg);
}

int qpx_config_sscanf_key(const char *buf, void *dest, const void *arg)
{
    qpx_config_key_t *key = dest;
    unsigned long long value;
    char *end;

    if (!strcasecmp(buf, "auto")) {
        key->is_auto = 1;
        key->value   = 0;
        return 1;
    }
    if (qpx_config_is_negative(buf) || !isxdigit((unsigned char)*buf)) {
        return 0;
    }
    errno = 0;
    value = strtoull(buf, &end, 0);
    if ((errno != 0) || (end == buf) || (*end != '\0')) {
        return 0;
    }
    key->is_auto = 0;
    key->value   = value;
    return 1;
}

int qpx_config_sprintf_key(char *buf, size_t max, const void *src,
                           const void *arg)
{
    const qpx_config_key_t *key = src;

    if (key->is_auto) {
        snprintf(buf, max, "auto");
    } else {
        snprintf(buf, max, "0x%" PRIx64, key->value);
    }
    return 1;
}

ucs_status_t qpx_config_clone_key(const void *src, void *dest,
                                  const void *arg)
{
    memcpy(dest, src, sizeof(qpx_config_key_t));
    return UCS_OK;
}
