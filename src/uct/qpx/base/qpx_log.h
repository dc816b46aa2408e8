/*
 * Logging what a peer can cause. A peer that sends malformed messages (or
 * keeps asking for what we refuse) must not make qpx log at warning level
 * without limit: the first few occurrences are logged at the caller's
 * level, then only every power of two (with the running count in the
 * message), the rest at debug level.
 */
#ifndef QPX_LOG_H_
#define QPX_LOG_H_

#include <ucs/ucx_compat.h>


/* Occurrences logged at the caller's level before sampling starts */
#define QPX_LOG_SAMPLED_FIRST 8


/*
 * Count one more occurrence in *count_p and return the level to log it at:
 * level for the first QPX_LOG_SAMPLED_FIRST and for every power of two,
 * UCS_LOG_LEVEL_DEBUG otherwise. Call it into a variable, never in
 * ucs_log's argument list: that macro reads its level more than once.
 */
static inline ucs_log_level_t
qpx_log_sampled_level(unsigned long *count_p, ucs_log_level_t level)
{
    unsigned long count = ++(*count_p);

    return ((count <= QPX_LOG_SAMPLED_FIRST) || ucs_is_pow2(count)) ?
           level : UCS_LOG_LEVEL_DEBUG;
}

#endif
