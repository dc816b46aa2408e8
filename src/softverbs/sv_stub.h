/*
 * softverbs: entry points the soft HCA does not support. Shared by the
 * three replacement libraries (libibverbs, libmlx5, libefa).
 */
#ifndef SV_STUB_H
#define SV_STUB_H

#include <errno.h>
#include <stddef.h>

#ifndef SV_EXPORT
#define SV_EXPORT __attribute__((visibility("default")))
#endif

/* Returns NULL with errno EOPNOTSUPP */
#define SV_STUB_NULL(_type, _name, ...) \
    SV_EXPORT _type _name(__VA_ARGS__) \
    { \
        errno = EOPNOTSUPP; \
        return NULL; \
    }

/* Returns EOPNOTSUPP (the verbs convention for int results) */
#define SV_STUB_ERR(_name, ...) \
    SV_EXPORT int _name(__VA_ARGS__) \
    { \
        return EOPNOTSUPP; \
    }

/* Returns EOPNOTSUPP and sets errno to it as well (rdma-core's mlx5 dr_*
 * calls: "errno = EOPNOTSUPP; return errno;") */
#define SV_STUB_ERRNO(_name, ...) \
    SV_EXPORT int _name(__VA_ARGS__) \
    { \
        errno = EOPNOTSUPP; \
        return EOPNOTSUPP; \
    }

/* Returns -EOPNOTSUPP (calls documented as returning -errno) */
#define SV_STUB_NEG(_name, ...) \
    SV_EXPORT int _name(__VA_ARGS__) \
    { \
        return -EOPNOTSUPP; \
    }

/* Returns -1 with errno EOPNOTSUPP (file descriptor results, where a
 * positive error would read as a valid descriptor) */
#define SV_STUB_FD(_name, ...) \
    SV_EXPORT int _name(__VA_ARGS__) \
    { \
        errno = EOPNOTSUPP; \
        return -1; \
    }

/* Nothing to release: no object of this kind is ever handed out */
#define SV_STUB_VOID(_name, ...) \
    SV_EXPORT void _name(__VA_ARGS__) \
    { \
    }

#endif
