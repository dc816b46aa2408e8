/*
 * Shared declarations of the UCT data-integrity test (qpx_uct_integrity.c:
 * setup, target and main; qpx_uct_integrity_ops.c: the operation tests).
 */
#ifndef QPX_UCT_INTEGRITY_H_
#define QPX_UCT_INTEGRITY_H_

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/config/types.h>
#include <ucs/sys/math.h>
#include <sys/types.h>

#define AM_ID      11
#define BUF_SIZE   (4ul << 20)
#define MAX_IOV    16

typedef struct {
    uct_component_h    comp;
    uct_md_h           md;
    ucs_async_context_t *async;
    uct_worker_h       worker;
    uct_iface_h        iface;
    uct_iface_attr_t   attr;
    uct_ep_h           ep;
    void               *buf;      /* BUF_SIZE, registered */
    uct_mem_h          memh;
    size_t             rkey_size;
    int                sock;
    int                ep_failed;
} ctx_t;

/* What the peers exchange */
typedef struct {
    uint64_t buf_addr;
    uint8_t  rkey[64];
    uint8_t  dev_addr[64];
    uint8_t  ep_addr[128];
    uint8_t  iface_addr[64];   /* a connect-to-iface transport's */
} peer_info_t;

/* Commands from the initiator to the target */
enum { CMD_CHECK = 1, CMD_FILL, CMD_AMSTAT, CMD_SET64, CMD_GET64, CMD_QUIT,
       CMD_RECONNECT };

typedef struct {
    uint32_t cmd;
    uint32_t seed;
    uint64_t len;
    uint64_t value;
} cmd_t;

typedef struct {
    uct_completion_t super;
    int              done;
    ucs_status_t     status;
} comp_t;

typedef struct {
    const void *src;
    size_t      len;
    void        *dst;
} pack_arg_t;

#define RETRY(_c, _expr) \
    ({ ucs_status_t _s; \
       while ((_s = (_expr)) == UCS_ERR_NO_RESOURCE) uct_worker_progress((_c)->worker); \
       _s; })

void pass(const char *what);
void fail(const char *what);
void skip(const char *what);
void fill(void *p, uint32_t seed, size_t len);
int check(const void *p, uint32_t seed, size_t len);
int ctx_connect(ctx_t *c, peer_info_t *remote);
uint64_t remote_cmd(ctx_t *c, uint32_t op, uint32_t seed, uint64_t len,
                    uint64_t value);
void comp_init(comp_t *comp);
int wait_op(ctx_t *c, ucs_status_t status, comp_t *comp);
int flush_ep(ctx_t *c);
size_t pack_cb(void *dest, void *arg);
/* qpx_uct_integrity_params.c: wrong arguments refused */
extern int ucx_own; /* -P */
void test_params(ctx_t *c, uct_rkey_t rkey, uint64_t raddr);
void unpack_cb(void *arg, const void *data, size_t length);
size_t make_iov(ctx_t *c, uct_iov_t *iov, void *buf, size_t len,
                size_t max_iov);
int run_initiator(ctx_t *c, size_t max_size);
int run_kill(ctx_t *c, int sock_a, int sock_b, pid_t pid_a, double limit);

#endif
