/*
 * The qpx UCT component: md discovery and opening, rkeys, and registration
 * of the component and its transports into the UCX of this process.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "qpx_component.h"
#include "qpx_md.h"

#include <ucs/ucx_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


uct_component_t qpx_component = {
    .name               = QPX_COMPONENT_NAME,
    .query_md_resources = qpx_md_query_resources,
    .md_open            = qpx_md_open,
    .cm_open            = (void*)ucs_empty_function_return_unsupported,
    .rkey_unpack        = qpx_md_rkey_unpack,
    .rkey_ptr           = (void*)ucs_empty_function_return_unsupported,
    .rkey_release       = qpx_md_rkey_release,
    QPX_UCX_COMPONENT_OPS_V2
    .md_config          = {
        .name           = "qpx memory domain",
        .prefix         = "QPX_",
        .table          = qpx_md_config_table,
        .size           = sizeof(qpx_md_config_t),
    },
    .cm_config          = {
        .name           = "qpx connection manager",
        .prefix         = "QPX_CM_",
        .table          = uct_md_config_table,
        .size           = sizeof(uct_md_config_t),
    },
    .tl_list            = UCS_LIST_INITIALIZER(&qpx_component.tl_list,
                                               &qpx_component.tl_list),
    .flags              = 0,
    .md_vfs_init        = (void*)ucs_empty_function
};


ucs_status_t qpx_component_register(void)
{
    static int registered = 0;
    unsigned major, minor, patch;
    uct_tl_t *const *tl;
    ucs_status_t status;

    if (registered) {
        return UCS_OK;
    }

    status = qpx_ucx_runtime_version(&major, &minor, &patch);
    if (status != UCS_OK) {
        /* Cannot prove the layouts match: refuse rather than corrupt memory */
        fprintf(stderr, "qpx: cannot determine the version of the loaded UCX "
                "(built for UCX %s); the qpx component is not registered\n",
                QPX_UCX_BUILD_VERSION_STRING);
        return UCS_ERR_UNSUPPORTED;
    }

    if (!qpx_ucx_version_is_compatible(major, minor)) {
        fprintf(stderr, "qpx: built for UCX %s but this process loaded UCX "
                "%u.%u.%u; the qpx component is not registered (rebuild qpx "
                "against this UCX)\n", QPX_UCX_BUILD_VERSION_STRING, major,
                minor, patch);
        return UCS_ERR_UNSUPPORTED;
    }

    if (qpx_ucx_has_statistics()) {
        fprintf(stderr, "qpx: this process loaded UCX %u.%u.%u built with "
                "statistics (--enable-stats), whose internal structures differ "
                "from those qpx is built for; the qpx component is not "
                "registered (use a UCX built without statistics)\n", major,
                minor, patch);
        return UCS_ERR_UNSUPPORTED;
    }

    if (qpx_component_cm.open != NULL) {
        qpx_component.cm_open          = qpx_component_cm.open;
        qpx_component.cm_config.table  = qpx_component_cm.config_table;
        qpx_component.cm_config.size   = qpx_component_cm.config_size;
        qpx_component.flags           |= UCT_COMPONENT_FLAG_CM;
    }
    uct_component_register(&qpx_component);
    for (tl = qpx_transports; *tl != NULL; ++tl) {
        uct_tl_register(&qpx_component, *tl);
    }

    registered = 1;
    ucs_debug("qpx component registered in UCX %u.%u.%u", major, minor, patch);
    return UCS_OK;
}
