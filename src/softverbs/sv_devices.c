/*
 * softverbs devices: the device table and discovery. From SOFTVERBS_*
 * settings, once the registry is attached (its init hook), the devices of
 * this host are named and listed (ibv_get_device_list); a LID finds its
 * device (sv_device_by_lid), for the requester and the responder. A
 * slot's GUID is a function of its number (sv_device_guid, sv.h). Contexts and queries are in sv_dev.c,
 * above this file; the sysfs tree the devices' paths name is built by
 * sv_misc.c, above both.
 */
#include "sv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

/* the version of the sysfs tree's layout, in its directory's name */
#define SV_SYSFS_FORMAT "v3"

static struct sv_device sv_devs[SV_MAX_DEVS];
static struct ibv_device *sv_dev_list[SV_MAX_DEVS + 1];

/*
 * The device list, from SOFTVERBS_NUM_DEVICES, SOFTVERBS_NUM_PORTS and
 * SOFTVERBS_FIRST_DEVICE: built once, when the registry is first attached
 * (sv_shm_init). The registry has SV_MAX_DEVS device slots; a process owns
 * slots first .. first + n - 1, named softverbs0.. as a host names its own
 * HCAs. Processes that share a registry but own other slots are other
 * hosts (contrib/cluster-one-host.sh): their devices are reached by LID
 * (slot x ports + port), as a fabric's, and never listed here. Every
 * slot's GUID is known (from its number), so that GIDs of other hosts'
 * ports are too.
 */
/* SOFTVERBS_FIRST_DEVICE: a slot number, or HOST=SLOT,... picked by this
 * host's name (gethostname: the hosts of one machine differ by their UTS
 * namespaces), so that one environment serves every host of a job */
static int sv_devices_first(void)
{
    const char *s = getenv(SOFTVERBS_ENV_FIRST_DEVICE);
    char host[256], *end;
    const char *p, *eq;
    size_t len;
    long slot;

    if ((s == NULL) || (strchr(s, '=') == NULL)) {
        return (int)sv_env_uint(SOFTVERBS_ENV_FIRST_DEVICE, 0,
                                SV_MAX_DEVS - 1, 0, 0);
    }
    if (gethostname(host, sizeof(host)) != 0) {
        host[0] = '\0';
    }
    host[sizeof(host) - 1] = '\0';
    for (p = s; *p != '\0'; p = (*end == ',') ? end + 1 : end) {
        eq = strchr(p, '=');
        if (eq == NULL) {
            break;
        }
        len  = (size_t)(eq - p);
        slot = strtol(eq + 1, &end, 10);
        if ((end == eq + 1) || ((*end != ',') && (*end != '\0')) ||
            (slot < 0) || (slot >= SV_MAX_DEVS)) {
            break;
        }
        if ((len == strlen(host)) && !strncmp(p, host, len)) {
            return (int)slot;
        }
        if (*end == '\0') {
            sv_env_bad(SOFTVERBS_ENV_FIRST_DEVICE, s,
                       "a slot for this host's name", "0");
            return 0;
        }
    }
    sv_env_bad(SOFTVERBS_ENV_FIRST_DEVICE, s,
               "a slot 0..7 or HOST=SLOT,... entries", "0");
    return 0;
}

static void sv_devices_init(void)
{
    int first = sv_devices_first();
    int n     = (int)sv_env_uint(SOFTVERBS_ENV_NUM_DEVICES, 0,
                                 SV_MAX_DEVS - first, 1, 0);
    char sysfs[256];
    int i;

    sv_g.num_ports = (int)sv_env_uint(SOFTVERBS_ENV_NUM_PORTS, 1, SV_MAX_PORTS,
                                      1, 0);
    sv_gid_init(sv_g.num_ports);
    /* the devices' sysfs directories, as libibverbs names them under
     * ibv_get_sysfs_path(): softverbs' tree (sv_misc.c) */
    sv_g.first_dev = first;
    sv_sysfs_root(sysfs, sizeof(sysfs), n, sv_g.num_ports);
    for (i = 0; i < SV_MAX_DEVS; i++) {
        struct sv_device *d = &sv_devs[i];
        int local           = i - first;

        memset(d, 0, sizeof(*d));
        d->index                = i;
        d->ibdev.node_type      = IBV_NODE_CA;
        d->ibdev.transport_type = IBV_TRANSPORT_IB;
        if ((local < 0) || (local >= n)) {
            continue; /* another host's slot, or none */
        }
        snprintf(d->ibdev.name, sizeof(d->ibdev.name), "softverbs%d", local);
        snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d",
                 local);
        snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
                 "%.200s/class/infiniband_verbs/uverbs%d", sysfs, local);
        snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
                 "%.200s/class/infiniband/softverbs%d", sysfs, local);
        sv_dev_list[local] = &d->ibdev;
    }
    sv_dev_list[n] = NULL;
    sv_g.num_devs  = n;
    sv_gid_publish();
}

/* Runs when libibverbs.so.1 is loaded, before any verbs or stats call can
 * attach the registry: the registry calls back through this hook, and so
 * depends on no device code */
static void __attribute__((constructor)) sv_devices_register(void)
{
    sv_shm_set_init_hook(sv_devices_init);
}

struct sv_device *sv_device_by_lid(uint16_t lid)
{
    int slot;

    if ((lid == 0) || (lid > SV_MAX_DEVS * sv_g.num_ports)) {
        return NULL;
    }
    slot = (lid - 1) / sv_g.num_ports;
    /* a slot some process of the registry owns (this host's or another's,
     * ibv_get_device_list); relaxed: set once, before any QP of it */
    if (!(__atomic_load_n(&sv_g.shm->devs_present, __ATOMIC_RELAXED) &
          (1u << slot))) {
        return NULL;
    }
    return &sv_devs[slot];
}

/* One of this host's devices, as ibv_get_device_list hands them out (a
 * pointer into the table; another host's slot is not) */
int sv_device_is_listed(const struct sv_device *dev)
{
    return (dev >= sv_devs + sv_g.first_dev) &&
           (dev < sv_devs + sv_g.first_dev + sv_g.num_devs);
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    int ret;

    ret = sv_shm_init();
    if (ret != 0) {
        errno = ret;
        return NULL;
    }
    /* this host's slots exist from now on (sv_device_by_lid of any host);
     * relaxed: a flag, read before any packet to them */
    __atomic_fetch_or(&sv_g.shm->devs_present,
                      ((1u << sv_g.num_devs) - 1) << sv_g.first_dev,
                      __ATOMIC_RELAXED);
    list = calloc(sv_g.num_devs + 1, sizeof(*list));
    if (list == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(list, sv_dev_list, sv_g.num_devs * sizeof(*list));
    if (num_devices != NULL) {
        *num_devices = sv_g.num_devs;
    }
    return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(sv_device_guid(((struct sv_device *)device)->index));
}

/* -1, as ibv_get_device_index(3) answers where the kernel has no device
 * indexes: no kernel RDMA netlink family knows softverbs devices, and an
 * index made UCX 1.19+ query one per device (uct_ib_device_is_smi),
 * logging an error (EPROTONOSUPPORT) in every process */
SV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
    return -1;
}

/* The caller's SYSFS_PATH, as libibverbs takes it, or NULL */
const char *sv_sysfs_env(char *buf, size_t len)
{
    const char *env = (getuid() == geteuid()) ? getenv("SYSFS_PATH") : NULL;
    size_t n;

    if (env == NULL) {
        return NULL;
    }
    snprintf(buf, len, "%s", env);
    for (n = strlen(buf); (n > 0) && (buf[n - 1] == '/'); n--) {
        buf[n - 1] = '\0';
    }
    return buf;
}

/* The directory of softverbs' sysfs tree for this device set (built by
 * sv_misc.c; the devices' paths name it); SYSFS_PATH when set */
void sv_sysfs_root(char *buf, size_t len, int ndevs, int nports)
{
    char dir[256], *slash;

    if (sv_sysfs_env(buf, len) != NULL) {
        return;
    }
    snprintf(dir, sizeof(dir), "%s", sv_g.shm_path);
    slash = strrchr(dir, '/');
    if (slash == NULL) {
        snprintf(dir, sizeof(dir), ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    /* the ports' link layers and GIDs are in the name too (sv_gid_tag):
     * processes with other settings or in another network namespace
     * must not share a tree */
    snprintf(buf, len, "%s%ssoftverbs-sysfs-%u-%dx%d-%08x-" SV_SYSFS_FORMAT
             "%s", dir, (dir[strlen(dir) - 1] == '/') ? "" : "/",
             (unsigned)getuid(), ndevs, nports, (unsigned)sv_gid_tag(nports),
             sv_g.mlx5 ? "-mlx5" : "");
}
