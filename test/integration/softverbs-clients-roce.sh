#!/bin/sh
# softverbs-clients.sh on a RoCE port (SOFTVERBS_LINK_LAYER=ethernet): every
# unmodified ibverbs-utils and perftest pair with the GID a user names
# (softverbs-lib.sh's svt_link_opts: the RoCE v2 GID of an IPv4 address,
# passed as -g / -x), DC included
here=$(cd "$(dirname "$0")" && pwd)
SOFTVERBS_LINK_LAYER=ethernet
export SOFTVERBS_LINK_LAYER
exec sh "$here/softverbs-clients.sh"
