/*
 * softverbs librdmacm: what its CM does not offer, failing cleanly: ECE
 * rejects (EOPNOTSUPP), and rsockets, whose
 * every call fails with ENOSYS (man rsocket: the functions return -1 and
 * set errno), so that programs linked against them load and are told.
 */
#include "sv_cm.h"

#include <errno.h>
#include <rdma/rsocket.h>

SV_CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *priv,
                                 uint8_t len)
{
    errno = EOPNOTSUPP;
    return -1;
}

#define SV_RS_STUB(_ret, _name, ...) \
    SV_CM_EXPORT _ret _name(__VA_ARGS__) \
    { \
        errno = ENOSYS; \
        return (_ret)-1; \
    }

SV_RS_STUB(int, rsocket, int domain, int type, int protocol)
SV_RS_STUB(int, rbind, int socket, const struct sockaddr *addr,
           socklen_t addrlen)
SV_RS_STUB(int, rlisten, int socket, int backlog)
SV_RS_STUB(int, raccept, int socket, struct sockaddr *addr,
           socklen_t *addrlen)
SV_RS_STUB(int, rconnect, int socket, const struct sockaddr *addr,
           socklen_t addrlen)
SV_RS_STUB(int, rshutdown, int socket, int how)
SV_RS_STUB(int, rclose, int socket)
SV_RS_STUB(ssize_t, rrecv, int socket, void *buf, size_t len, int flags)
SV_RS_STUB(ssize_t, rrecvfrom, int socket, void *buf, size_t len, int flags,
           struct sockaddr *src_addr, socklen_t *addrlen)
SV_RS_STUB(ssize_t, rrecvmsg, int socket, struct msghdr *msg, int flags)
SV_RS_STUB(ssize_t, rsend, int socket, const void *buf, size_t len, int flags)
SV_RS_STUB(ssize_t, rsendto, int socket, const void *buf, size_t len,
           int flags, const struct sockaddr *dest_addr, socklen_t addrlen)
SV_RS_STUB(ssize_t, rsendmsg, int socket, const struct msghdr *msg, int flags)
SV_RS_STUB(ssize_t, rread, int socket, void *buf, size_t count)
SV_RS_STUB(ssize_t, rreadv, int socket, const struct iovec *iov, int iovcnt)
SV_RS_STUB(ssize_t, rwrite, int socket, const void *buf, size_t count)
SV_RS_STUB(ssize_t, rwritev, int socket, const struct iovec *iov, int iovcnt)
SV_RS_STUB(int, rpoll, struct pollfd *fds, nfds_t nfds, int timeout)
SV_RS_STUB(int, rselect, int nfds, fd_set *readfds, fd_set *writefds,
           fd_set *exceptfds, struct timeval *timeout)
SV_RS_STUB(int, rgetpeername, int socket, struct sockaddr *addr,
           socklen_t *addrlen)
SV_RS_STUB(int, rgetsockname, int socket, struct sockaddr *addr,
           socklen_t *addrlen)
SV_RS_STUB(int, rsetsockopt, int socket, int level, int optname,
           const void *optval, socklen_t optlen)
SV_RS_STUB(int, rgetsockopt, int socket, int level, int optname,
           void *optval, socklen_t *optlen)
SV_RS_STUB(int, rfcntl, int socket, int cmd, ...)
SV_RS_STUB(off_t, riomap, int socket, void *buf, size_t len, int prot,
           int flags, off_t offset)
SV_RS_STUB(int, riounmap, int socket, void *buf, size_t len)
SV_RS_STUB(size_t, riowrite, int socket, const void *buf, size_t count,
           off_t offset, int flags)
