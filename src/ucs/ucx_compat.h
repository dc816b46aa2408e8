/*
 * The one place that knows which UCX qpx is built against.
 *
 * UCX installs only its public API; the internal types a transport needs
 * (component, md, tl, base iface, arbiter) come either from UCX's own source
 * tree (configure --with-ucx-src) or from one declaration file per supported
 * UCX version under src/ucs/compat/. Supporting another UCX version means
 * adding one file there and one line below.
 */
#ifndef QPX_UCX_COMPAT_H_
#define QPX_UCX_COMPAT_H_

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

/* The UCX release built against, comparable: QPX_UCX_AT_LEAST(1, 19) */
#define QPX_UCX_VERSION(_major, _minor) (((_major) * 1000) + (_minor))
#define QPX_UCX_BUILD_VERSION \
    QPX_UCX_VERSION(QPX_UCX_BUILD_MAJOR, QPX_UCX_BUILD_MINOR)
#define QPX_UCX_AT_LEAST(_major, _minor) \
    (QPX_UCX_BUILD_VERSION >= QPX_UCX_VERSION(_major, _minor))

#if defined(QPX_UCX_INTERNAL_HEADERS)
/* UCX's internal headers read the macros of its own build's config.h; its
 * package macros must not replace qpx's */
#  pragma push_macro("PACKAGE")
#  pragma push_macro("PACKAGE_BUGREPORT")
#  pragma push_macro("PACKAGE_NAME")
#  pragma push_macro("PACKAGE_STRING")
#  pragma push_macro("PACKAGE_TARNAME")
#  pragma push_macro("PACKAGE_URL")
#  pragma push_macro("PACKAGE_VERSION")
#  pragma push_macro("VERSION")
#  undef PACKAGE
#  undef PACKAGE_BUGREPORT
#  undef PACKAGE_NAME
#  undef PACKAGE_STRING
#  undef PACKAGE_TARNAME
#  undef PACKAGE_URL
#  undef PACKAGE_VERSION
#  undef VERSION
#  include QPX_UCX_BUILD_CONFIG_H
#  undef PACKAGE
#  undef PACKAGE_BUGREPORT
#  undef PACKAGE_NAME
#  undef PACKAGE_STRING
#  undef PACKAGE_TARNAME
#  undef PACKAGE_URL
#  undef PACKAGE_VERSION
#  undef VERSION
#  pragma pop_macro("PACKAGE")
#  pragma pop_macro("PACKAGE_BUGREPORT")
#  pragma pop_macro("PACKAGE_NAME")
#  pragma pop_macro("PACKAGE_STRING")
#  pragma pop_macro("PACKAGE_TARNAME")
#  pragma pop_macro("PACKAGE_URL")
#  pragma pop_macro("PACKAGE_VERSION")
#  pragma pop_macro("VERSION")
#  include <uct/base/uct_component.h>
#  include <uct/base/uct_md.h>
#  include <uct/base/uct_iface.h>
#  include <uct/base/uct_cm.h>
#  include <uct/base/uct_worker.h>
#  include <ucs/async/async.h>
#  include <ucs/type/spinlock.h>
#  include <uct/api/v2/uct_v2.h>
#  include <ucs/datastruct/arbiter.h>
#  include <ucs/datastruct/queue.h>
#elif (QPX_UCX_BUILD_MAJOR == 1) && (QPX_UCX_BUILD_MINOR == 13)
#  include "compat/ucx-1.13.h"
#elif (QPX_UCX_BUILD_MAJOR == 1) && \
      ((QPX_UCX_BUILD_MINOR == 19) || (QPX_UCX_BUILD_MINOR == 22))
#  include "compat/ucx-1.19.h" /* 1.19's layouts and what 1.22 changed */
#else
#  error "no declarations of UCX internals for this UCX version: see configure --help"
#endif

#include <ucs/debug/log_def.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#if QPX_UCX_AT_LEAST(1, 19) && defined(QPX_UCX_INTERNAL_HEADERS)
/* ucs_align_up and the pointer arithmetic left math.h in UCX 1.19, for a
 * header that is not installed (compat/ucx-1.19.h defines ucs_align_up) */
#  include <ucs/sys/ptr_arith.h>
#endif
#include <ucs/sys/string.h>
#include <ucs/sys/stubs.h>
#include <uct/api/version.h>

/*
 * Invariants. UCX's own ucs_assert (ucs/debug/assert.h) is not installed:
 * built against the installed UCX, qpx defines it on libucs' exported
 * ucs_fatal_error_format, checked when configured with --enable-assertions
 * (QPX_ENABLE_ASSERT); against a UCX tree (--with-ucx-src), UCX's own header
 * defines it, by that UCX's configuration.
 */
#ifndef ucs_assert
void ucs_fatal_error_format(const char *file, unsigned line,
                            const char *function, const char *format, ...)
    UCS_F_NORETURN UCS_F_PRINTF(4, 5);
#  if defined(QPX_ENABLE_ASSERT)
#    define UCS_ENABLE_ASSERT 1
#    define ucs_assert(_expr) \
    do { \
        if (!ucs_likely(_expr)) { \
            ucs_fatal_error_format(__FILE__, __LINE__, __func__, \
                                   "Assertion `%s' failed", #_expr); \
        } \
    } while (0)
#    define ucs_assertv(_expr, _fmt, ...) \
    do { \
        if (!ucs_likely(_expr)) { \
            ucs_fatal_error_format(__FILE__, __LINE__, __func__, \
                                   "Assertion `%s' failed: " _fmt, #_expr, \
                                   ## __VA_ARGS__); \
        } \
    } while (0)
#  else
#    define UCS_ENABLE_ASSERT 0
#    define ucs_assert(_expr)             do { } while (0)
#    define ucs_assertv(_expr, _fmt, ...) do { } while (0)
#  endif
#endif

/*
 * Deliver an active message to the handler UCP installed. Mirrors UCX's
 * inline uct_iface_invoke_am, which is not part of the installed API.
 */
static UCS_F_ALWAYS_INLINE ucs_status_t
qpx_iface_invoke_am(uct_base_iface_t *iface, uint8_t id, void *data,
                    unsigned length, unsigned flags)
{
    uct_am_handler_t *handler = &iface->am[id];

    return handler->cb(handler->arg, data, length, flags);
}

/* Complete one of the operations a uct_completion_t counts */
static UCS_F_ALWAYS_INLINE void
qpx_invoke_completion(uct_completion_t *comp, ucs_status_t status)
{
    if (ucs_unlikely(status != UCS_OK) && (comp->status == UCS_OK)) {
        comp->status = status;
    }
    if (--comp->count == 0) {
        comp->func(comp);
    }
}

/* Version of UCX this library was built against, as "major.minor" */
#define QPX_UCX_BUILD_VERSION_STRING \
    UCS_PP_MAKE_STRING(QPX_UCX_BUILD_MAJOR) "." \
    UCS_PP_MAKE_STRING(QPX_UCX_BUILD_MINOR) "." \
    UCS_PP_MAKE_STRING(QPX_UCX_BUILD_PATCH)

#endif
