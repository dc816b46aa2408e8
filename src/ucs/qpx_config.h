/*
 * Value types of qpx's configuration tables: UCX's own, except that a
 * number written with a minus sign is refused.
 *
 * libucs reads unsigned numbers, units and times with sscanf("%u"/"%lu"/
 * "%lf"), which accepts "-3" and wraps it: UCX_QPX_POOL_SIZE=-3 became an
 * unbounded pool, UCX_QPX_UD_RX_QUEUE_LEN=-5 a request for 4294967291
 * buffers that the device clamped without a word. With these types the
 * parser says "Invalid value for POOL_SIZE: '-3'", as it does for "abc",
 * and the interface is not opened. The help text (ucx_info -c -f's syntax
 * line) is UCX's.
 */
#ifndef QPX_UCS_CONFIG_H_
#define QPX_UCS_CONFIG_H_

#include <ucs/config/parser.h>
#include <ucs/ucx_ops.h>


int qpx_config_sscanf_uint(const char *buf, void *dest, const void *arg);
int qpx_config_sscanf_ulunits(const char *buf, void *dest, const void *arg);
int qpx_config_sscanf_memunits(const char *buf, void *dest, const void *arg);
int qpx_config_sscanf_time(const char *buf, void *dest, const void *arg);
int qpx_config_sscanf_double(const char *buf, void *dest, const void *arg);

/* A 64-bit key: "auto" (left to the code that reads it) or a number,
 * decimal or 0x-hex, nothing after it */
typedef struct qpx_config_key {
    int      is_auto;
    uint64_t value;
} qpx_config_key_t;

int qpx_config_sscanf_key(const char *buf, void *dest, const void *arg);
int qpx_config_sprintf_key(char *buf, size_t max, const void *src,
                           const void *arg);
ucs_status_t qpx_config_clone_key(const void *src, void *dest,
                                  const void *arg);


#define QPX_CONFIG_TYPE_UINT \
    {qpx_config_sscanf_uint,      ucs_config_sprintf_uint, \
     ucs_config_clone_uint,       ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC "unsigned integer"}

#define QPX_CONFIG_TYPE_ULUNITS \
    {qpx_config_sscanf_ulunits,   ucs_config_sprintf_ulunits, \
     ucs_config_clone_ulong,      ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC \
     "unsigned long: <number>, \"inf\", or \"auto\""}

#define QPX_CONFIG_TYPE_MEMUNITS \
    {qpx_config_sscanf_memunits,  ucs_config_sprintf_memunits, \
     ucs_config_clone_ulong,      ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC \
     "memory units: <number>[b|kb|mb|gb], \"inf\", or \"auto\""}

#define QPX_CONFIG_TYPE_TIME \
    {qpx_config_sscanf_time,      ucs_config_sprintf_time, \
     ucs_config_clone_double,     ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC \
     "time value: <number>[s|us|ms|ns]"}

#define QPX_CONFIG_TYPE_DOUBLE \
    {qpx_config_sscanf_double,    ucs_config_sprintf_double, \
     ucs_config_clone_double,     ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC "floating point number"}

#define QPX_CONFIG_TYPE_KEY \
    {qpx_config_sscanf_key,       qpx_config_sprintf_key, \
     qpx_config_clone_key,        ucs_config_release_nop, \
     ucs_config_help_generic,     QPX_UCX_CONFIG_DOC \
     "64-bit key: \"auto\", or a number (decimal or 0x-hex)"}

#endif
