/*
 * softverbs datagram rsockets (rsocket(AF_INET, SOCK_DGRAM), man
 * rsocket(7)) between two processes, every byte checked:
 *  - an unbound client's rsendto binds it (rgetsockname gives a port) and
 *    reaches a bound server, whose rrecvfrom and rrecvmsg report the
 *    client's address; the server echoes each datagram to that address with rsendto, and the
 *    client's rrecvfrom reports the server's; sizes 1 B to the largest
 *    datagram (the port's MTU less softverbs' 24-byte header), 500 round trips in order, each with a sequence number;
 *  - non-blocking: rrecvfrom EAGAIN on an empty socket, rpoll times out,
 *    then POLLIN when a datagram is there; MSG_PEEK leaves it queued;
 *  - rconnect sets the default destination (rsend/rrecv, rgetpeername);
 *  - bad input: a datagram larger than the port's MTU is EMSGSIZE, rbind to
 *    a bound port EADDRINUSE, rlisten EOPNOTSUPP, rsend without a
 *    destination EDESTADDRREQ; a datagram to a port nobody has is lost
 *    and reported sent (UDP's), after at most a few seconds.
 * Usage: softverbs_rsocket_dgram PORT. Prints "rsocket dgram ok" and exits
 * 0 when every check passed.
 */
#include <rdma/rsocket.h>
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(_c, _what) \
    do { \
        if (!(_c)) { \
            fprintf(stderr, "%d: FAIL %s (errno %d %s)\n", (int)getpid(), \
                    _what, errno, strerror(errno)); \
            exit(1); \
        } \
    } while (0)

#define MAX_DGRAM 4072  /* the largest: an MTU of 4096 less softverbs' header */
#define DG_HDR    24    /* softverbs' header before each datagram */
#define ROUNDS    500

/* The largest datagram: the port's active MTU less softverbs' header (4072
 * on an InfiniBand port of 4096, 1000 on a RoCE port of 1024) */
static size_t max_dgram;
static size_t sizes[] = {1, 100, 1000, 0 /* max_dgram */};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void max_dgram_init(void)
{
    struct ibv_device **list = ibv_get_device_list(NULL);
    struct ibv_port_attr pa;
    struct ibv_context *ctx;

    CHECK((list != NULL) && (list[0] != NULL), "ibv_get_device_list");
    ctx = ibv_open_device(list[0]);
    CHECK(ctx != NULL, "ibv_open_device");
    CHECK(ibv_query_port(ctx, 1, &pa) == 0, "ibv_query_port");
    max_dgram = (128u << pa.active_mtu) - DG_HDR;
    if (max_dgram > MAX_DGRAM) {
        max_dgram = MAX_DGRAM;
    }
    sizes[NSIZES - 1] = max_dgram;
    ibv_close_device(ctx);
    ibv_free_device_list(list);
}

static void addr_of(struct sockaddr_in *sin, int port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void fill(unsigned char *buf, size_t len, unsigned seq)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = (unsigned char)((i * 29 + seq * 13 + (i >> 8)) & 0xff);
    }
    if (len >= 4) {
        memcpy(buf, &seq, 4);
    }
}

static void check(const unsigned char *buf, size_t len, size_t want,
                  unsigned seq, const char *who)
{
    static unsigned char ref[MAX_DGRAM];

    if (len != want) {
        fprintf(stderr, "FAIL %s: datagram %u of %zu bytes, %zu sent\n", who,
                seq, len, want);
        exit(1);
    }
    fill(ref, want, seq);
    if (memcmp(buf, ref, want) != 0) {
        fprintf(stderr, "FAIL %s: datagram %u (%zu bytes) differs\n", who,
                seq, want);
        exit(1);
    }
}

static int same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return (a->sin_family == b->sin_family) && (a->sin_port == b->sin_port) &&
           (a->sin_addr.s_addr == b->sin_addr.s_addr);
}

/* Echo every datagram to its sender; a 0-byte one ends it */
static void server(int fd)
{
    static unsigned char buf[MAX_DGRAM];
    struct sockaddr_in from;
    struct msghdr msg;
    struct iovec iov;
    unsigned count;
    socklen_t flen;
    ssize_t n;

    for (count = 0;; count++) {
        flen = sizeof(from);
        memset(&from, 0, sizeof(from));
        if (count & 1) {
            /* every other one by rrecvmsg, which names the sender as
             * recvmsg(2) does on UDP */
            memset(&msg, 0, sizeof(msg));
            iov.iov_base    = buf;
            iov.iov_len     = sizeof(buf);
            msg.msg_iov     = &iov;
            msg.msg_iovlen  = 1;
            msg.msg_name    = &from;
            msg.msg_namelen = flen;
            n    = rrecvmsg(fd, &msg, 0);
            flen = msg.msg_namelen;
        } else {
            n = rrecvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from,
                          &flen);
        }
        CHECK(n >= 0, "server rrecvfrom/rrecvmsg");
        CHECK((flen == sizeof(from)) && (from.sin_family == AF_INET) &&
              (from.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) &&
              (from.sin_port != 0), "server: the sender's address");
        CHECK(rsendto(fd, buf, n, 0, (struct sockaddr *)&from, flen) == n,
              "server rsendto");
        if (n == 0) {
            return;
        }
    }
}

static void round_trip(int fd, const struct sockaddr_in *srv, size_t len,
                       unsigned seq, int nb)
{
    static unsigned char out[MAX_DGRAM], in[MAX_DGRAM];
    struct sockaddr_in from;
    socklen_t flen = sizeof(from);
    ssize_t n;

    fill(out, len, seq);
    CHECK(rsendto(fd, out, len, 0, (const struct sockaddr *)srv,
                  sizeof(*srv)) == (ssize_t)len, "client rsendto");
    for (;;) {
        n = rrecvfrom(fd, in, sizeof(in), 0, (struct sockaddr *)&from, &flen);
        if ((n < 0) && nb && (errno == EAGAIN)) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            CHECK(rpoll(&p, 1, 10000) == 1, "rpoll POLLIN");
            CHECK(p.revents & POLLIN, "POLLIN set");
            continue;
        }
        break;
    }
    CHECK(n >= 0, "client rrecvfrom");
    CHECK(same_addr(&from, srv), "client: the echo comes from the server");
    check(in, n, len, seq, "client");
}

static int client(int port)
{
    static unsigned char buf[MAX_DGRAM], big[65536];
    struct sockaddr_in srv, me, peer, dead;
    socklen_t len = sizeof(me);
    struct pollfd p;
    unsigned seq = 0, i;
    struct timespec t0, t1;
    size_t s;
    int fd, nb;

    addr_of(&srv, port);
    fd = rsocket(AF_INET, SOCK_DGRAM, 0);
    CHECK(fd >= 0, "rsocket SOCK_DGRAM");
    CHECK((rsend(fd, "x", 1, 0) < 0) && (errno == EDESTADDRREQ),
          "rsend without a destination: EDESTADDRREQ");
    for (nb = 0; nb < 2; nb++) {
        if (nb) {
            CHECK(rfcntl(fd, F_SETFL, O_NONBLOCK) == 0, "rfcntl O_NONBLOCK");
            CHECK((rrecvfrom(fd, buf, 10, 0, NULL, NULL) < 0) &&
                  (errno == EAGAIN), "rrecvfrom EAGAIN");
            p.fd     = fd;
            p.events = POLLIN;
            CHECK(rpoll(&p, 1, 50) == 0, "rpoll timeout");
        }
        for (s = 0; s < NSIZES; s++) {
            round_trip(fd, &srv, sizes[s], seq++, nb);
        }
    }
    CHECK(rfcntl(fd, F_SETFL, 0) == 0, "rfcntl blocking");
    CHECK((rgetsockname(fd, (struct sockaddr *)&me, &len) == 0) &&
          (me.sin_port != 0), "rgetsockname: bound by the first send");
    for (i = 0; i < ROUNDS; i++) {
        round_trip(fd, &srv, 16 + (i * 37) % (max_dgram - 16), seq++, 0);
    }
    /* MSG_PEEK: the datagram stays */
    fill(buf, 64, seq);
    CHECK(rsendto(fd, buf, 64, 0, (struct sockaddr *)&srv, sizeof(srv)) == 64,
          "rsendto (peek)");
    memset(buf, 0, sizeof(buf));
    CHECK(rrecvfrom(fd, buf, sizeof(buf), MSG_PEEK, NULL, NULL) == 64,
          "rrecvfrom MSG_PEEK");
    check(buf, 64, 64, seq, "peek");
    memset(buf, 0, sizeof(buf));
    CHECK(rrecv(fd, buf, sizeof(buf), 0) == 64, "rrecv after MSG_PEEK");
    check(buf, 64, 64, seq++, "after peek");
    /* connected: rsend/rrecv to and from the default destination */
    CHECK(rconnect(fd, (struct sockaddr *)&srv, sizeof(srv)) == 0,
          "rconnect SOCK_DGRAM");
    len = sizeof(peer);
    CHECK((rgetpeername(fd, (struct sockaddr *)&peer, &len) == 0) &&
          same_addr(&peer, &srv), "rgetpeername");
    fill(buf, 300, seq);
    CHECK(rsend(fd, buf, 300, 0) == 300, "rsend connected");
    memset(buf, 0, sizeof(buf));
    CHECK(rrecv(fd, buf, sizeof(buf), 0) == 300, "rrecv connected");
    check(buf, 300, 300, seq++, "connected");
    /* bad input */
    CHECK((rsend(fd, big, sizeof(big), 0) < 0) && (errno == EMSGSIZE),
          "a datagram over the port's MTU: EMSGSIZE");
    CHECK((rlisten(fd, 1) < 0) && (errno == EOPNOTSUPP), "rlisten EOPNOTSUPP");
    addr_of(&dead, port + 1);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(rsendto(fd, buf, 10, 0, (struct sockaddr *)&dead,
                  sizeof(dead)) == 10, "to nobody: reported sent");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(t1.tv_sec - t0.tv_sec < 10, "to nobody: within seconds");
    /* the end: a 0-byte datagram, echoed */
    CHECK(rsend(fd, buf, 0, 0) == 0, "rsend 0 bytes");
    CHECK(rrecv(fd, buf, sizeof(buf), 0) == 0, "rrecv the 0-byte echo");
    rclose(fd);
    return 0;
}

int main(int argc, char **argv)
{
    int port = (argc > 1) ? atoi(argv[1]) : 17580;
    struct sockaddr_in sin;
    int fd, fd2, status;
    pid_t pid;

    max_dgram_init();
    if ((argc > 2) && !strcmp(argv[1], "-c")) {
        return client(atoi(argv[2]));
    }
    fd = rsocket(AF_INET, SOCK_DGRAM, 0);
    CHECK(fd >= 0, "rsocket SOCK_DGRAM");
    addr_of(&sin, port);
    CHECK(rbind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "rbind");
    fd2 = rsocket(AF_INET, SOCK_DGRAM, 0);
    CHECK(fd2 >= 0, "rsocket SOCK_DGRAM (2)");
    CHECK((rbind(fd2, (struct sockaddr *)&sin, sizeof(sin)) < 0) &&
          (errno == EADDRINUSE), "rbind a bound port: EADDRINUSE");
    rclose(fd2);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        /* the child uses a fresh librdmacm state: exec ourselves */
        char p[16];
        snprintf(p, sizeof(p), "%d", port);
        execl("/proc/self/exe", argv[0], "-c", p, (char *)NULL);
        _exit(127);
    }
    server(fd);
    rclose(fd);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0), "client exit 0");
    printf("rsocket dgram ok\n");
    return 0;
}
