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
        .name           = "",
        .prefix         = "",
        .table          = NULL,
        .size           = 0,
    },
    .tl_list            = UCS_LIST_INITIALIZER(&qpx_component.tl_list,
                                               &qpx_component.tl_list),
    .flags              = 0,
    .md_vfs_init        = (void*)ucs_empty_function
};


static ucs_status_t
qpx_cm_component_query_md_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p)
{
    *resources_p     = NULL;
    *num_resources_p = 0;
    return UCS_OK;
}

/*
 * The connection manager is a component of its own, with no memory domain,
 * as UCX's rdmacm and tcp connection managers are: UCP and UCX's tests
 * take a component with UCT_COMPONENT_FLAG_CM for one (its resources have
 * no memory domain to open). Named like the memory domains' component, so
 * that UCX_SOCKADDR_TLS_PRIORITY=qpx names it.
 */
static uct_component_t qpx_cm_component = {
    .name               = QPX_COMPONENT_NAME,
    .query_md_resources = qpx_cm_component_query_md_resources,
    .md_open            = (void*)ucs_empty_function_return_unsupported,
    .cm_open            = (void*)ucs_empty_function_return_unsupported,
    .rkey_unpack        = (void*)ucs_empty_function_return_unsupported,
    .rkey_ptr           = (void*)ucs_empty_function_return_unsupported,
    .rkey_release       = (void*)ucs_empty_function_return_success,
    QPX_UCX_COMPONENT_OPS_V2
    .md_config          = {
        .name           = "",
        .prefix         = "",
        .table          = NULL,
        .size           = 0,
    },
    .cm_config          = {
        .name           = "qpx connection manager",
        .prefix         = "QPX_CM_",
        .table          = NULL, /* qpx_component_cm's, at registration */
        .size           = 0,
    },
    .tl_list            = UCS_LIST_INITIALIZER(&qpx_cm_component.tl_list,
                                               &qpx_cm_component.tl_list),
    .flags              = UCT_COMPONENT_FLAG_CM,
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

    uct_component_register(&qpx_component);
    for (tl = qpx_transports; *tl != NULL; ++tl) {
        uct_tl_register(&qpx_component, *tl);
    }
    if (qpx_component_cm.open != NULL) {
        qpx_cm_component.cm_open         = qpx_component_cm.open;
        qpx_cm_component.cm_config.table = qpx_component_cm.config_table;
        qpx_cm_component.cm_config.size  = qpx_component_cm.config_size;
        uct_component_register(&qpx_cm_component);
    }

    registered = 1;
    ucs_debug("qpx component registered in UCX %u.%u.%u", major, minor, patch);
    return UCS_OK;
}
