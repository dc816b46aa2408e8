/*
 * softverbs conformance suite: shared declarations.
 *
 * Every case runs in freshly exec'd rank processes (1..SVT_MAX_PROCS), so
 * the verbs library under test is initialised per case with the case's own
 * environment. Ranks talk over socketpairs: rank 0 holds one socket to each
 * other rank, every other rank one socket to rank 0. A case fails as soon as
 * one rank calls svt_fail(); each rank is bounded by alarm(), the runner
 * kills the whole process group when the case deadline passes.
 */
#ifndef SOFTVERBS_CONFORMANCE_H
#define SOFTVERBS_CONFORMANCE_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>

#define SVT_MAX_PROCS     3
#define SVT_TIMEOUT_DEF   10      /* seconds per case unless the case says */
#define SVT_WC_TIMEOUT_MS 5000    /* default bound for one completion */
#define SVT_QKEY          0x11111111u
#define SVT_GRH_LEN       40

typedef struct svt_proc svt_proc_t;
typedef void (*svt_case_fn_t)(svt_proc_t *p);

/* One named test case */
typedef struct svt_case {
    const char    *name;
    svt_case_fn_t fn;
    int           nprocs;   /* ranks to start */
    long          arg;      /* case parameter (e.g. message size) */
    int           timeout;  /* seconds, 0: SVT_TIMEOUT_DEF */
    const char    *env;     /* "A=1 B=2": extra environment for the ranks */
    unsigned      flags;
} svt_case_t;

/* Rank 1 is expected to die (killed by the case): ignore its exit status */
#define SVT_CASE_F_PEER_DIES 0x1u

struct svt_proc {
    int              rank;
    int              nprocs;
    int              sock[SVT_MAX_PROCS]; /* sock[r]: socket to rank r, -1 */
    long             arg;
    const svt_case_t *tc;
};

/* Connection information exchanged between ranks */
typedef struct svt_addr {
    uint32_t qpn;
    uint32_t psn;
    uint32_t rkey;
    uint32_t pad;
    uint16_t lid;
    uint8_t  gid[16];
    uint64_t addr;
    uint64_t size;
    int32_t  pid;
} svt_addr_t;

/* An open device with its PD and the attributes the cases need */
typedef struct svt_dev {
    struct ibv_context     *ctx;
    struct ibv_pd          *pd;
    struct ibv_device_attr attr;
    struct ibv_port_attr   port;
    union ibv_gid          gid;
    uint8_t                port_num;
} svt_dev_t;

/* How to build an endpoint (CQ + buffer + MR + QP) */
typedef struct svt_ep_opts {
    enum ibv_qp_type         type;
    int                      cq_size;
    uint32_t                 max_send_wr;
    uint32_t                 max_recv_wr;
    uint32_t                 max_send_sge;
    uint32_t                 max_recv_sge;
    uint32_t                 max_inline;
    int                      sig_all;
    size_t                   buf_size;
    int                      mr_access;
    int                      qp_access;    /* RC/UC qp_access_flags */
    struct ibv_srq           *srq;
    struct ibv_cq            *cq;          /* share this CQ, else own one */
    struct ibv_comp_channel  *chan;
    uint8_t                  timeout;
    uint8_t                  retry_cnt;
    uint8_t                  rnr_retry;
    uint8_t                  min_rnr_timer;
} svt_ep_opts_t;

typedef struct svt_ep {
    svt_dev_t     *dev;
    svt_ep_opts_t o;
    struct ibv_cq *cq;
    int           own_cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    uint8_t       *buf;
    size_t        size;
    svt_addr_t    remote;
    struct ibv_ah *ah;      /* UD: address handle to the remote */
} svt_ep_t;

/* --- process / messaging (softverbs_conformance_lib.c) --- */
void svt_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void svt_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void svt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __FILE_NAME__
#define SVT_FILE __FILE_NAME__
#else
#define SVT_FILE __FILE__
#endif

#define SVT_CHECK(_cond, _fmt, ...) \
    do { \
        if (!(_cond)) { \
            svt_fail("%s:%d: " _fmt, SVT_FILE, __LINE__, ## __VA_ARGS__); \
        } \
    } while (0)

/* Abort the case if a verbs call returned non-zero / NULL */
#define SVT_OK(_call) \
    do { \
        int _r = (_call); \
        SVT_CHECK(_r == 0, "%s returned %d (errno %d)", #_call, _r, errno); \
    } while (0)
#define SVT_NN(_ptr, _call) \
    do { \
        (_ptr) = (_call); \
        SVT_CHECK((_ptr) != NULL, "%s failed (errno %d)", #_call, errno); \
    } while (0)

void     svt_msg_send(svt_proc_t *p, int peer, const void *buf, size_t len);
void     svt_msg_recv(svt_proc_t *p, int peer, void *buf, size_t len);
void     svt_barrier(svt_proc_t *p);
void     svt_sync(svt_proc_t *p, int peer);
uint64_t svt_xchg_u64(svt_proc_t *p, int peer, uint64_t v);
double   svt_now_ms(void);
void     svt_sleep_ms(int ms);

/* --- data patterns --- */
void    svt_fill(void *buf, size_t len, uint32_t seed);
ssize_t svt_verify(const void *buf, size_t len, uint32_t seed);
void    svt_memset_check(const void *buf, size_t len, uint8_t val,
                         const char *what);
/* The *_during_write cases (a memory change while a peer's RDMA write into
 * it is under way). The writer: len bytes of 0x55 from ep to the address
 * and key rank target sends, which complete (the key was checked before
 * the change). The target: waits for the first byte at buf, calls
 * change(arg) (what: its name), writes the last page of buf itself, and
 * once the writer saw its completion checks that the page kept its bytes
 * and that the write placed the rest */
void    svt_during_write_writer(svt_proc_t *p, int target, svt_ep_t *ep,
                                size_t len);
void    svt_during_write_target(svt_proc_t *p, int writer, uint8_t *buf,
                                size_t len, const char *what,
                                void (*change)(void *arg), void *arg);
void    svt_pattern_check(const void *buf, size_t len, uint32_t seed,
                          const char *what);

/* --- verbs helpers --- */
void svt_dev_open(svt_dev_t *dev);
void svt_dev_open_name(svt_dev_t *dev, const char *name);
void svt_dev_close(svt_dev_t *dev);
void svt_ep_opts_init(svt_ep_opts_t *o, enum ibv_qp_type type);
void svt_ep_create(svt_dev_t *dev, const svt_ep_opts_t *o, svt_ep_t *ep);
void svt_ep_addr(const svt_ep_t *ep, svt_addr_t *addr);
void svt_ep_connect(svt_ep_t *ep, const svt_addr_t *remote);
void svt_ep_destroy(svt_ep_t *ep);
void svt_ep_pair(svt_proc_t *p, int peer, svt_dev_t *dev,
                 const svt_ep_opts_t *o, svt_ep_t *ep);
void svt_ep_local_pair(svt_dev_t *dev, const svt_ep_opts_t *o, svt_ep_t *a,
                       svt_ep_t *b);
void svt_ah_attr_init(const svt_dev_t *dev, const svt_addr_t *remote,
                      struct ibv_ah_attr *ah);

void svt_qp_to_init(struct ibv_qp *qp, const svt_dev_t *dev, int access);
void svt_qp_to_rtr(struct ibv_qp *qp, const svt_dev_t *dev,
                   const svt_addr_t *remote, const svt_ep_opts_t *o);
void svt_qp_to_rts(struct ibv_qp *qp, const svt_ep_opts_t *o);
enum ibv_qp_state svt_qp_state(struct ibv_qp *qp);

int  svt_post_send(svt_ep_t *ep, enum ibv_wr_opcode op, size_t off,
                   size_t len, uint64_t raddr, uint32_t rkey, uint32_t imm,
                   int flags, uint64_t wr_id);
void svt_post_recv(svt_ep_t *ep, size_t off, size_t len, uint64_t wr_id);
int  svt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);
void svt_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);
void svt_expect_wc(struct ibv_cq *cq, enum ibv_wc_status status,
                   int opcode, uint64_t wr_id, struct ibv_wc *wc_out);
void svt_expect_no_wc(struct ibv_cq *cq, int ms);
/* stderr into a temporary file until svt_stderr_end(saved, ...), which
 * puts it back, copies what was written into text and returns how often
 * needle occurs in it */
int  svt_stderr_begin(void);
int  svt_stderr_end(int saved, const char *needle, char *text, size_t size);
void svt_wait_async(struct ibv_context *ctx, enum ibv_event_type type,
                    int timeout_ms, struct ibv_async_event *out);
int  svt_wait_fd(int fd, int timeout_ms);

/* Remote buffer of ep, offset by off */
static inline uint64_t svt_raddr(const svt_ep_t *ep, size_t off)
{
    return ep->remote.addr + off;
}

/* --- case tables, one per file --- */
extern const svt_case_t svt_cases_data[];
extern const svt_case_t svt_cases_atomic[];
extern const svt_case_t svt_cases_qp[];
extern const svt_case_t svt_cases_err[];
extern const svt_case_t svt_cases_ud[];
extern const svt_case_t svt_cases_event[];
extern const svt_case_t svt_cases_stress[];
extern const svt_case_t svt_cases_ex[];
extern const svt_case_t svt_cases_sys[];
extern const svt_case_t svt_cases_feat[];
extern const svt_case_t svt_cases_mw[];
extern const svt_case_t svt_cases_mw_inv[];
extern const svt_case_t svt_cases_pd[];
extern const svt_case_t svt_cases_xrc[];
extern const svt_case_t svt_cases_xrc_timer[];
#ifdef HAVE_MLX5DV
extern const svt_case_t svt_cases_dc[];
extern const svt_case_t svt_cases_dc_data[];
#endif
#ifdef HAVE_RDMACM
extern const svt_case_t svt_cases_cm[];
extern const svt_case_t svt_cases_cm_conn[];
extern const svt_case_t svt_cases_cm_sync[];
#endif

#endif
