/*
 * softverbs: entry points that real clients import but that have little
 * meaning on a soft device (sysfs, fork support, kernel ABI copies, ECE,
 * object import).
 */
#include "sv.h"
#include "sv_stub.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>
#include <infiniband/sa.h>

/*
 * sysfs. A kernel RDMA device has a directory under
 * <sysfs>/class/infiniband (ib_core's device: node_type, node_guid,
 * fw_ver, ports/<p>/{state,lid,rate,gids/<i>,pkeys/<i>,...}) and its verbs
 * node one under <sysfs>/class/infiniband_verbs; libibverbs names <sysfs>
 * with ibv_get_sysfs_path(): SYSFS_PATH (not for a set-uid program,
 * trailing slashes dropped) or /sys (rdma-core 44 libibverbs/sysfs.c).
 * Programs look there: Open MPI's openib BTL gives up at once, with no
 * word, unless <sysfs>/class/infiniband is a directory
 * (opal_common_verbs_check_basics, "the RDMA drivers are not loaded"); on
 * this host, with no kernel RDMA device, it was not, and openib's init
 * "returned failure". softverbs has no kernel device, so it makes the
 * tree its devices would have:
 *
 *   <directory of SOFTVERBS_SHM>/softverbs-sysfs-<uid>-<devices>x<ports>-<tag>-v2
 *     class/infiniband/softverbs<i>/...   the kernel's ib_core files, in
 *                                         its formats (drivers/infiniband/
 *                                         core/sysfs.c), from the same
 *                                         queries ibv_query_* answer
 *     class/infiniband_verbs/abi_version, uverbs<i>/{ibdev,abi_version,dev}
 *                                         (uverbs_main.c)
 *     every other entry of the system's sysfs and of its class/:
 *                                         a symbolic link to it
 *
 * and ibv_get_sysfs_path() gives that directory; the devices' ibdev_path
 * and dev_path point into it (sv_devices.c, sv_sysfs_root). The tree depends
 * only on the device and port counts, so processes share it: the first
 * ibv_get_sysfs_path() of a host builds it under a temporary name and
 * renames it into place (another process's rename wins; its tree is the
 * same). With SYSFS_PATH set, it is returned as libibverbs returns it and
 * no tree is made (the caller brings its own sysfs).
 *
 *   UNBUILT --ibv_get_sysfs_path--> READY   (built or found: the tree)
 *                               \-> SYSTEM  (SYSFS_PATH set: that)
 *                               \-> FAILED  (no devices, or the directory
 *                                            is not writable: the system's
 *                                            sysfs, and why on stderr once)
 */
enum sv_sysfs_state {
    SV_SYSFS_UNBUILT,
    SV_SYSFS_READY,
    SV_SYSFS_SYSTEM,
    SV_SYSFS_FAILED,
};

static pthread_once_t sv_sysfs_once = PTHREAD_ONCE_INIT;
static enum sv_sysfs_state sv_sysfs_state = SV_SYSFS_UNBUILT;
static char sv_sysfs_path[256];   /* what ibv_get_sysfs_path gives */
static char sv_sysfs_base[256];   /* the system's sysfs */

/* dir/name holding the formatted line, as a sysfs attribute reads */
static int __attribute__((format(printf, 3, 4)))
sv_sysfs_put(const char *dir, const char *name, const char *fmt, ...)
{
    char path[512];
    va_list ap;
    FILE *f;
    int ok;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "we");
    if (f == NULL) {
        return -1;
    }
    va_start(ap, fmt);
    ok = (vfprintf(f, fmt, ap) >= 0) && (fputc('\n', f) != EOF);
    va_end(ap);
    return ((fclose(f) == 0) && ok) ? 0 : -1;
}

static int __attribute__((format(printf, 2, 3)))
sv_sysfs_mkdir(char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, 512, fmt, ap);
    va_end(ap);
    return ((mkdir(path, 0755) == 0) || (errno == EEXIST)) ? 0 : -1;
}

/* A link in dst to every entry of src but "." and "..", and those that
 * skip() takes */
static int sv_sysfs_mirror(const char *src, const char *dst,
                           int (*skip)(const char *))
{
    char from[512], to[512];
    struct dirent *e;
    DIR *d = opendir(src);

    if (d == NULL) {
        return (errno == ENOENT) ? 0 : -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            skip(e->d_name)) {
            continue;
        }
        snprintf(from, sizeof(from), "%s/%s", src, e->d_name);
        snprintf(to, sizeof(to), "%s/%s", dst, e->d_name);
        if (symlink(from, to) != 0) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    return 0;
}

static int sv_sysfs_skip_top(const char *name)
{
    return !strcmp(name, "class");
}

/* the kernel's RDMA classes (infiniband, infiniband_verbs, _mad, _cm):
 * softverbs' devices stand in for them */
static int sv_sysfs_skip_class(const char *name)
{
    return !strncmp(name, "infiniband", 10);
}

static int sv_sysfs_rm(const char *path, const struct stat *st, int type,
                       struct FTW *ftw)
{
    (void)st; (void)type; (void)ftw;
    remove(path);
    return 0;
}

/* ib_core's formats: a GUID as four groups (node_guid_show), a GID as
 * %pI6 (show_port_gid) */
static void sv_sysfs_guid(char *buf, size_t len, __be64 guid)
{
    uint64_t g = be64toh(guid);

    snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
             (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
             (unsigned)g & 0xffff);
}

static void sv_sysfs_gid(char *buf, size_t len, const union ibv_gid *gid)
{
    int i, n = 0;

    for (i = 0; i < 16; i += 2) {
        n += snprintf(buf + n, len - n, "%s%02x%02x", i ? ":" : "",
                      gid->raw[i], gid->raw[i + 1]);
    }
}

/* rate_show: the lane speed times the width, "100 Gb/sec (4X EDR)" */
static void sv_sysfs_rate(char *buf, size_t len, const struct ibv_port_attr *p)
{
    static const struct { uint8_t speed; int rate10; const char *name; }
        speeds[] = {
            {1, 25, " SDR"}, {2, 50, " DDR"}, {4, 100, " QDR"},
            {8, 103, " FDR10"}, {16, 140, " FDR"}, {32, 250, " EDR"},
            {64, 500, " HDR"}, {128, 1000, " NDR"},
        };
    static const struct { uint8_t width; int lanes; const char *name; }
        widths[] = {{1, 1, "1X"}, {2, 4, "4X"}, {4, 8, "8X"}, {8, 12, "12X"},
                    {16, 2, "2X"}};
    int rate10 = 25, lanes = 1;
    const char *sn = " SDR", *wn = "1X";
    size_t i;

    for (i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++) {
        if (speeds[i].speed == p->active_speed) {
            rate10 = speeds[i].rate10;
            sn     = speeds[i].name;
        }
    }
    for (i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
        if (widths[i].width == p->active_width) {
            lanes = widths[i].lanes;
            wn    = widths[i].name;
        }
    }
    rate10 *= lanes;
    snprintf(buf, len, "%d%s Gb/sec (%s%s)", rate10 / 10,
             (rate10 % 10) ? ".5" : "", wn, sn);
}

/* A port's gids/<i>, gid_attrs/types/<i> and gid_attrs/ndevs/<i>, as
 * ib_core shows them (show_port_gid, show_port_gid_attr_gid_type: "IB/RoCE
 * v1" or "RoCE v2"; ndevs only for a GID bound to a netdev); empty entries
 * read as the zero GID */
static int sv_sysfs_gids(struct ibv_context *ctx, uint8_t port,
                         const char *pdir, int len)
{
    char sub[512], buf[64], name[16];
    struct ibv_gid_entry e;
    union ibv_gid gid;
    int i, ret;

    if ((sv_sysfs_mkdir(sub, "%s/gids", pdir) != 0) ||
        (sv_sysfs_mkdir(sub, "%s/gid_attrs", pdir) != 0) ||
        (sv_sysfs_mkdir(sub, "%s/gid_attrs/types", pdir) != 0) ||
        (sv_sysfs_mkdir(sub, "%s/gid_attrs/ndevs", pdir) != 0)) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        snprintf(name, sizeof(name), "%d", i);
        ret = ibv_query_gid_ex(ctx, port, i, &e, 0);
        if (ret == ENODATA) {
            memset(&gid, 0, sizeof(gid));
        } else if (ret != 0) {
            return -1;
        } else {
            gid = e.gid;
        }
        sv_sysfs_gid(buf, sizeof(buf), &gid);
        if ((sv_sysfs_mkdir(sub, "%s/gids", pdir) != 0) ||
            (sv_sysfs_put(sub, name, "%s", buf) != 0)) {
            return -1;
        }
        if (ret != 0) {
            continue;
        }
        if ((sv_sysfs_mkdir(sub, "%s/gid_attrs/types", pdir) != 0) ||
            (sv_sysfs_put(sub, name, "%s",
                          (e.gid_type == IBV_GID_TYPE_ROCE_V2) ? "RoCE v2" :
                          "IB/RoCE v1") != 0)) {
            return -1;
        }
        if ((e.ndev_ifindex != 0) &&
            ((sv_sysfs_mkdir(sub, "%s/gid_attrs/ndevs", pdir) != 0) ||
             (sv_sysfs_put(sub, name, "%s", sv_gid_netdev(port)) != 0))) {
            return -1;
        }
    }
    return 0;
}

/*
 * The mlx5 personality (SOFTVERBS_MLX5=1): the device sits on a "PCI
 * function" with a ConnectX-5's identity (vendor 0x15b3, device 0x1017), as
 * a kernel mlx5 device's class/infiniband/<name> links to
 * devices/<pci path>/<bdf>/infiniband/<name>. UCX finds the function two
 * directories up from that link's target (uct_ib_device_get_sysfs_path) and
 * reads its vendor and device files to choose the mlx5 transports; the
 * function's name (sv-pci<i>) is no BDF, so UCX's topology does not take it
 * for a device of the host. It lives under sv-devices/, since devices/ is
 * a link to the system's own. Without the personality, class/infiniband/
 * <name> stays a plain directory (no PCI identity: a generic HCA).
 */
static int sv_sysfs_pci(const char *root, int i, const char *name)
{
    char dir[512], link[1024], target[512];

    if (!sv_g.mlx5) {
        return 0;
    }
    if ((sv_sysfs_mkdir(dir, "%s/sv-devices", root) != 0) ||
        (sv_sysfs_mkdir(dir, "%s/sv-devices/sv-pci%d", root, i) != 0) ||
        (sv_sysfs_put(dir, "vendor", "0x%04x", 0x15b3) != 0) ||
        (sv_sysfs_put(dir, "device", "0x%04x", 0x1017) != 0) ||
        (sv_sysfs_mkdir(dir, "%s/sv-devices/sv-pci%d/infiniband", root, i) !=
         0) ||
        (sv_sysfs_mkdir(dir, "%s/sv-devices/sv-pci%d/infiniband/%s", root, i,
                        name) != 0)) {
        return -1;
    }
    snprintf(target, sizeof(target),
             "../../sv-devices/sv-pci%d/infiniband/%s", i, name);
    snprintf(link, sizeof(link), "%s/class/infiniband/%s", root, name);
    return ((symlink(target, link) == 0) || (errno == EEXIST)) ? 0 : -1;
}

/* One device's ib_core and uverbs directories under root */
static int sv_sysfs_device(const char *root, struct ibv_device *dev, int i,
                           const char *host)
{
    static const char *const port_states[] = {
        "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
    };
    static const char *const phys_states[] = {
        "<unknown>", "Sleep", "Polling", "Disabled",
        "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
        "Phy Test",
    };
    char dir[512], pdir[512], sub[512], buf[64];
    struct ibv_context *ctx = ibv_open_device(dev);
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    uint16_t pkey;
    int p, ret = -1;

    if (ctx == NULL) {
        return -1;
    }
    if ((ibv_query_device(ctx, &da) != 0) ||
        (sv_sysfs_pci(root, i, ibv_get_device_name(dev)) != 0) ||
        (sv_sysfs_mkdir(dir, "%s/class/infiniband/%s", root,
                        ibv_get_device_name(dev)) != 0) ||
        (sv_sysfs_put(dir, "node_type", "%d: %s", 1, "CA") != 0) ||
        (sv_sysfs_guid(buf, sizeof(buf), da.node_guid),
         sv_sysfs_put(dir, "node_guid", "%s", buf) != 0) ||
        (sv_sysfs_guid(buf, sizeof(buf), da.sys_image_guid),
         sv_sysfs_put(dir, "sys_image_guid", "%s", buf) != 0) ||
        (sv_sysfs_put(dir, "node_desc", "%.*s %s", 60, host,
                      ibv_get_device_name(dev)) != 0) ||
        (sv_sysfs_put(dir, "fw_ver", "%s", da.fw_ver) != 0) ||
        (sv_sysfs_put(dir, "hca_type", "MT%u", da.vendor_part_id) != 0) ||
        (sv_sysfs_put(dir, "hw_rev", "%x", da.hw_ver) != 0) ||
        (sv_sysfs_put(dir, "board_id", "SOFTVERBS_%04d", i) != 0) ||
        (sv_sysfs_mkdir(sub, "%s/ports", dir) != 0)) {
        goto out;
    }
    for (p = 1; p <= da.phys_port_cnt; p++) {
        if ((ibv_query_port(ctx, (uint8_t)p, &pa) != 0) ||
            (ibv_query_pkey(ctx, (uint8_t)p, 0, &pkey) != 0) ||
            (sv_sysfs_mkdir(pdir, "%s/ports/%d", dir, p) != 0) ||
            (sv_sysfs_put(pdir, "state", "%d: %s", pa.state,
                          port_states[pa.state <= 5 ? pa.state : 0]) != 0) ||
            (sv_sysfs_put(pdir, "phys_state", "%u: %s", pa.phys_state,
                          phys_states[pa.phys_state <= 7 ? pa.phys_state :
                                      0]) != 0) ||
            (sv_sysfs_put(pdir, "lid", "0x%x", pa.lid) != 0) ||
            (sv_sysfs_put(pdir, "lid_mask_count", "%d", pa.lmc) != 0) ||
            (sv_sysfs_put(pdir, "sm_lid", "0x%x", pa.sm_lid) != 0) ||
            (sv_sysfs_put(pdir, "sm_sl", "%d", pa.sm_sl) != 0) ||
            (sv_sysfs_put(pdir, "cap_mask", "0x%08x", pa.port_cap_flags) !=
             0) ||
            (sv_sysfs_rate(buf, sizeof(buf), &pa),
             sv_sysfs_put(pdir, "rate", "%s", buf) != 0) ||
            (sv_sysfs_put(pdir, "link_layer", "%s",
                          (pa.link_layer == IBV_LINK_LAYER_ETHERNET) ?
                          "Ethernet" : "InfiniBand") != 0) ||
            (sv_sysfs_mkdir(sub, "%s/pkeys", pdir) != 0) ||
            (sv_sysfs_put(sub, "0", "0x%04x", be16toh(pkey)) != 0) ||
            (sv_sysfs_gids(ctx, (uint8_t)p, pdir, pa.gid_tbl_len) != 0)) {
            goto out;
        }
    }
    /* the uverbs node (major 231, minors from 192, as the kernel's
     * IB_UVERBS_BASE_MINOR); the provider ABI of mlx5 is 1 */
    if ((sv_sysfs_mkdir(dir, "%s/class/infiniband_verbs/%s", root,
                        dev->dev_name) != 0) ||
        (sv_sysfs_put(dir, "ibdev", "%s", ibv_get_device_name(dev)) != 0) ||
        (sv_sysfs_put(dir, "abi_version", "%d", 1) != 0) ||
        (sv_sysfs_put(dir, "dev", "%d:%d", 231, 192 + i) != 0)) {
        goto out;
    }
    ret = 0;
out:
    ibv_close_device(ctx);
    return ret;
}

/* The tree, built at <root>.tmp.<pid> and renamed to root */
static int sv_sysfs_build(const char *root, struct ibv_device **list, int n)
{
    char tmp[512], src[512], dst[512], host[64] = "localhost";
    int i;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", root, (int)getpid());
    nftw(tmp, sv_sysfs_rm, 16, FTW_DEPTH | FTW_PHYS);
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(src, sizeof(src), "%s/class", sv_sysfs_base);
    if ((mkdir(tmp, 0755) != 0) ||
        (sv_sysfs_mirror(sv_sysfs_base, tmp, sv_sysfs_skip_top) != 0) ||
        (sv_sysfs_mkdir(dst, "%s/class", tmp) != 0) ||
        (sv_sysfs_mirror(src, dst, sv_sysfs_skip_class) != 0) ||
        (sv_sysfs_mkdir(dst, "%s/class/infiniband", tmp) != 0) ||
        (sv_sysfs_mkdir(dst, "%s/class/infiniband_verbs", tmp) != 0) ||
        /* IB_USER_VERBS_ABI_VERSION (show_abi_version) */
        (sv_sysfs_put(dst, "abi_version", "%d", 6) != 0)) {
        goto err;
    }
    for (i = 0; i < n; i++) {
        if (sv_sysfs_device(tmp, list[i], i, host) != 0) {
            goto err;
        }
    }
    if (rename(tmp, root) == 0) {
        return 0;
    }
    /* another process put its tree there first: the same tree */
    if ((errno == EEXIST) || (errno == ENOTEMPTY)) {
        nftw(tmp, sv_sysfs_rm, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
    }
err:
    i = errno;
    nftw(tmp, sv_sysfs_rm, 16, FTW_DEPTH | FTW_PHYS);
    errno = i;
    return -1;
}

static void sv_sysfs_init(void)
{
    struct ibv_device **list;
    char probe[512];
    struct stat st;
    int n = 0;

    if (sv_sysfs_env(sv_sysfs_path, sizeof(sv_sysfs_path)) != NULL) {
        sv_sysfs_state = SV_SYSFS_SYSTEM;
        return;
    }
    snprintf(sv_sysfs_base, sizeof(sv_sysfs_base), "/sys");
    snprintf(sv_sysfs_path, sizeof(sv_sysfs_path), "%s", sv_sysfs_base);
    list = ibv_get_device_list(&n);
    if (list == NULL) {
        /* no registry: the system's sysfs, as before any device */
        sv_sysfs_state = SV_SYSFS_FAILED;
        return;
    }
    sv_sysfs_root(sv_sysfs_path, sizeof(sv_sysfs_path), sv_g.num_devs,
                  sv_g.num_ports);
    snprintf(probe, sizeof(probe), "%s/class/infiniband_verbs/abi_version",
             sv_sysfs_path);
    if ((stat(probe, &st) == 0) ||
        (sv_sysfs_build(sv_sysfs_path, list, n) == 0)) {
        sv_sysfs_state = SV_SYSFS_READY;
    } else {
        sv_warn("cannot make the sysfs tree %s (%s); "
                "ibv_get_sysfs_path() gives %s, without the softverbs "
                "devices", sv_sysfs_path, strerror(errno), sv_sysfs_base);
        snprintf(sv_sysfs_path, sizeof(sv_sysfs_path), "%s", sv_sysfs_base);
        sv_sysfs_state = SV_SYSFS_FAILED;
    }
    ibv_free_device_list(list);
}

SV_EXPORT const char *ibv_get_sysfs_path(void)
{
    pthread_once(&sv_sysfs_once, sv_sysfs_init);
    return sv_sysfs_path;
}

/* as libibverbs' (ibv_read_sysfs_file_at): the trailing newline dropped;
 * contents that fill buf without one cannot be terminated: -1 */
SV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
                                  char *buf, size_t size)
{
    char *path;
    ssize_t len;
    int fd;

    if (asprintf(&path, "%s/%s", dir, file) < 0) {
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        return -1;
    }
    len = read(fd, buf, size);
    close(fd);
    if (len > 0) {
        if (buf[len - 1] == '\n') {
            buf[--len] = '\0';
        } else if ((size_t)len < size) {
            buf[len] = '\0';
        } else {
            return -1;
        }
    }
    return len;
}

SV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
                                        struct ibv_device *dev,
                                        const char *fnfmt, ...)
{
    errno = ENOENT;
    return -1;
}

SV_EXPORT int ibv_fork_init(void)
{
    /* no pinned pages: fork() is always safe */
    return 0;
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

SV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
    return 0;
}

SV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
    return 0;
}

SV_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
                                          struct ib_uverbs_ah_attr *src)
{
    memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
    dst->grh.flow_label    = src->grh.flow_label;
    dst->grh.sgid_index    = src->grh.sgid_index;
    dst->grh.hop_limit     = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid              = src->dlid;
    dst->sl                = src->sl;
    dst->src_path_bits     = src->src_path_bits;
    dst->static_rate       = src->static_rate;
    dst->is_global         = src->is_global;
    dst->port_num          = src->port_num;
}

SV_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
                                          struct ib_uverbs_qp_attr *src)
{
    dst->cur_qp_state        = src->cur_qp_state;
    dst->path_mtu            = src->path_mtu;
    dst->path_mig_state      = src->path_mig_state;
    dst->qkey                = src->qkey;
    dst->rq_psn              = src->rq_psn;
    dst->sq_psn              = src->sq_psn;
    dst->dest_qp_num         = src->dest_qp_num;
    dst->qp_access_flags     = src->qp_access_flags;
    dst->cap.max_send_wr     = src->max_send_wr;
    dst->cap.max_recv_wr     = src->max_recv_wr;
    dst->cap.max_send_sge    = src->max_send_sge;
    dst->cap.max_recv_sge    = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index          = src->pkey_index;
    dst->alt_pkey_index      = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining         = src->sq_draining;
    dst->max_rd_atomic       = src->max_rd_atomic;
    dst->max_dest_rd_atomic  = src->max_dest_rd_atomic;
    dst->min_rnr_timer       = src->min_rnr_timer;
    dst->port_num            = src->port_num;
    dst->timeout             = src->timeout;
    dst->retry_cnt           = src->retry_cnt;
    dst->rnr_retry           = src->rnr_retry;
    dst->alt_port_num        = src->alt_port_num;
    dst->alt_timeout         = src->alt_timeout;
}

/* The scalar fields of a path record, under the same names in the verbs
 * and the kernel ABI structures (the GIDs differ in type) */
#define SV_PATH_REC_COPY(_dst, _src) \
    do { \
        (_dst)->dlid = (_src)->dlid; \
        (_dst)->slid = (_src)->slid; \
        (_dst)->raw_traffic = (_src)->raw_traffic; \
        (_dst)->flow_label = (_src)->flow_label; \
        (_dst)->hop_limit = (_src)->hop_limit; \
        (_dst)->traffic_class = (_src)->traffic_class; \
        (_dst)->reversible = (_src)->reversible; \
        (_dst)->numb_path = (_src)->numb_path; \
        (_dst)->pkey = (_src)->pkey; \
        (_dst)->sl = (_src)->sl; \
        (_dst)->mtu_selector = (_src)->mtu_selector; \
        (_dst)->mtu = (_src)->mtu; \
        (_dst)->rate_selector = (_src)->rate_selector; \
        (_dst)->rate = (_src)->rate; \
        (_dst)->packet_life_time_selector = (_src)->packet_life_time_selector; \
        (_dst)->packet_life_time = (_src)->packet_life_time; \
        (_dst)->preference = (_src)->preference; \
    } while (0)

SV_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
                                           struct ib_user_path_rec *src)
{
    memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
    memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
    SV_PATH_REC_COPY(dst, src);
}

SV_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
                                         struct ibv_sa_path_rec *src)
{
    memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
    memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
    SV_PATH_REC_COPY(dst, src);
}

SV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
                                          struct ibv_ah_attr *attr,
                                          uint8_t eth_mac[6],
                                          uint16_t *vid)
{
    /* InfiniBand link layer: there is no Ethernet L2 address */
    return EINVAL;
}

SV_STUB_ERR(ibv_set_ece, struct ibv_qp *qp, struct ibv_ece *ece)

SV_STUB_ERR(ibv_query_ece, struct ibv_qp *qp, struct ibv_ece *ece)

SV_STUB_NULL(struct ibv_context *, ibv_import_device, int cmd_fd)

SV_STUB_NULL(struct ibv_pd *, ibv_import_pd, struct ibv_context *context,
             uint32_t pd_handle)

SV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SV_STUB_NULL(struct ibv_mr *, ibv_import_mr, struct ibv_pd *pd,
             uint32_t mr_handle)

SV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SV_STUB_NULL(struct ibv_dm *, ibv_import_dm, struct ibv_context *context,
             uint32_t dm_handle)

SV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
                                         enum ibv_wr_opcode op,
                                         uint32_t flags)
{
    /* payload is copied in order before the completion is pushed */
    return 1;
}

SV_STUB_NULL(struct ibv_mr *, ibv_reg_dmabuf_mr, struct ibv_pd *pd,
             uint64_t offset, size_t length, uint64_t iova, int fd, int access)

SV_EXPORT void __verbs_log(void *ctx, int level, const char *fmt, ...)
{
}
