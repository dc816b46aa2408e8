/*
 * A plain TCP echo program (socket/connect/send/recv/poll, no rsockets
 * calls) for softverbs' librdmacm under LD_PRELOAD=librspreload.so.
 *   softverbs_rsecho -s PORT      echo every connection until EOF
 *   softverbs_rsecho -c PORT SIZE...  send SIZE bytes each, read them back,
 *                                 check every byte; "echo ok" on success
 *   softverbs_rsecho -r PORT      connect to a port nobody listens on:
 *                                 "refused ok" when errno is ECONNREFUSED
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void addr_of(struct sockaddr_in *sin, int port)
{
    memset(sin, 0, sizeof(*sin));
    sin->sin_family      = AF_INET;
    sin->sin_port        = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int serve(int port)
{
    static char buf[100000];
    struct sockaddr_in sin;
    int lfd, fd, one = 1;
    ssize_t n, w, off;

    addr_of(&sin, port);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((lfd < 0) || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
        listen(lfd, 4)) {
        perror("server");
        return 1;
    }
    fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
        perror("accept");
        return 1;
    }
    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
        for (off = 0; off < n; off += w) {
            w = send(fd, buf + off, n - off, 0);
            if (w <= 0) {
                perror("send");
                return 1;
            }
        }
    }
    if (n < 0) {
        perror("recv");
        return 1;
    }
    close(fd);
    close(lfd);
    printf("server done\n");
    return 0;
}

static int client(int port, int argc, char **argv)
{
    struct sockaddr_in sin;
    unsigned char *out, *in;
    size_t size, i, sent, got;
    int fd, a;

    addr_of(&sin, port);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if ((fd < 0) || connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
        perror("connect");
        return 1;
    }
    for (a = 0; a < argc; a++) {
        size = strtoul(argv[a], NULL, 0);
        out  = malloc(size);
        in   = malloc(size);
        for (i = 0; i < size; i++) {
            out[i] = (unsigned char)(i * 7 + a + (i >> 8));
        }
        /* interleave: send what the peer can take, read what came back */
        for (sent = got = 0; got < size;) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            ssize_t n;

            if (sent < size) {
                p.events |= POLLOUT;
            }
            if (poll(&p, 1, 10000) != 1) {
                fprintf(stderr, "poll timed out\n");
                return 1;
            }
            if ((p.revents & POLLOUT) && (sent < size)) {
                n = send(fd, out + sent, size - sent > 16384 ? 16384 :
                         size - sent, MSG_DONTWAIT);
                if ((n < 0) && (errno != EAGAIN)) {
                    perror("send");
                    return 1;
                }
                sent += (n > 0) ? n : 0;
            }
            if (p.revents & POLLIN) {
                n = recv(fd, in + got, size - got, MSG_DONTWAIT);
                if ((n < 0) && (errno == EAGAIN)) {
                    continue;
                }
                if (n <= 0) {
                    fprintf(stderr, "recv %zd\n", n);
                    return 1;
                }
                got += n;
            }
        }
        if (memcmp(in, out, size)) {
            fprintf(stderr, "echoed bytes differ (size %zu)\n", size);
            return 1;
        }
        printf("size %zu echoed\n", size);
        free(in);
        free(out);
    }
    close(fd);
    printf("echo ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct sockaddr_in sin;
    int fd;

    if ((argc >= 3) && !strcmp(argv[1], "-s")) {
        return serve(atoi(argv[2]));
    }
    if ((argc >= 3) && !strcmp(argv[1], "-c")) {
        return client(atoi(argv[2]), argc - 3, argv + 3);
    }
    if ((argc >= 3) && !strcmp(argv[1], "-r")) {
        addr_of(&sin, atoi(argv[2]));
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if ((fd >= 0) &&
            (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) &&
            (errno == ECONNREFUSED)) {
            printf("refused ok\n");
            return 0;
        }
        perror("connect");
        return 1;
    }
    fprintf(stderr, "usage: %s -s PORT | -c PORT SIZE... | -r PORT\n", argv[0]);
    return 2;
}
