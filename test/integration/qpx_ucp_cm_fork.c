/*
 * UCP's client/server example in a process forked after it used librdmacm
 * (issue 37), for qpx-ucp-cm.sh:
 *   ucs_fork EXAMPLE-ARGS...
 * The process first uses the CM (an event channel and an id listening on
 * 127.0.0.1, a port of the CM's choosing), then forks; the child runs the
 * example's main (ucp_client_server.c built with -Dmain=ucs_example_main)
 * with EXAMPLE-ARGS, so that UCP and qpx's CM open their channels and ids
 * in a child of a process whose CM was at work. The parent exits with the
 * child's status; a SIGTERM or SIGINT it gets (timeout(1), the script's
 * kill) is passed on to the child, which also dies with the parent.
 */
#include <rdma/rdma_cma.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

int ucs_example_main(int argc, char **argv);

static volatile pid_t child;

static void pass_on(int sig)
{
    if (child > 0) {
        kill(child, sig);
    }
}

int main(int argc, char **argv)
{
    struct rdma_event_channel *ch;
    struct sockaddr_in sin;
    struct rdma_cm_id *id;
    int status;
    pid_t pid;

    ch = rdma_create_event_channel();
    if ((ch == NULL) || (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)) {
        perror("ucs_fork: rdma_cm");
        return 1;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((rdma_bind_addr(id, (struct sockaddr *)&sin) != 0) ||
        (rdma_listen(id, 4) != 0)) {
        perror("ucs_fork: listen");
        return 1;
    }
    fflush(stdout);
    signal(SIGTERM, pass_on);
    signal(SIGINT, pass_on);
    pid = fork();
    if (pid < 0) {
        perror("ucs_fork: fork");
        return 1;
    } else if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        exit(ucs_example_main(argc, argv));
    }
    child = pid;
    while ((waitpid(pid, &status, 0) < 0) && (errno == EINTR)) {
    }
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "ucs_fork: the child died of signal %d\n",
                WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
