/*
 * Run-time UCX version. libuct and libucs export no version function, but
 * libucp (always installed beside them) does: look it up in the libucp that
 * sits next to the libuct this process loaded.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "ucx_version.h"
#include "ucx_compat.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>


typedef void (*qpx_ucp_get_version_func_t)(unsigned *major, unsigned *minor,
                                           unsigned *release);


static void *qpx_ucx_open_ucp(void)
{
    char path[PATH_MAX], dir[PATH_MAX];
    Dl_info info;
    void *handle;

    /* Already loaded (a UCP application): use it */
    handle = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (handle != NULL) {
        return handle;
    }

    if (!dladdr((void*)uct_component_register, &info) ||
        (info.dli_fname == NULL)) {
        return dlopen("libucp.so.0", RTLD_LAZY | RTLD_LOCAL);
    }

    ucs_strncpy_zero(dir, info.dli_fname, sizeof(dir));
    snprintf(path, sizeof(path), "%s/libucp.so.0", dirname(dir));
    return dlopen(path, RTLD_LAZY | RTLD_LOCAL);
}


ucs_status_t qpx_ucx_runtime_version(unsigned *major_p, unsigned *minor_p,
                                     unsigned *patch_p)
{
    qpx_ucp_get_version_func_t get_version;
    unsigned major, minor, patch;
    void *handle;

    handle = qpx_ucx_open_ucp();
    if (handle == NULL) {
        ucs_debug("could not open libucp to read the UCX version: %s",
                  dlerror());
        return UCS_ERR_NO_ELEM;
    }

    get_version = (qpx_ucp_get_version_func_t)dlsym(handle, "ucp_get_version");
    if (get_version == NULL) {
        ucs_debug("libucp has no ucp_get_version: %s", dlerror());
        dlclose(handle);
        return UCS_ERR_NO_ELEM;
    }

    get_version(&major, &minor, &patch);
    dlclose(handle);

    *major_p = major;
    *minor_p = minor;
    *patch_p = patch;
    return UCS_OK;
}


int qpx_ucx_version_is_compatible(unsigned major, unsigned minor)
{
    /* Internal layouts may change in any minor release */
    return (major == QPX_UCX_BUILD_MAJOR) && (minor == QPX_UCX_BUILD_MINOR);
}


int qpx_ucx_has_statistics(void)
{
    Dl_info info;
    void *handle, *sym;

    /* The libucs that holds a function qpx calls: its statistics entry
     * points exist only in a build with statistics (src/ucs/stats/stats.c
     * defines ucs_stats_node_alloc under ENABLE_STATS alone, 1.13 to 1.22) */
    if (!dladdr((void*)ucs_empty_function, &info) ||
        (info.dli_fname == NULL)) {
        return 0;
    }
    handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        return 0;
    }
    sym = dlsym(handle, "ucs_stats_node_alloc");
    dlclose(handle);
    return sym != NULL;
}
