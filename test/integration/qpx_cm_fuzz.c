/*
 * Hostile connection requests against a UCP server behind qpx's CM:
 *   qpx_cm_fuzz ADDR PORT COUNT [SEED]
 * sends COUNT requests over librdmacm, in turn: random bytes of random
 * length (0 to 56), a qpx header whose length claims more than was sent
 * (its check over what was sent), a well-formed header over random bytes
 * (its check not theirs), a header of another kind (its check right), and
 * a client that vanishes after its request (its id destroyed before any
 * answer). Each
 * request but the vanishing ones must be refused (RDMA_CM_EVENT_REJECTED)
 * within 10 s: a hang or an ESTABLISHED connection is a failure.
 * Prints "cm fuzz: N passed, N failed" and exits 0 when none failed.
 * The header layout is qpx's (src/uct/qpx/cm/qpx_cm.h): a CRC-16
 * (ucs_crc16) of what follows it, then the kind in the top two bits of a
 * byte whose low six are the length of UCP's data.
 */
#include <rdma/rdma_cma.h>
#include <ucs/algorithm/crc.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIV_MAX     56      /* rdma_cm's REQ private data on RDMA_PS_TCP */
#define HDR_CONNECT  1       /* the kind UCP's data follows */
#define HDR_SHIFT    6
#define TIMEOUT_MS   10000

typedef struct {
    uint16_t check;
    uint8_t  kind_len;
} __attribute__((packed)) fuzz_hdr_t;

enum { FUZZ_RANDOM, FUZZ_LONG, FUZZ_BAD_CHECK, FUZZ_BAD_KIND, FUZZ_VANISH,
       FUZZ_LAST };

static const char *fuzz_names[] = {"random bytes", "length lies",
                                   "check wrong", "kind wrong", "vanished"};

static struct rdma_event_channel *chan;

/* The next event of id within TIMEOUT_MS, acknowledged; -1 when none */
static int fuzz_wait_event(struct rdma_cm_id *id, int *status)
{
    struct rdma_cm_event *ev;
    struct pollfd pfd = {chan->fd, POLLIN, 0};
    enum rdma_cm_event_type type;

    for (;;) {
        if (poll(&pfd, 1, TIMEOUT_MS) <= 0) {
            return -1;
        }
        if (rdma_get_cm_event(chan, &ev)) {
            return -1;
        }
        type    = ev->event;
        *status = ev->status;
        if (ev->id == id) {
            rdma_ack_cm_event(ev);
            return type;
        }
        rdma_ack_cm_event(ev); /* of an earlier, vanished id */
    }
}

static size_t fuzz_fill(int kind, uint8_t *buf)
{
    fuzz_hdr_t *hdr = (fuzz_hdr_t*)buf;
    size_t len, i, data;

    for (i = 0; i < PRIV_MAX; ++i) {
        buf[i] = (uint8_t)rand();
    }
    if ((kind == FUZZ_RANDOM) || (kind == FUZZ_VANISH)) {
        return rand() % (PRIV_MAX + 1);
    }

    data          = rand() % (PRIV_MAX - sizeof(*hdr) - 1) + 1;
    hdr->kind_len = (HDR_CONNECT << HDR_SHIFT) | data;
    len           = sizeof(*hdr) + data;
    switch (kind) {
    case FUZZ_LONG:
        /* says data bytes, sends fewer (the IB CM pads them with zeros),
         * its check over what it sent */
        len        = sizeof(*hdr) + rand() % data;
        hdr->check = ucs_crc16(&hdr->kind_len, len - sizeof(hdr->check));
        break;
    case FUZZ_BAD_CHECK:
        hdr->check = ucs_crc16(&hdr->kind_len, 1 + data) ^
                     (uint16_t)(1u << (rand() % 16));
        break;
    case FUZZ_BAD_KIND:
        hdr->kind_len ^= (uint8_t)((1 + rand() % 3) << HDR_SHIFT);
        hdr->check     = ucs_crc16(&hdr->kind_len, 1 + data);
        break;
    }
    return len;
}

/* One request of the kind; 1: the server behaved */
static int fuzz_one(const struct sockaddr_in *sin, int kind)
{
    struct rdma_conn_param param;
    struct rdma_cm_id *id;
    uint8_t buf[PRIV_MAX];
    int ev, status, ok = 0;

    if (rdma_create_id(chan, &id, NULL, RDMA_PS_TCP)) {
        perror("rdma_create_id");
        return 0;
    }
    if (rdma_resolve_addr(id, NULL, (struct sockaddr*)sin, 2000) ||
        (fuzz_wait_event(id, &status) != RDMA_CM_EVENT_ADDR_RESOLVED) ||
        rdma_resolve_route(id, 2000) ||
        (fuzz_wait_event(id, &status) != RDMA_CM_EVENT_ROUTE_RESOLVED)) {
        fprintf(stderr, "cm fuzz: cannot resolve the server\n");
        goto out;
    }

    memset(&param, 0, sizeof(param));
    param.private_data_len = fuzz_fill(kind, buf);
    param.private_data     = buf;
    param.qp_num           = 0x1000 + (rand() & 0xfff);
    param.retry_count      = 1;
    if (rdma_connect(id, &param)) {
        perror("rdma_connect");
        goto out;
    }
    if (kind == FUZZ_VANISH) {
        ok = 1; /* gone before any answer: the server must cope */
        goto out;
    }

    ev = fuzz_wait_event(id, &status);
    if (ev == RDMA_CM_EVENT_REJECTED) {
        ok = 1;
    } else {
        fprintf(stderr, "cm fuzz: %s (%u bytes): event %d (%s), not a "
                "reject\n", fuzz_names[kind], param.private_data_len, ev,
                (ev < 0) ? "none within 10 s" : rdma_event_str(ev));
        if (ev == RDMA_CM_EVENT_ESTABLISHED) {
            rdma_disconnect(id);
        }
    }
out:
    rdma_destroy_id(id);
    return ok;
}

int main(int argc, char **argv)
{
    unsigned count, i, passed[FUZZ_LAST] = {0}, failed[FUZZ_LAST] = {0};
    unsigned total_fail = 0, total_pass = 0;
    struct sockaddr_in sin;
    int k;

    if (argc < 4) {
        fprintf(stderr, "usage: %s ADDR PORT COUNT [SEED]\n", argv[0]);
        return 2;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port   = htons(atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
        fprintf(stderr, "cm fuzz: bad address %s\n", argv[1]);
        return 2;
    }
    count = atoi(argv[3]);
    srand((argc > 4) ? atoi(argv[4]) : 1);

    chan = rdma_create_event_channel();
    if (chan == NULL) {
        perror("rdma_create_event_channel");
        return 1;
    }
    for (i = 0; i < count; ++i) {
        k = i % FUZZ_LAST;
        if (fuzz_one(&sin, k)) {
            ++passed[k];
        } else {
            ++failed[k];
        }
    }
    rdma_destroy_event_channel(chan);

    for (k = 0; k < FUZZ_LAST; ++k) {
        printf("cm fuzz: %-12s %u refused as they should, %u not\n",
               fuzz_names[k], passed[k], failed[k]);
        total_pass += passed[k];
        total_fail += failed[k];
    }
    printf("cm fuzz: %u passed, %u failed\n", total_pass, total_fail);
    return (total_fail == 0) ? 0 : 1;
}
