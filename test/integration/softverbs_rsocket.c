/*
 * softverbs rsockets (man rsocket(7)) between two processes, every byte
 * checked: blocking transfers of several sizes, non-blocking ones driven
 * by rpoll (EAGAIN when nothing is there), partial reads, rshutdown giving
 * 0 from the peer's rrecv, MSG_WAITALL across messages, rsendmsg,
 * rwritev, rrecvmsg and rreadv, rrecvfrom naming the peer, ECONNREFUSED with nobody listening and EBADF
 * for an fd that is no rsocket. Usage: softverbs_rsocket PORT
 * Prints "rsocket ok" and exits 0 when every check passed.
 */
#include <rdma/rsocket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(_c, _what) \
    do { \
        if (!(_c)) { \
            fprintf(stderr, "%d: FAIL %s (errno %d %s)\n", (int)getpid(), \
                    _what, errno, strerror(errno)); \
            exit(1); \
        } \
    } while (0)

static const size_t sizes[] = { 1, 100, 4096, 32768, 65537, 300000, 1 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static unsigned char pattern(size_t i, size_t round)
{
    return (unsigned char)((i * 131 + round * 7 + (i >> 9)) & 0xff);
}

static void addr_of(struct sockaddr_in *sin, int port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* blocking write of all, or non-blocking through rpoll POLLOUT */
static void send_all(int fd, const unsigned char *buf, size_t len, int nb)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = rsend(fd, buf + done, len - done, 0);
        if ((n < 0) && nb && (errno == EAGAIN)) {
            struct pollfd p = { .fd = fd, .events = POLLOUT };
            CHECK(rpoll(&p, 1, 10000) == 1, "rpoll POLLOUT");
            continue;
        }
        CHECK(n > 0, "rsend");
        done += n;
    }
}

/* reads in odd-sized pieces (partial reads), checks every byte */
static void recv_check(int fd, size_t len, size_t round, int nb)
{
    static unsigned char buf[7777];
    size_t done = 0;

    while (done < len) {
        size_t want = (len - done < sizeof(buf)) ? len - done : sizeof(buf);
        ssize_t n   = rrecv(fd, buf, want, 0);
        size_t i;

        if ((n < 0) && nb && (errno == EAGAIN)) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            CHECK(rpoll(&p, 1, 10000) == 1, "rpoll POLLIN");
            CHECK(p.revents & POLLIN, "POLLIN set");
            continue;
        }
        CHECK(n > 0, "rrecv data");
        for (i = 0; i < (size_t)n; i++) {
            if (buf[i] != pattern(done + i, round)) {
                fprintf(stderr, "FAIL byte %zu of %zu (round %zu): %u != %u\n",
                        done + i, len, round, buf[i], pattern(done + i, round));
                exit(1);
            }
        }
        done += n;
    }
}

static void fill(unsigned char *buf, size_t len, size_t round)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = pattern(i, round);
    }
}

/* MSG_WAITALL over many messages, vectored calls, the sender's address:
 * the client sends WAITALL_LEN bytes in three iovecs (rsendmsg), the
 * last 0.1 s after the others; the
 * server takes them in one rrecvfrom(MSG_WAITALL), which must return all
 * of them and name the client (127.0.0.1), and answers with rwritev; the
 * client reads the answer with rreadv into two buffers */
#define WAITALL_LEN 300001

static void waitall_server(int fd)
{
    unsigned char *buf = malloc(WAITALL_LEN);
    struct sockaddr_in from;
    socklen_t flen = sizeof(from);
    struct iovec iov[2];
    size_t i;

    CHECK(buf != NULL, "malloc");
    memset(&from, 0, sizeof(from));
    CHECK(rrecvfrom(fd, buf, WAITALL_LEN, MSG_WAITALL,
                    (struct sockaddr *)&from, &flen) == WAITALL_LEN,
          "rrecvfrom MSG_WAITALL: all of it in one call");
    CHECK((flen == sizeof(from)) && (from.sin_family == AF_INET) &&
          (from.sin_addr.s_addr == htonl(INADDR_LOOPBACK)),
          "rrecvfrom names the peer");
    for (i = 0; i < WAITALL_LEN; i++) {
        CHECK(buf[i] == pattern(i, 77), "MSG_WAITALL data");
        buf[i] = pattern(i, 78);
    }
    iov[0].iov_base = buf;
    iov[0].iov_len  = 5;
    iov[1].iov_base = buf + 5;
    iov[1].iov_len  = WAITALL_LEN - 5;
    CHECK(rwritev(fd, iov, 2) == WAITALL_LEN, "rwritev");
    free(buf);
}

static void waitall_client(int fd)
{
    unsigned char *buf = malloc(WAITALL_LEN);
    struct iovec iov[3];
    struct msghdr msg;
    struct sockaddr_in name;
    size_t done = 0, i;
    ssize_t n;

    CHECK(buf != NULL, "malloc");
    fill(buf, WAITALL_LEN, 77);
    iov[0].iov_base = buf;
    iov[0].iov_len  = 1;
    iov[1].iov_base = buf + 1;
    iov[1].iov_len  = 40000;
    iov[2].iov_base = buf + 40001;
    iov[2].iov_len  = WAITALL_LEN - 40001;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov    = iov;
    msg.msg_iovlen = 2;
    CHECK(rsendmsg(fd, &msg, 0) == 40001, "rsendmsg");
    /* the rest later: the server's call has to wait for it */
    usleep(100000);
    msg.msg_iov    = iov + 2;
    msg.msg_iovlen = 1;
    CHECK(rsendmsg(fd, &msg, 0) == WAITALL_LEN - 40001, "rsendmsg");
    memset(buf, 0, WAITALL_LEN);
    while (done < WAITALL_LEN) {
        size_t half = (WAITALL_LEN - done) / 2;

        iov[0].iov_base = buf + done;
        iov[0].iov_len  = half;
        iov[1].iov_base = buf + done + half;
        iov[1].iov_len  = WAITALL_LEN - done - half;
        if (done == 0) {
            /* rrecvmsg on a stream names no sender, as TCP's recvmsg */
            memset(&msg, 0, sizeof(msg));
            msg.msg_iov     = iov;
            msg.msg_iovlen  = 2;
            msg.msg_name    = &name;
            msg.msg_namelen = sizeof(name);
            n = rrecvmsg(fd, &msg, 0);
            CHECK(n > 0, "rrecvmsg");
            CHECK(msg.msg_namelen == 0, "rrecvmsg on a stream: no sender");
        } else {
            n = rreadv(fd, iov, 2);
            CHECK(n > 0, "rreadv");
        }
        done += n;
    }
    for (i = 0; i < WAITALL_LEN; i++) {
        CHECK(buf[i] == pattern(i, 78), "rreadv data");
    }
    free(buf);
}

/* the server echoes every message back, then checks shutdown gives 0 */
static int server(int lfd)
{
    unsigned char *buf = malloc(1 << 20);
    int fd, round, nb;
    size_t s;

    fd = raccept(lfd, NULL, NULL);
    CHECK(fd >= 0, "raccept");
    for (round = 0, nb = 0; nb < 2; nb++) {
        if (nb) {
            CHECK(rfcntl(fd, F_SETFL, O_NONBLOCK) == 0, "rfcntl O_NONBLOCK");
        }
        for (s = 0; s < NSIZES; s++, round++) {
            recv_check(fd, sizes[s], round, nb);
            fill(buf, sizes[s], round + 100);
            send_all(fd, buf, sizes[s], nb);
        }
    }
    CHECK(rfcntl(fd, F_SETFL, 0) == 0, "rfcntl blocking");
    waitall_server(fd);
    CHECK(rrecv(fd, buf, 100, 0) == 0, "rrecv 0 after the peer's rshutdown");
    send_all(fd, (const unsigned char *)"bye", 3, 0);
    rclose(fd);
    rclose(lfd);
    return 0;
}

static int client(int port)
{
    unsigned char *buf = malloc(1 << 20);
    struct sockaddr_in sin;
    char bye[8];
    int fd, round, nb;
    size_t s;

    addr_of(&sin, port);
    fd = rsocket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "rsocket");
    CHECK(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "rconnect");
    for (round = 0, nb = 0; nb < 2; nb++) {
        if (nb) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            CHECK(rfcntl(fd, F_SETFL, O_NONBLOCK) == 0, "rfcntl O_NONBLOCK");
            /* nothing sent yet: EAGAIN, rpoll times out */
            CHECK((rrecv(fd, buf, 10, 0) < 0) && (errno == EAGAIN),
                  "rrecv EAGAIN");
            CHECK(rpoll(&p, 1, 50) == 0, "rpoll timeout");
        }
        for (s = 0; s < NSIZES; s++, round++) {
            fill(buf, sizes[s], round);
            send_all(fd, buf, sizes[s], nb);
            recv_check(fd, sizes[s], round + 100, nb);
        }
    }
    CHECK(rfcntl(fd, F_SETFL, 0) == 0, "rfcntl blocking");
    waitall_client(fd);
    CHECK(rshutdown(fd, SHUT_WR) == 0, "rshutdown");
    CHECK((rsend(fd, "x", 1, 0) < 0) && (errno == EPIPE), "rsend EPIPE after shutdown");
    CHECK(rrecv(fd, bye, 3, MSG_WAITALL) == 3 && !memcmp(bye, "bye", 3),
          "read after shutdown");
    CHECK(rrecv(fd, bye, 3, 0) == 0, "rrecv 0 after the peer's rclose");
    rclose(fd);
    return 0;
}

int main(int argc, char **argv)
{
    int port = (argc > 1) ? atoi(argv[1]) : 17480;
    struct sockaddr_in sin;
    int lfd, fd, status;
    pid_t pid;

    if ((argc > 2) && !strcmp(argv[1], "-c")) {
        return client(atoi(argv[2]));
    }
    /* bad input: errors, not crashes */
    CHECK((rrecv(12345, NULL, 0, 0) < 0) && (errno == EBADF), "EBADF");
    CHECK((rsocket(12345, SOCK_STREAM, 0) < 0), "bad domain");
    fd = rsocket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "rsocket");
    CHECK((rsend(fd, "x", 1, 0) < 0) && (errno == ENOTCONN), "ENOTCONN");
    /* nobody listening: ECONNREFUSED */
    addr_of(&sin, port + 1);
    CHECK((rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) &&
          (errno == ECONNREFUSED), "ECONNREFUSED");
    rclose(fd);

    lfd = rsocket(AF_INET, SOCK_STREAM, 0);
    CHECK(lfd >= 0, "rsocket listen");
    addr_of(&sin, port);
    CHECK(rbind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "rbind");
    CHECK(rlisten(lfd, 4) == 0, "rlisten");
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        /* the child uses a fresh librdmacm state: exec ourselves */
        char p[16];
        snprintf(p, sizeof(p), "%d", port);
        execl("/proc/self/exe", argv[0], "-c", p, (char *)NULL);
        _exit(127);
    }
    server(lfd);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0), "client exit 0");
    printf("rsocket ok\n");
    return 0;
}
