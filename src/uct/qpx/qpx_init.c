/*
 * libuct_qpx.so entry point. UCX 1.13 loads only the modules it was built
 * with, so this library enters a process by LD_PRELOAD (see qpxrun) or by
 * being linked, and registers itself from its ELF constructor. It is never
 * unloaded: UCX keeps pointers to the component in its global lists.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/qpx/base/qpx_component.h>


static void UCS_F_CTOR qpx_init(void)
{
    (void)qpx_component_register();
}
