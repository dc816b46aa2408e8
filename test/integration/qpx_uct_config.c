/*
 * UCT's configuration API on qpx's transports: qpx_uct_config TL...
 * uct_config_modify() takes UCT's common interface options under their
 * UCT names (FAILURE, MAX_NUM_EPS, as every UCX transport, and UCX's
 * tools and gtest set them so) and qpx's own under the names ucx_info -c
 * shows without UCX_<TL>_ (QPX_SEG_SIZE); an unknown name is
 * UCS_ERR_NO_ELEM; the value set is the one read back. Prints
 * "N passed, N failed"; exit 0 when none failed, 77 without qpx.
 */
#include "qpx_uct_open.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static void config_case(uct_md_h md, const char *tl)
{
    uct_iface_config_t *config;
    char value[64];
    int hybrid = !strcmp(tl, "qpx");
    const char *failure = hybrid ? "FAILURE" : "QPX_FAILURE";

    if (uct_md_iface_config_read(md, tl, NULL, NULL, &config) != UCS_OK) {
        qpx_uct_report(0, "%s: configuration read", tl);
        return;
    }
    qpx_uct_report(uct_config_modify(config, "FAILURE", "error") == UCS_OK,
                   "%s: uct_config_modify(FAILURE)", tl);
    qpx_uct_report((uct_config_get(config, failure, value,
                                   sizeof(value)) == UCS_OK) &&
                   !strcasecmp(value, "error"),
                   "%s: FAILURE reads back 'error' (as %s)", tl, failure);
    qpx_uct_report(uct_config_modify(config, "MAX_NUM_EPS", "17") == UCS_OK,
                   "%s: uct_config_modify(MAX_NUM_EPS)", tl);
    if (!hybrid) {
        qpx_uct_report(uct_config_modify(config, "QPX_SEG_SIZE", "4k") ==
                       UCS_OK, "%s: uct_config_modify(QPX_SEG_SIZE)", tl);
    }
    qpx_uct_report(uct_config_modify(config, "NO_SUCH_OPTION", "1") ==
                   UCS_ERR_NO_ELEM, "%s: an unknown name is UCS_ERR_NO_ELEM",
                   tl);
    uct_config_release(config);
}

int main(int argc, char **argv)
{
    uct_component_h comp;
    uct_md_h md;
    int i, ret;

    if (argc < 2) {
        fprintf(stderr, "usage: %s TL...\n", argv[0]);
        return 2;
    }
    ret = qpx_uct_md_open(argv[1], "softverbs0:1", &comp, &md);
    if (ret != 0) {
        return ret;
    }
    for (i = 1; i < argc; ++i) {
        config_case(md, argv[i]);
    }
    uct_md_close(md);
    printf("%d passed, %d failed\n", qpx_uct_npass, qpx_uct_nfail);
    return (qpx_uct_nfail == 0) ? 0 : 1;
}
