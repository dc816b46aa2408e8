/*
 * softverbs conformance suite: the runner.
 *
 *   softverbs_conformance [-l] [PATTERN...]   run (or list) the cases whose
 *                                             name matches a glob PATTERN
 *
 * The runner itself never calls verbs: for each case it starts nprocs rank
 * processes by re-executing this program ("--rank CASE R"), with the case's
 * environment, in a process group of their own, and collects their verdict.
 * Output: "PASS: name", "FAIL: name (why)", "SKIP: name (why)" and finally
 * "N passed, N failed". Exit 0 if nothing failed and something passed,
 * 77 if no verbs device exists, 1 otherwise.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "softverbs_conformance.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern int svt_msg_fd;

static const svt_case_t *const svt_tables[] = {
    svt_cases_data, svt_cases_atomic, svt_cases_qp,
    svt_cases_err,  svt_cases_ud,     svt_cases_event, svt_cases_stress,
    svt_cases_ex,   svt_cases_sys,    svt_cases_feat,
    svt_cases_mw,   svt_cases_mw_inv, svt_cases_pd,   svt_cases_xrc,
    svt_cases_xrc_timer,
#ifdef HAVE_MLX5DV
    svt_cases_dc,   svt_cases_dc_data,
#endif
#ifdef HAVE_RDMACM
    svt_cases_cm,   svt_cases_cm_conn, svt_cases_cm_sync,
#endif
};

static char svt_self[PATH_MAX];
static char svt_shm_base[PATH_MAX - 32];

static const svt_case_t *svt_case_find(const char *name)
{
    const svt_case_t *tc;
    size_t i;

    for (i = 0; i < sizeof(svt_tables) / sizeof(svt_tables[0]); ++i) {
        for (tc = svt_tables[i]; tc->name != NULL; ++tc) {
            if (!strcmp(tc->name, name)) {
                return tc;
            }
        }
    }
    return NULL;
}

/* Seconds a case may take; SVT_TIMEOUT_SCALE multiplies (valgrind) */
static int svt_case_timeout(const svt_case_t *tc)
{
    const char *scale = getenv("SVT_TIMEOUT_SCALE");
    int t = tc->timeout ? tc->timeout : SVT_TIMEOUT_DEF;

    return (scale != NULL && atoi(scale) > 1) ? t * atoi(scale) : t;
}

/* Apply "A=1 B=2" to the environment */
static void svt_env_apply(const char *env)
{
    char buf[512], *tok, *save = NULL;

    if (env == NULL) {
        return;
    }
    snprintf(buf, sizeof(buf), "%s", env);
    for (tok = strtok_r(buf, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save)) {
        putenv(strdup(tok));
    }
}

/* Rank process: run one case body */
static int svt_rank_main(const char *name, int rank)
{
    const svt_case_t *tc = svt_case_find(name);
    svt_proc_t p;
    const char *fds = getenv("SVT_FDS");
    int i, msg_fd;

    if ((tc == NULL) || (fds == NULL)) {
        fprintf(stderr, "rank: unknown case '%s' or no SVT_FDS\n", name);
        return 1;
    }
    memset(&p, 0, sizeof(p));
    if (sscanf(fds, "%d,%d,%d,%d", &p.sock[0], &p.sock[1], &p.sock[2],
               &msg_fd) != 4) {
        return 1;
    }
    svt_msg_fd = msg_fd;
    p.rank     = rank;
    p.nprocs   = tc->nprocs;
    p.arg      = tc->arg;
    p.tc       = tc;
    for (i = 0; i < SVT_MAX_PROCS; ++i) {
        if (i == rank) {
            p.sock[i] = -1;
        }
    }
    alarm(svt_case_timeout(tc));
    tc->fn(&p);
    return 0;
}

/* Probe: is there any verbs device at all? With print_node, print the
 * /dev/infiniband node UCX requires for the device under test */
static int svt_probe_main(int print_node)
{
    const char *want = getenv("SVT_DEVICE") ? getenv("SVT_DEVICE") : "softverbs0";
    int num = 0, i, ret = 77;
    struct ibv_device **list = ibv_get_device_list(&num);

    for (i = 0; i < num; ++i) {
        if (!print_node || !strcmp(ibv_get_device_name(list[i]), want)) {
            if (print_node) {
                printf("/dev/infiniband/%s\n", list[i]->dev_name);
            }
            ret = 0;
            break;
        }
    }
    if (list != NULL) {
        ibv_free_device_list(list);
    }
    return ret;
}

static int svt_spawn(const char *const *args, const char *env, pid_t pgid,
                     const int *close_fds, int nclose)
{
    pid_t pid = fork();
    int i;

    if (pid != 0) {
        if (pid > 0) {
            setpgid(pid, pgid ? pgid : pid);
        }
        return pid;
    }
    setpgid(0, pgid);
    for (i = 0; i < nclose; ++i) {
        close(close_fds[i]);
    }
    svt_env_apply(env);
    execv(svt_self, (char *const *)args);
    _exit(127);
}

static void svt_describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status)) {
        snprintf(buf, len, "exit %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGALRM)) {
        snprintf(buf, len, "timed out");
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
    } else {
        snprintf(buf, len, "status 0x%x", status);
    }
}

/* Run one case; returns 0 pass, 1 fail, 77 skip */
static int svt_case_run(const svt_case_t *tc)
{
    int sv[SVT_MAX_PROCS][2], msg[2], fds[SVT_MAX_PROCS];
    int status[SVT_MAX_PROCS], done[SVT_MAX_PROCS] = {0};
    pid_t pid[SVT_MAX_PROCS], pgid = 0;
    char fdenv[64], rankstr[8], why[2048] = "", how[64];
    static char shm[PATH_MAX + 16];
    static int case_no;
    const char *args[5];
    int timeout = svt_case_timeout(tc);
    double deadline = svt_now_ms() + (timeout + 5) * 1000.0;
    int r, left, result = 0, timed_out = 0, first_bad = -1;
    int closefd[2 * SVT_MAX_PROCS + 1];
    ssize_t n;
    size_t off = 0;

    if ((pipe(msg) != 0) ||
        (fcntl(msg[0], F_SETFL, O_NONBLOCK) != 0)) {
        snprintf(why, sizeof(why), "pipe: %s", strerror(errno));
        goto out_fail;
    }
    for (r = 1; r < tc->nprocs; ++r) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[r]) != 0) {
            snprintf(why, sizeof(why), "socketpair: %s", strerror(errno));
            goto out_fail;
        }
    }
    /* each case gets a registry of its own (limits, leftovers) */
    snprintf(shm, sizeof(shm), "SOFTVERBS_SHM=%s.%d.%d", svt_shm_base,
             (int)getpid(), ++case_no);
    putenv(shm);
    for (r = 0; r < tc->nprocs; ++r) {
        int i, nclose = 0;

        for (i = 0; i < SVT_MAX_PROCS; ++i) {
            fds[i] = -1;
        }
        for (i = 1; i < tc->nprocs; ++i) {
            if (r == 0) {
                fds[i] = sv[i][0];
                closefd[nclose++] = sv[i][1];
            } else if (i == r) {
                fds[0] = sv[i][1];
                closefd[nclose++] = sv[i][0];
            } else {
                closefd[nclose++] = sv[i][0];
                closefd[nclose++] = sv[i][1];
            }
        }
        closefd[nclose++] = msg[0];
        snprintf(fdenv, sizeof(fdenv), "SVT_FDS=%d,%d,%d,%d", fds[0],
                 fds[1], fds[2], msg[1]);
        snprintf(rankstr, sizeof(rankstr), "%d", r);
        args[0] = svt_self;
        args[1] = "--rank";
        args[2] = tc->name;
        args[3] = rankstr;
        args[4] = NULL;
        putenv(fdenv);
        pid[r] = svt_spawn(args, tc->env, pgid, closefd, nclose);
        unsetenv("SVT_FDS");
        if (pid[r] < 0) {
            snprintf(why, sizeof(why), "fork: %s", strerror(errno));
            goto out_fail;
        }
        if (pgid == 0) {
            pgid = pid[r];
        }
    }
    unsetenv("SOFTVERBS_SHM");
    close(msg[1]);
    for (r = 1; r < tc->nprocs; ++r) {
        close(sv[r][0]);
        close(sv[r][1]);
    }

    /* Wait for all ranks; collect messages meanwhile */
    for (left = tc->nprocs; left > 0;) {
        for (r = 0; r < tc->nprocs; ++r) {
            if (!done[r] && (waitpid(pid[r], &status[r], WNOHANG) == pid[r])) {
                done[r] = 1;
                --left;
                /* a failed rank ends the case: the others would hang */
                if (!(WIFEXITED(status[r]) && (WEXITSTATUS(status[r]) == 0)) &&
                    !((r == 1) && (tc->flags & SVT_CASE_F_PEER_DIES)) &&
                    (first_bad < 0)) {
                    first_bad = r;
                    deadline  = svt_now_ms() + 300;
                }
            }
        }
        while ((n = read(msg[0], why + off, sizeof(why) - 1 - off)) > 0) {
            off += n;
        }
        if (left && (svt_now_ms() > deadline)) {
            timed_out = 1;
            kill(-pgid, SIGKILL);
            for (r = 0; r < tc->nprocs; ++r) {
                if (!done[r]) {
                    waitpid(pid[r], &status[r], 0);
                    done[r] = 1;
                }
            }
            break;
        }
        if (left) {
            svt_sleep_ms(2);
        }
    }
    kill(-pgid, SIGKILL); /* stray children of the ranks */
    while ((n = read(msg[0], why + off, sizeof(why) - 1 - off)) > 0) {
        off += n;
    }
    why[off] = '\0';
    close(msg[0]);
    unlink(shm + strlen("SOFTVERBS_SHM="));

    /* a rank that skipped (no device) makes the case a skip: its peers
     * then fail only because it left */
    for (r = 0; r < tc->nprocs; ++r) {
        if (WIFEXITED(status[r]) && (WEXITSTATUS(status[r]) == 77)) {
            result = 77;
        }
    }
    for (r = 0; (r < tc->nprocs) && (result != 77); ++r) {
        if ((r == 1) && (tc->flags & SVT_CASE_F_PEER_DIES)) {
            continue;
        }
        if (!WIFEXITED(status[r]) || (WEXITSTATUS(status[r]) != 0)) {
            svt_describe_status(status[r], how, sizeof(how));
            if (off + 64 < sizeof(why)) {
                off += snprintf(why + off, sizeof(why) - off,
                                "%srank %d %s", off ? "; " : "", r, how);
            }
            result = 1;
        }
    }
    if (timed_out && (off + 64 < sizeof(why))) {
        if (first_bad < 0) {
            snprintf(why + off, sizeof(why) - off, "; case deadline %ds",
                     timeout);
        } else {
            snprintf(why + off, sizeof(why) - off, "; others stopped after "
                     "rank %d failed", first_bad);
        }
    }
    /* one line per case: newlines from several ranks become "; " */
    for (off = 0; why[off] != '\0'; ++off) {
        if (why[off] == '\n') {
            why[off] = ((why[off + 1] != '\0') && (why[off + 1] != ';')) ?
                       ';' : ' ';
        }
    }
    while ((off > 0) && (why[off - 1] == ' ')) {
        why[--off] = '\0';
    }
    if (result == 0) {
        printf("PASS: %s\n", tc->name);
    } else if (result == 77) {
        printf("SKIP: %s (%s)\n", tc->name, why);
    } else {
        printf("FAIL: %s (%s)\n", tc->name, why);
    }
    fflush(stdout);
    return result;

out_fail:
    printf("FAIL: %s (%s)\n", tc->name, why);
    return 1;
}

int main(int argc, char **argv)
{
    const svt_case_t *tc;
    int passed = 0, failed = 0, skipped = 0, list = 0, i, a, match, ret;
    const char *probe_args[] = {NULL, "--probe", NULL};

    if ((argc >= 4) && !strcmp(argv[1], "--rank")) {
        return svt_rank_main(argv[2], atoi(argv[3]));
    }
    if ((argc >= 2) && !strcmp(argv[1], "--probe")) {
        return svt_probe_main(0);
    }
    if ((argc >= 2) && !strcmp(argv[1], "--dev-node")) {
        return svt_probe_main(1);
    }
    if (realpath("/proc/self/exe", svt_self) == NULL) {
        perror("realpath");
        return 1;
    }
    snprintf(svt_shm_base, sizeof(svt_shm_base), "%s",
             getenv("SOFTVERBS_SHM") ? getenv("SOFTVERBS_SHM") :
             "/dev/shm/softverbs-svt");
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);

    a = 1;
    if ((argc >= 2) && !strcmp(argv[1], "-l")) {
        list = 1;
        a    = 2;
    }
    if (!list) {
        int status;
        pid_t pid;

        probe_args[0] = svt_self;
        pid = svt_spawn(probe_args, NULL, 0, NULL, 0);
        if ((pid < 0) || (waitpid(pid, &status, 0) != pid)) {
            return 1;
        }
        if (WIFEXITED(status) && (WEXITSTATUS(status) == 77)) {
            printf("SKIP: no verbs device found (is LD_LIBRARY_PATH set to "
                   "the softverbs libraries?)\n");
            return 77;
        }
    }
    for (i = 0; i < (int)(sizeof(svt_tables) / sizeof(svt_tables[0])); ++i) {
        for (tc = svt_tables[i]; tc->name != NULL; ++tc) {
            match = (a >= argc);
            for (int k = a; k < argc; ++k) {
                match |= !fnmatch(argv[k], tc->name, 0);
            }
            if (!match) {
                continue;
            }
            if (list) {
                printf("%s\n", tc->name);
                continue;
            }
            ret = svt_case_run(tc);
            passed  += (ret == 0);
            failed  += (ret == 1);
            skipped += (ret == 77);
        }
    }
    if (list) {
        return 0;
    }
    if (skipped) {
        printf("%d skipped\n", skipped);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return ((failed == 0) && (passed > 0)) ? 0 : 1;
}
