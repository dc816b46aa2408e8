/*
 * The version of the UCX a process actually loaded, which may differ from
 * the one qpx was built against.
 */
#ifndef QPX_UCX_VERSION_H_
#define QPX_UCX_VERSION_H_

#include <ucs/type/status.h>


/* Version of the UCX libraries loaded in this process */
ucs_status_t qpx_ucx_runtime_version(unsigned *major_p, unsigned *minor_p,
                                     unsigned *patch_p);

/* Can qpx, built against build_major.build_minor, run in UCX major.minor */
int qpx_ucx_version_is_compatible(unsigned major, unsigned minor);

/* Was the libucs this process loaded built with statistics
 * (--enable-stats)? Its structures then carry statistics nodes that the
 * layouts qpx declares (src/ucs/compat/) do not have */
int qpx_ucx_has_statistics(void);

#endif
