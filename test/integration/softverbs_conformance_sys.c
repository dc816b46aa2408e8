/*
 * softverbs conformance: what the host and the installed libraries bring.
 * Yama refusing process_vm_*v between peers (injected), the mlx5dv
 * functions softverbs does not implement, reached at their exact symbol
 * versions, and the registry's memory given back whole after many small
 * objects.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>


/*
 * Yama refusing process_vm_*v (kernel.yama.ptrace_scope, a peer that did not
 * allow us), injected: with SVT_INJECT_EPERM=1 in a rank's environment the
 * suite's own process_vm_readv/writev fail with EPERM. The softverbs library
 * binds these before libc's: the executable is linked with -rdynamic and is
 * first in the lookup scope.
 */
static int svt_eperm_injected(void)
{
    static int injected = -1;
    const char *s;

    if (injected < 0) {
        s        = getenv("SVT_INJECT_EPERM");
        injected = (s != NULL) && !strcmp(s, "1");
    }
    return injected;
}

static ssize_t svt_process_vm(long nr, pid_t pid, const struct iovec *lvec,
                              unsigned long liovcnt, const struct iovec *rvec,
                              unsigned long riovcnt, unsigned long flags)
{
    if (svt_eperm_injected()) {
        errno = EPERM;
        return -1;
    }
    return syscall(nr, pid, lvec, liovcnt, rvec, riovcnt, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *lvec,
                          unsigned long liovcnt, const struct iovec *rvec,
                          unsigned long riovcnt, unsigned long flags)
{
    return svt_process_vm(SYS_process_vm_writev, pid, lvec, liovcnt, rvec,
                          riovcnt, flags);
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *lvec,
                         unsigned long liovcnt, const struct iovec *rvec,
                         unsigned long riovcnt, unsigned long flags)
{
    return svt_process_vm(SYS_process_vm_readv, pid, lvec, liovcnt, rvec,
                          riovcnt, flags);
}

/*
 * Every process_vm_*v refused with EPERM (as by Yama): an RDMA WRITE and,
 * on another QP, an RDMA READ complete at once with a remote operational
 * error (not after the transport retries, not never), and the cause,
 * naming kernel.yama.ptrace_scope, is on stderr once (arg 0). A SEND too
 * large for the CQ slot: the requester gets the same error, the receive WQE
 * completes with IBV_WC_GENERAL_ERR (arg 1).
 */
static void svt_case_yama_eperm(svt_proc_t *p)
{
    svt_dev_t dev;
    svt_ep_t ep, ep2;
    svt_ep_opts_t o;
    char text[4096];
    int saved, n;

    svt_dev_open(&dev);
    svt_ep_opts_init(&o, IBV_QPT_RC);
    svt_ep_pair(p, !p->rank, &dev, &o, &ep);
    if (p->arg == 0) {
        svt_ep_pair(p, !p->rank, &dev, &o, &ep2);
    }
    if (p->rank == 1) {
        if (p->arg == 1) {
            svt_post_recv(&ep, 0, 8192, 1);
        }
        svt_sync(p, 0);
        if (p->arg == 1) {
            svt_expect_wc(ep.cq, IBV_WC_GENERAL_ERR, -1, 1, NULL);
        }
        svt_sync(p, 0);
        return;
    }
    svt_sync(p, 1);
    saved = svt_stderr_begin();
    if (p->arg == 0) {
        SVT_OK(svt_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 4096, svt_raddr(&ep, 0),
                             ep.remote.rkey, 0, IBV_SEND_SIGNALED, 1));
        svt_expect_wc(ep.cq, IBV_WC_REM_OP_ERR, -1, 1, NULL);
        SVT_OK(svt_post_send(&ep2, IBV_WR_RDMA_READ, 0, 4096,
                             svt_raddr(&ep2, 0), ep2.remote.rkey, 0,
                             IBV_SEND_SIGNALED, 2));
        svt_expect_wc(ep2.cq, IBV_WC_REM_OP_ERR, -1, 2, NULL);
    } else {
        SVT_OK(svt_post_send(&ep, IBV_WR_SEND, 0, 8192, 0, 0, 0,
                             IBV_SEND_SIGNALED, 3));
        svt_expect_wc(ep.cq, IBV_WC_REM_OP_ERR, -1, 3, NULL);
    }
    n = svt_stderr_end(saved,
                       "Operation not permitted (kernel.yama.ptrace_scope=",
                       text, sizeof(text));
    SVT_CHECK(n == 1, "the EPERM cause (naming kernel.yama.ptrace_scope) is "
              "on stderr %d times, expected once; stderr:\n%s", n, text);
    svt_sync(p, 1);
}

/*
 * libmlx5 entry points softverbs does not implement fail as rdma-core's do
 * on a device without the feature, and exist at rdma-core's versions: int
 * results EOPNOTSUPP, pointers NULL with errno EOPNOTSUPP.
 */
static void svt_case_mlx5dv_unsupported(svt_proc_t *p)
{
    __typeof__(mlx5dv_reserved_qpn_alloc) *qpn_alloc;
    __typeof__(mlx5dv_dr_domain_create) *domain_create;
    __typeof__(mlx5dv_init_obj) *init_obj_1_0;
    struct mlx5dv_obj obj;
    svt_dev_t dev;
    uint32_t qpn = 0;
    void *h;
    int ret;

    svt_dev_open(&dev);
    h = dlopen("libmlx5.so.1", RTLD_NOW | RTLD_LOCAL);
    SVT_CHECK(h != NULL, "dlopen(libmlx5.so.1): %s", dlerror());
    qpn_alloc     = (__typeof__(qpn_alloc))
                    dlvsym(h, "mlx5dv_reserved_qpn_alloc", "MLX5_1.18");
    domain_create = (__typeof__(domain_create))
                    dlvsym(h, "mlx5dv_dr_domain_create", "MLX5_1.10");
    init_obj_1_0  = (__typeof__(init_obj_1_0))
                    dlvsym(h, "mlx5dv_init_obj", "MLX5_1.0");
    SVT_CHECK((qpn_alloc != NULL) && (domain_create != NULL) &&
              (init_obj_1_0 != NULL), "libmlx5 lacks a symbol: %s",
              dlerror());
    ret = qpn_alloc(dev.ctx, &qpn);
    SVT_CHECK(ret == EOPNOTSUPP, "mlx5dv_reserved_qpn_alloc returned %d, "
              "expected EOPNOTSUPP", ret);
    errno = 0;
    SVT_CHECK(domain_create(dev.ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX) == NULL,
              "mlx5dv_dr_domain_create succeeded");
    SVT_CHECK(errno == EOPNOTSUPP, "mlx5dv_dr_domain_create: errno %d, "
              "expected EOPNOTSUPP", errno);
    memset(&obj, 0, sizeof(obj));
    ret = init_obj_1_0(&obj, 0);
    SVT_CHECK(ret == EOPNOTSUPP, "mlx5dv_init_obj@MLX5_1.0 returned %d, "
              "expected EOPNOTSUPP", ret);
    dlclose(h);
    svt_dev_close(&dev);
}


/*
 * The registry's arena after many small queues: freed memory serves one
 * large queue again. The arena (SOFTVERBS_SHM_MB=64 for this case) is
 * filled with CQs whose rings take 256 KiB blocks, all destroyed but one
 * small CQ that stays (so the arena is never simply started again); after
 * the quarantine, a CQ whose ring needs a quarter of the arena must be
 * created. A softverbs that kept freed blocks in their size class only
 * answered ENOMEM ("registry arena full") with the arena all but empty.
 */
static void svt_case_arena_merge(svt_proc_t *p)
{
    struct ibv_cq *keep, *big, *cqs[1024];
    struct ibv_wc wc;
    svt_dev_t dev;
    int n, i, big_cqe;

    svt_dev_open(&dev);
    SVT_NN(keep, ibv_create_cq(dev.ctx, 1, NULL, NULL, 0));
    for (n = 0; n < 1024; ++n) {
        cqs[n] = ibv_create_cq(dev.ctx, 511, NULL, NULL, 0);
        if (cqs[n] == NULL) {
            break;
        }
    }
    SVT_CHECK((n > 16) && (n < 1024) && (errno == ENOMEM), "filled the arena "
              "with %d CQs of 511 entries (errno %d): expected ENOMEM after "
              "more than 16", n, errno);
    for (i = 0; i < n; ++i) {
        SVT_OK(ibv_destroy_cq(cqs[i]));
    }
    svt_sleep_ms(1100); /* the quarantine of freed rings */

    /* n blocks of 256 KiB were free: a ring of n/4 of them, in one piece */
    for (big_cqe = 1; big_cqe * 2 <= n * 1024 / 4; big_cqe *= 2)
        ;
    big = ibv_create_cq(dev.ctx, big_cqe / 2 - 1, NULL, NULL, 0);
    SVT_CHECK(big != NULL, "a CQ of %d entries (%d KiB) after %d CQs of "
              "256 KiB were destroyed: %s", big_cqe / 2 - 1, big_cqe / 8, n,
              strerror(errno));
    SVT_CHECK(ibv_poll_cq(big, 1, &wc) == 0, "the new CQ polls empty");
    SVT_OK(ibv_destroy_cq(big));
    SVT_OK(ibv_destroy_cq(keep));
    svt_dev_close(&dev);
}


/*
 * sysfs: libibverbs names it with ibv_get_sysfs_path() (rdma-core
 * libibverbs/sysfs.c), and a kernel RDMA device is there under
 * class/infiniband/<name> (ib_core: node_guid, ports/<p>/{state,lid,
 * gids/<i>,...}, drivers/infiniband/core/sysfs.c) and
 * class/infiniband_verbs/uverbs<i> (ibdev). Open MPI's openib BTL refuses
 * to start unless <sysfs>/class/infiniband is a directory
 * (opal_common_verbs_check_basics), which this host, without a kernel RDMA
 * device, did not have. softverbs gives its own tree (sv_misc.c): the
 * devices' files agree with the verbs queries, their ibdev_path and
 * dev_path lie in it, and the system's other entries are reachable.
 */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size);

static void svt_sysfs_expect(const char *dir, const char *file,
                             const char *want)
{
    char buf[128];
    int n = ibv_read_sysfs_file(dir, file, buf, sizeof(buf));

    SVT_CHECK((n > 0) && !strcmp(buf, want), "%s/%s: '%s' (%d), expected "
              "'%s'", dir, file, (n > 0) ? buf : "", n, want);
}

static void svt_case_sysfs(svt_proc_t *p)
{
    const char *root = ibv_get_sysfs_path();
    struct ibv_device **list;
    struct ibv_context *ctx;
    struct ibv_port_attr pa;
    char dir[512], want[128];
    union ibv_gid gid;
    struct stat st;
    __be64 guid;
    int n, i, port, k, len;

    (void)p;
    SVT_CHECK(root != NULL, "ibv_get_sysfs_path() gave NULL");
    snprintf(dir, sizeof(dir), "%s/class/infiniband", root);
    SVT_CHECK((stat(dir, &st) == 0) && S_ISDIR(st.st_mode), "%s is not a "
              "directory: Open MPI's openib BTL would not start", dir);
    snprintf(dir, sizeof(dir), "%s/class/net", root);
    SVT_CHECK((access("/sys/class/net", F_OK) != 0) ||
              (stat(dir, &st) == 0), "%s: the system's sysfs entries are "
              "not reachable through ibv_get_sysfs_path()", dir);
    SVT_NN(list, ibv_get_device_list(&n));
    SVT_CHECK(n > 0, "no devices");
    for (i = 0; i < n; ++i) {
        snprintf(dir, sizeof(dir), "%s/class/infiniband/%s", root,
                 ibv_get_device_name(list[i]));
        SVT_CHECK(!strcmp(list[i]->ibdev_path, dir), "ibdev_path %s, "
                  "expected %s", list[i]->ibdev_path, dir);
        snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs/%s", root,
                 list[i]->dev_name);
        SVT_CHECK(!strcmp(list[i]->dev_path, dir), "dev_path %s, expected "
                  "%s", list[i]->dev_path, dir);
        svt_sysfs_expect(dir, "ibdev", ibv_get_device_name(list[i]));
        svt_sysfs_expect(list[i]->ibdev_path, "node_type", "1: CA");
        guid = ibv_get_device_guid(list[i]);
        snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x",
                 (unsigned)(be64toh(guid) >> 48) & 0xffff,
                 (unsigned)(be64toh(guid) >> 32) & 0xffff,
                 (unsigned)(be64toh(guid) >> 16) & 0xffff,
                 (unsigned)be64toh(guid) & 0xffff);
        svt_sysfs_expect(list[i]->ibdev_path, "node_guid", want);
        SVT_NN(ctx, ibv_open_device(list[i]));
        for (port = 1; ibv_query_port(ctx, port, &pa) == 0; ++port) {
            SVT_OK(ibv_query_gid(ctx, port, 0, &gid));
            snprintf(dir, sizeof(dir), "ports/%d/lid", port);
            snprintf(want, sizeof(want), "0x%x", pa.lid);
            svt_sysfs_expect(list[i]->ibdev_path, dir, want);
            snprintf(dir, sizeof(dir), "ports/%d/state", port);
            svt_sysfs_expect(list[i]->ibdev_path, dir, "4: ACTIVE");
            snprintf(dir, sizeof(dir), "ports/%d/link_layer", port);
            svt_sysfs_expect(list[i]->ibdev_path, dir, "InfiniBand");
            for (k = 0, len = 0; k < 8; ++k) {
                len += snprintf(want + len, sizeof(want) - len, "%s%02x%02x",
                                k ? ":" : "", gid.raw[2 * k],
                                gid.raw[2 * k + 1]);
            }
            snprintf(dir, sizeof(dir), "ports/%d/gids/0", port);
            svt_sysfs_expect(list[i]->ibdev_path, dir, want);
        }
        SVT_CHECK(port > 1, "%s: no port", ibv_get_device_name(list[i]));
        SVT_OK(ibv_close_device(ctx));
    }
    ibv_free_device_list(list);
}

const svt_case_t svt_cases_sys[] = {
    {"err/yama_eperm_write_read", svt_case_yama_eperm, 2, 0, 0,
     "SVT_INJECT_EPERM=1"},
    {"err/yama_eperm_send", svt_case_yama_eperm, 2, 1, 0, "SVT_INJECT_EPERM=1"},
    {"err/mlx5dv_unsupported", svt_case_mlx5dv_unsupported, 1},
    {"sys/arena_merge", svt_case_arena_merge, 1, 0, 0, "SOFTVERBS_SHM_MB=64"},
    {"sys/sysfs_devices", svt_case_sysfs, 1},
    {"sys/sysfs_devices_ports", svt_case_sysfs, 1, 0, 0,
     "SOFTVERBS_NUM_DEVICES=2 SOFTVERBS_NUM_PORTS=3"},
    {NULL}
};
