/*
 * softverbs environment: the SOFTVERBS_* settings, parsed strictly; a
 * malformed value is named on stderr and the default used.
 */
#include "sv.h"
#include "sv_hash.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A malformed value is reported (whatever SOFTVERBS_DEBUG says: the user
 * asked for something that is not applied) and the default kept */
void sv_env_bad(const char *name, const char *value, const char *want,
                       const char *used)
{
    sv_warn("%s='%s' is not %s; using %s", name, value,
            want, used);
}

static double sv_env_prob(const char *name)
{
    const char *s = getenv(name);
    char *end;
    double v;

    if (s == NULL) {
        return 0.0;
    }
    v = strtod(s, &end);
    if ((end == s) || (*end != '\0') || !(v >= 0.0) || (v > 1.0)) {
        sv_env_bad(name, s, "a probability from 0 to 1", "0");
        return 0.0;
    }
    return v;
}

uint64_t sv_env_uint(const char *name, uint64_t min, uint64_t max,
                     uint64_t def, int clamp)
{
    const char *s = getenv(name);
    unsigned long long v;
    char want[64], used[32];
    char *end;

    if (s == NULL) {
        return def;
    }
    errno = 0;
    v     = strtoull(s, &end, 0);
    if ((end != s) && (*end == '\0') && (errno == 0) && (s[0] != '-') &&
        (v >= min) && ((v <= max) || clamp)) {
        return (v > max) ? max : v;
    }
    snprintf(want, sizeof(want), "a number from %llu to %llu",
             (unsigned long long)min, (unsigned long long)max);
    snprintf(used, sizeof(used), "%llu", (unsigned long long)def);
    sv_env_bad(name, s, want, used);
    return def;
}

/* A duration of SOFTVERBS_WIRE_DELAY: a number and its unit (ns, us, ms,
 * s), or 0; at most 10 s. In ns, -1: malformed */
static double sv_env_wire_time(const char *s, const char *end)
{
    static const struct {
        const char *unit;
        double      ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char *num_end;
    size_t len;
    double v;
    unsigned i;

    v = strtod(s, &num_end);
    if ((num_end == s) || (num_end > end) || !(v >= 0.0)) {
        return -1;
    }
    len = (size_t)(end - num_end);
    if ((len == 0) && (v == 0.0)) {
        return 0;
    }
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if ((strlen(units[i].unit) == len) &&
            !strncmp(num_end, units[i].unit, len)) {
            v *= units[i].ns;
            return (v <= 10e9) ? v : -1;
        }
    }
    return -1;
}

/* One duration (as SOFTVERBS_WIRE_DELAY's) of at most max_ns, in ns; 0
 * when unset or malformed (named) */
static uint64_t sv_env_delay(const char *name, double max_ns)
{
    const char *s = getenv(name);
    char want[96];
    double v;

    if (s == NULL) {
        return 0;
    }
    v = sv_env_wire_time(s, s + strlen(s));
    if ((v < 0) || (v > max_ns)) {
        snprintf(want, sizeof(want), "a delay (0, or a number with ns, us, "
                 "ms or s, at most %g ms)", max_ns / 1e6);
        sv_env_bad(name, s, want, "0");
        return 0;
    }
    return (uint64_t)v;
}

/* A probability of SOFTVERBS_WIRE_LOSS, -1: malformed */
static double sv_env_wire_prob(const char *s, const char *end)
{
    char *num_end;
    double v;

    v = strtod(s, &num_end);
    if ((num_end != end) || !(v >= 0.0) || (v > 1.0)) {
        return -1;
    }
    return v;
}

/*
 * SOFTVERBS_WIRE_DELAY / _LOSS: comma-separated items, each a value (the
 * default, for every pair of ports not named) or A-B=value (traffic
 * between device slots A and B, either way). All or nothing: a malformed
 * item leaves the setting off, and says so.
 */
static void sv_env_wire(const char *name, const char *want,
                        double (*parse)(const char *, const char *),
                        double *dflt, struct sv_wire_rule *rules, int *n)
{
    const char *s = getenv(name), *item, *end, *eq;
    unsigned long a, b;
    char *p;
    double v;

    *dflt = 0.0;
    *n    = 0;
    if ((s == NULL) || (s[0] == '\0')) {
        return;
    }
    for (item = s; ; item = end + 1) {
        end = strchr(item, ',');
        if (end == NULL) {
            end = item + strlen(item);
        }
        eq = memchr(item, '=', (size_t)(end - item));
        if (eq == NULL) {
            v = parse(item, end);
            if (v < 0) {
                goto err;
            }
            *dflt = v;
        } else {
            a = strtoul(item, &p, 10);
            if ((p == item) || (*p != '-') || (a >= SV_MAX_DEVS)) {
                goto err;
            }
            b = strtoul(p + 1, &p, 10);
            v = parse(eq + 1, end);
            if ((p != eq) || (b >= SV_MAX_DEVS) || (a == b) || (v < 0) ||
                (*n == SV_WIRE_RULES)) {
                goto err;
            }
            rules[*n].a     = (uint8_t)a;
            rules[*n].b     = (uint8_t)b;
            rules[*n].value = v;
            (*n)++;
        }
        if (*end == '\0') {
            return;
        }
    }
err:
    sv_env_bad(name, s, want, "none");
    *dflt = 0.0;
    *n    = 0;
}

/* SOFTVERBS_SOCKET_DIR: an existing directory, short enough for a socket
 * name (sun_path) in it */
static void sv_env_sock_dir(void)
{
    const char *dir = getenv(SOFTVERBS_ENV_SOCKET_DIR);
    struct stat st;

    sv_g.sock_dir[0] = '\0';
    if ((dir == NULL) || (dir[0] == '\0')) {
        return;
    }
    if ((strlen(dir) >= sizeof(sv_g.sock_dir)) || (stat(dir, &st) != 0) ||
        !S_ISDIR(st.st_mode)) {
        sv_env_bad(SOFTVERBS_ENV_SOCKET_DIR, dir,
                   "an existing directory of fewer than 80 characters",
                   "abstract sockets");
        return;
    }
    snprintf(sv_g.sock_dir, sizeof(sv_g.sock_dir), "%s", dir);
}

/*
 * The SOFTVERBS_* settings, read when the registry is first opened: into
 * sv_g, with the registry path and its tag. Returns the size of the arena
 * in bytes (SOFTVERBS_SHM_MB).
 */
uint64_t sv_env_init(void)
{
    const char *path = getenv(SOFTVERBS_ENV_SHM);
    const char *pol  = getenv(SOFTVERBS_ENV_CAP_POLICY);
    const char *dbg  = getenv(SOFTVERBS_ENV_DEBUG);
    uint64_t arena;

    sv_g.debug = dbg && (atoi(dbg) > 0);
    if ((dbg != NULL) && strcmp(dbg, "0") && strcmp(dbg, "1")) {
        sv_env_bad(SOFTVERBS_ENV_DEBUG, dbg, "0 or 1", sv_g.debug ? "1" : "0");
    }
    /* the arena, in MiB: 1 .. 1048576 (1 TiB) */
    arena = sv_env_uint(SOFTVERBS_ENV_SHM_MB, 1, 1u << 20, 4096, 0);
    arena <<= 20;
    snprintf(sv_g.shm_path, sizeof(sv_g.shm_path), "%s",
             path ? path : "/dev/shm/softverbs");
    sv_g.shm_tag = sv_fnv1a_str(sv_g.shm_path);
    sv_env_sock_dir();
    /* fail by default: mlx5 refuses caps above the device's (create_qp
     * and mlx5_calc_sq_size/mlx5_calc_rq_size in rdma-core
     * providers/mlx5/verbs.c return EINVAL, mlx5_create_srq too; the
     * kernel's mlx5_ib_create_srq likewise); clamp only when asked */
    sv_g.cap_fail   = !(pol && !strcmp(pol, "clamp"));
    if ((pol != NULL) && strcmp(pol, "fail") && strcmp(pol, "clamp")) {
        sv_env_bad(SOFTVERBS_ENV_CAP_POLICY, pol, "'fail' or 'clamp'",
                   "fail");
    }
    sv_g.max_qp     = sv_env_uint(SOFTVERBS_ENV_MAX_QP, 0, SV_QP_TBL - 1,
                                  SV_QP_TBL - 1, 1);
    sv_g.max_cq     = sv_env_uint(SOFTVERBS_ENV_MAX_CQ, 0, SV_CQ_TBL - 1,
                                  SV_CQ_TBL - 1, 1);
    sv_g.max_mr     = sv_env_uint(SOFTVERBS_ENV_MAX_MR, 0, SV_MR_TBL - 1,
                                  SV_MR_TBL - 1, 1);
    sv_g.max_srq    = sv_env_uint(SOFTVERBS_ENV_MAX_SRQ, 0, SV_SRQ_TBL - 1,
                                  SV_SRQ_TBL - 1, 1);
    sv_g.dc         = (int)sv_env_uint(SOFTVERBS_ENV_DC, 0, 1, 1, 0);
    sv_g.mlx5       = (int)sv_env_uint(SOFTVERBS_ENV_MLX5, 0, 1, 0, 0);
    sv_g.ud_drop    = sv_env_prob(SOFTVERBS_ENV_UD_DROP);
    sv_g.ud_reorder = sv_env_prob(SOFTVERBS_ENV_UD_REORDER);
    sv_g.rc_read_reorder = sv_env_prob(SOFTVERBS_ENV_RC_READ_REORDER);
    sv_g.rc_drop    = sv_env_prob(SOFTVERBS_ENV_RC_DROP);
    sv_g.resp_delay_ns = sv_env_delay(SOFTVERBS_ENV_RESP_DELAY, 1e9);
    sv_env_wire(SOFTVERBS_ENV_WIRE_DELAY,
                "a delay (0, or a number with ns, us, ms or s, at most 10 s)"
                " and/or A-B=delay items (device slots, A != B), comma-"
                "separated", sv_env_wire_time, &sv_g.wire.delay_ns,
                sv_g.wire.delay, &sv_g.wire.ndelay);
    sv_env_wire(SOFTVERBS_ENV_WIRE_LOSS,
                "a probability from 0 to 1 and/or A-B=probability items "
                "(device slots, A != B), comma-separated", sv_env_wire_prob,
                &sv_g.wire.loss, sv_g.wire.loss_rule, &sv_g.wire.nloss);
    sv_g.wire.on    = (sv_g.wire.delay_ns > 0.0) || (sv_g.wire.ndelay > 0) ||
                      (sv_g.wire.loss > 0.0) || (sv_g.wire.nloss > 0);
    return arena;
}
