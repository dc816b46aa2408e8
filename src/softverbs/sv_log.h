/*
 * softverbs' one logger, to stderr, for its libibverbs and its librdmacm
 * (which calls the one in libibverbs: softverbs_log, version node
 * SOFTVERBS_PRIVATE_1.0). SV_LOG_WARN: what the user must know whatever
 * SOFTVERBS_DEBUG says (a setting not applied, lost completions, a peer's
 * memory out of reach, a CM without its thread), as mlx5 and the kernel
 * log theirs; SV_LOG_DEBUG: the reason of an error return the caller
 * already sees (errno), printed with SOFTVERBS_DEBUG=1.
 */
#ifndef SV_LOG_H
#define SV_LOG_H

enum {
    SV_LOG_WARN,
    SV_LOG_DEBUG
};

void softverbs_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define sv_error(_fmt, ...) \
    softverbs_log(SV_LOG_DEBUG, "softverbs: " _fmt "\n", ## __VA_ARGS__)
#define sv_warn(_fmt, ...) \
    softverbs_log(SV_LOG_WARN, "softverbs: " _fmt "\n", ## __VA_ARGS__)

#endif
