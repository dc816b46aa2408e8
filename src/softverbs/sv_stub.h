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

#endif
