/*
 * softverbs-stat: live softverbs objects per process and in total.
 *
 * Output, one record a line, "key=value" fields:
 *   proc pid=<pid> qp=<n> rc=<n> uc=<n> ud=<n> reset=.. init=.. rtr=..
 *        rts=.. sqd=.. sqe=.. err=.. cq=<n> srq=<n> mr=<n> mr_bytes=<n>
 *        dci=<n> dct=<n> dc_switches=<n> dc_key_violations=<n>
 *   total pid=0 ... (same fields)
 * With -p PID only that process is shown; with -q only the total line.
 *
 * softverbs-stat port <device>:<port> down|up: take a port down or bring
 * it back while programs run (softverbs_set_port_state).
 */
#include <softverbs/softverbs.h>
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void sv_stat_print(const char *tag, const struct softverbs_stats *s)
{
    printf("%s pid=%u qp=%u rc=%u uc=%u ud=%u reset=%u init=%u rtr=%u "
           "rts=%u sqd=%u sqe=%u err=%u cq=%u srq=%u mr=%u mr_bytes=%llu "
           "dci=%u dct=%u dc_switches=%llu dc_key_violations=%llu\n",
           tag, s->pid, s->num_qp, s->num_qp_by_type[0],
           s->num_qp_by_type[1], s->num_qp_by_type[2],
           s->num_qp_by_state[IBV_QPS_RESET], s->num_qp_by_state[IBV_QPS_INIT],
           s->num_qp_by_state[IBV_QPS_RTR], s->num_qp_by_state[IBV_QPS_RTS],
           s->num_qp_by_state[IBV_QPS_SQD], s->num_qp_by_state[IBV_QPS_SQE],
           s->num_qp_by_state[IBV_QPS_ERR], s->num_cq, s->num_srq, s->num_mr,
           (unsigned long long)s->mr_bytes, s->num_dci, s->num_dct,
           (unsigned long long)s->dc_switches,
           (unsigned long long)s->dc_key_violations);
}

/* softverbs-stat port softverbs0:1 down|up */
static int sv_stat_port(int argc, char **argv)
{
    char dev[64], *colon, *end;
    unsigned long port;
    int up, ret;

    if ((argc != 4) || (strlen(argv[2]) >= sizeof(dev)) ||
        (strcmp(argv[3], "down") && strcmp(argv[3], "up"))) {
        fprintf(stderr, "usage: %s port <device>:<port> down|up\n", argv[0]);
        return 2;
    }
    strcpy(dev, argv[2]);
    colon = strchr(dev, ':');
    if (colon == NULL) {
        fprintf(stderr, "softverbs-stat: '%s' is not <device>:<port>\n",
                argv[2]);
        return 2;
    }
    *colon = '\0';
    port   = strtoul(colon + 1, &end, 10);
    if ((end == colon + 1) || (*end != '\0')) {
        fprintf(stderr, "softverbs-stat: '%s' is not a port number\n",
                colon + 1);
        return 2;
    }
    up  = !strcmp(argv[3], "up");
    ret = softverbs_set_port_state(dev, (unsigned)port, up);
    if (ret != 0) {
        fprintf(stderr, "softverbs-stat: %s: %s\n", argv[2],
                (ret == ENODEV) ? "no such device" :
                (ret == EINVAL) ? "no such port" : strerror(ret));
        return 1;
    }
    printf("%s %s\n", argv[2], up ? "up" : "down");
    return 0;
}

int main(int argc, char **argv)
{
    struct softverbs_stats s;
    int opt, quiet = 0, ret;
    long pid = -1;

    if ((argc > 1) && !strcmp(argv[1], "port")) {
        return sv_stat_port(argc, argv);
    }
    while ((opt = getopt(argc, argv, "p:qh")) != -1) {
        switch (opt) {
        case 'p':
            pid = strtol(optarg, NULL, 0);
            break;
        case 'q':
            quiet = 1;
            break;
        default:
            fprintf(stderr, "usage: %s [-p pid] [-q]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (pid > 0) {
        ret = softverbs_get_stats(pid, &s);
        if (ret) {
            fprintf(stderr, "softverbs-stat: %s\n", strerror(ret));
            return 1;
        }
        sv_stat_print("proc", &s);
        return 0;
    }
    if (!quiet) {
        struct softverbs_stats *all = calloc(4096, sizeof(*all));
        int i, n = all ? softverbs_get_proc_stats(all, 4096) : -ENOMEM;
        for (i = 0; i < n; i++) {
            if ((all[i].pid != (uint32_t)getpid()) &&
                (all[i].num_qp || all[i].num_cq || all[i].num_srq ||
                 all[i].num_mr)) {
                sv_stat_print("proc", &all[i]);
            }
        }
        free(all);
    }
    ret = softverbs_get_stats(0, &s);
    if (ret) {
        fprintf(stderr, "softverbs-stat: %s\n", strerror(ret));
        return 1;
    }
    sv_stat_print("total", &s);
    return 0;
}
