/*
 * Configuration value types that refuse a minus sign (qpx_config.h)
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_config.h"

#include <ctype.h>


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
