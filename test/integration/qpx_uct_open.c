/*
 * Opening a UCT transport by name (see qpx_uct_open.h).
 */
#include "qpx_uct_open.h"

#include <alloca.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Not in the installed headers of every UCX version */
ucs_status_t ucs_async_context_create(ucs_async_mode_t mode,
                                      ucs_async_context_t **async_p);


/* Whether md offers tl_name on dev_name */
static int qpx_uct_md_has(uct_md_h md, const char *tl_name,
                          const char *dev_name)
{
    uct_tl_resource_desc_t *tls;
    unsigned ntls, k;
    int found = 0;

    if (uct_md_query_tl_resources(md, &tls, &ntls) != UCS_OK) {
        return 0;
    }
    for (k = 0; k < ntls; ++k) {
        found |= !strcmp(tls[k].tl_name, tl_name) &&
                 !strcmp(tls[k].dev_name, dev_name);
    }
    uct_release_tl_resource_list(tls);
    return found;
}

int qpx_uct_md_open(const char *tl_name, const char *dev_name,
                    uct_component_h *comp_p, uct_md_h *md_p)
{
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_component_h *comps;
    unsigned ncomps, i, j;
    ucs_status_t status;
    uct_md_h md;

    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        return 77;
    }
    for (i = 0; i < ncomps; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(comps[i], &cattr);
        cattr.md_resources = alloca(sizeof(*cattr.md_resources) *
                                    cattr.md_resource_count);
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        uct_component_query(comps[i], &cattr);
        for (j = 0; j < cattr.md_resource_count; ++j) {
            if (uct_md_config_read(comps[i], NULL, NULL, &md_config) !=
                UCS_OK) {
                continue;
            }
            status = uct_md_open(comps[i], cattr.md_resources[j].md_name,
                                 md_config, &md);
            uct_config_release(md_config);
            if (status != UCS_OK) {
                continue;
            }
            if (qpx_uct_md_has(md, tl_name, dev_name)) {
                *comp_p = comps[i];
                *md_p   = md;
                uct_release_component_list(comps);
                return 0;
            }
            uct_md_close(md);
        }
    }
    uct_release_component_list(comps);
    return 77;
}

int qpx_uct_iface_open(uct_md_h md, const char *tl_name, const char *dev_name,
                       uct_error_handler_t err_cb, void *err_arg,
                       ucs_async_context_t **async_p, uct_worker_h *worker_p,
                       uct_iface_h *iface_p)
{
    uct_iface_params_t params;
    uct_iface_config_t *if_config;
    ucs_async_context_t *async;
    uct_worker_h worker;
    ucs_status_t status;
    uct_iface_h iface;

    if (ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) !=
        UCS_OK) {
        return -1;
    }
    if ((uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) !=
         UCS_OK) ||
        (uct_md_iface_config_read(md, tl_name, NULL, NULL, &if_config) !=
         UCS_OK)) {
        return -1; /* the process exits: nothing to undo */
    }
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = tl_name;
    params.mode.device.dev_name = dev_name;
    if (err_cb != NULL) {
        params.field_mask        |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                    UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        params.err_handler        = err_cb;
        params.err_handler_arg    = err_arg;
        params.err_handler_flags  = UCT_CB_FLAG_ASYNC;
    }
    status = uct_iface_open(md, worker, &params, if_config, &iface);
    uct_config_release(if_config);
    if (status != UCS_OK) {
        return -1;
    }
    uct_iface_progress_enable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    *async_p  = async;
    *worker_p = worker;
    *iface_p  = iface;
    return 0;
}

int qpx_uct_connect_pair(uct_iface_h a, uct_iface_h b, uct_ep_h *ab_p,
                         uct_ep_h *ba_p)
{
    uint8_t dev_addr[256], iface_addr[256], ep_addr[256], ep_addr_b[256];
    uct_iface_attr_t attr;
    uct_ep_params_t p;

    *ba_p = NULL;
    if (uct_iface_query(b, &attr) ||
        uct_iface_get_device_address(b, (uct_device_addr_t*)dev_addr)) {
        return -1;
    }
    memset(&p, 0, sizeof(p));
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
    if (attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) {
        if (uct_iface_get_address(b, (uct_iface_addr_t*)iface_addr)) {
            return -1;
        }
        p.field_mask |= UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface       = a;
        p.dev_addr    = (uct_device_addr_t*)dev_addr;
        p.iface_addr  = (uct_iface_addr_t*)iface_addr;
        return uct_ep_create(&p, ab_p) ? -1 : 0;
    }

    p.iface = a;
    if (uct_ep_create(&p, ab_p)) {
        return -1;
    }
    p.iface = b;
    if (uct_ep_create(&p, ba_p) ||
        uct_ep_get_address(*ab_p, (uct_ep_addr_t*)ep_addr) ||
        uct_ep_get_address(*ba_p, (uct_ep_addr_t*)ep_addr_b) ||
        uct_ep_connect_to_ep(*ba_p, (uct_device_addr_t*)dev_addr,
                             (uct_ep_addr_t*)ep_addr)) {
        return -1;
    }
    if (uct_iface_get_device_address(a, (uct_device_addr_t*)dev_addr)) {
        return -1;
    }
    return uct_ep_connect_to_ep(*ab_p, (uct_device_addr_t*)dev_addr,
                                (uct_ep_addr_t*)ep_addr_b) ? -1 : 0;
}

int qpx_uct_loopback_open(int argc, char **argv, const char *opts,
                          qpx_uct_loopback_t *lb)
{
    uct_iface_params_t params;
    uct_iface_config_t *config;
    uct_component_h comp;
    char optstring[32];
    int opt, ret;

    lb->tl  = NULL;
    lb->dev = "softverbs0:1";
    snprintf(optstring, sizeof(optstring), "x:d:%s", opts);
    while ((opt = getopt(argc, argv, optstring)) != -1) {
        if (opt == 'x') {
            lb->tl = optarg;
        } else if (opt == 'd') {
            lb->dev = optarg;
        } else if ((opt != '?') && (lb->opt_cb != NULL)) {
            lb->opt_cb(opt, optarg);
        } else {
            lb->tl = NULL;
            break;
        }
    }
    if (lb->tl == NULL) {
        fprintf(stderr, "usage: %s -x TL [-d DEV]\n", argv[0]);
        return 2;
    }
    ret = qpx_uct_md_open(lb->tl, lb->dev, &comp, &lb->md);
    if (ret != 0) {
        return ret;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = lb->tl;
    params.mode.device.dev_name = lb->dev;
    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                  &lb->async) != UCS_OK) ||
        (uct_worker_create(lb->async, UCS_THREAD_MODE_SINGLE,
                           &lb->worker) != UCS_OK) ||
        (uct_md_iface_config_read(lb->md, lb->tl, NULL, NULL,
                                  &config) != UCS_OK)) {
        fprintf(stderr, "%s: no worker or configuration\n", lb->tl);
        return 1;
    }
    ret = (uct_iface_open(lb->md, lb->worker, &params, config,
                          &lb->send_iface) != UCS_OK) ||
          (uct_iface_open(lb->md, lb->worker, &params, config,
                          &lb->recv_iface) != UCS_OK) ||
          (uct_iface_query(lb->send_iface, &lb->attr) != UCS_OK) ||
          (posix_memalign(&lb->buf, 4096, lb->buf_size) != 0) ||
          (uct_md_mem_reg(lb->md, lb->buf, lb->buf_size,
                          UCT_MD_MEM_ACCESS_ALL, &lb->memh) != UCS_OK);
    uct_config_release(config);
    if (ret) {
        fprintf(stderr, "%s: the interfaces or the buffer cannot be "
                "opened\n", lb->tl);
        return 1; /* the process exits: nothing to undo */
    }
    uct_iface_progress_enable(lb->send_iface, UCT_PROGRESS_SEND |
                                              UCT_PROGRESS_RECV);
    uct_iface_progress_enable(lb->recv_iface, UCT_PROGRESS_SEND |
                                              UCT_PROGRESS_RECV);
    return 0;
}

void qpx_uct_loopback_close(qpx_uct_loopback_t *lb)
{
    uct_md_mem_dereg(lb->md, lb->memh);
    free(lb->buf);
    uct_iface_close(lb->recv_iface);
    uct_iface_close(lb->send_iface);
    uct_worker_destroy(lb->worker);
    ucs_async_context_destroy(lb->async);
    uct_md_close(lb->md);
}

int qpx_uct_xfer(int fd, void *p, size_t len, int out)
{
    ssize_t n;

    while (len > 0) {
        n = out ? write(fd, p, len) : read(fd, p, len);
        if (n <= 0) {
            return -1;
        }
        p    = (char*)p + n;
        len -= n;
    }
    return 0;
}


int qpx_uct_npass, qpx_uct_nfail;

void qpx_uct_report(int ok, const char *fmt, ...)
{
    va_list ap;

    printf("%s: ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    ok ? ++qpx_uct_npass : ++qpx_uct_nfail;
}
