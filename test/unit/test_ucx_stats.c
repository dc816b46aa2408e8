/*
 * qpx_ucx_has_statistics: whether the libucs this process loaded was built
 * with statistics. dlsym is wrapped to see which library is asked and to
 * answer as a statistics build would (which exports ucs_stats_node_alloc);
 * the real libucs of the test (Debian's, or the one it was built against)
 * is asked for real otherwise.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ucs/ucx_version.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

void *__real_dlsym(void *handle, const char *name);

static int  fake_stats_build;   /* answer as a statistics build */
static int  asked;              /* ucs_stats_node_alloc was looked up */
static char asked_in[4096];     /* in the library of this path */
static int  has_stats_init;     /* that library has ucs_stats_init */

void *__wrap_dlsym(void *handle, const char *name)
{
    static char fake;
    struct link_map *map = NULL;

    if ((handle != RTLD_DEFAULT) && (handle != RTLD_NEXT) &&
        !strcmp(name, "ucs_stats_node_alloc")) {
        asked = 1;
        if ((dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) && (map != NULL)) {
            snprintf(asked_in, sizeof(asked_in), "%s", map->l_name);
        }
        /* every libucs exports it, statistics or not */
        has_stats_init = (__real_dlsym(handle, "ucs_stats_init") != NULL);
        if (fake_stats_build) {
            return &fake;
        }
    }
    return __real_dlsym(handle, name);
}

/* qpx_ucx_has_statistics with dlsym answering as a build with (fake) or
 * without statistics; checks that the question went to libucs */
static int qpx_test_has_statistics(int fake)
{
    int ret;

    fake_stats_build = fake;
    asked            = 0;
    asked_in[0]      = '\0';
    ret              = qpx_ucx_has_statistics();
    fake_stats_build = 0;
    assert_true(asked);
    assert_non_null(strstr(asked_in, "libucs"));
    assert_true(has_stats_init);
    return ret;
}

static void test_no_stats(void **state)
{
    /* Debian's UCX and the releases contrib/ucx-build.sh makes are built
     * without statistics */
    assert_int_equal(qpx_test_has_statistics(0), 0);
}

static void test_stats_build(void **state)
{
    assert_int_equal(qpx_test_has_statistics(1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_stats),
        cmocka_unit_test(test_stats_build),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
