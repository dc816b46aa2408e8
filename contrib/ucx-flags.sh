# Sourced by contrib/ucx-build.sh and contrib/ucx-gtest.sh: how the UCX
# releases of ../shared/ucx other than Debian's are configured for qpx's
# tests. Assertions and parameter checks on, statistics and debug data off
# (the ENABLE_* values of Debian's libucx0, which decide UCX's internal
# layouts); no Java, Go, MPI, GPU (a CUDA toolkit in /usr/local/cuda would
# otherwise be built against: slow, and not tested here), knem, xpmem, ugni
# or fuse3 parts. Each script adds whether gtest is built. The words and
# their order are part of the cache keys of the builds.
QPX_UCX_RELEASE_FLAGS="--enable-mt --with-verbs --disable-logging
    --enable-devel-headers --enable-cma --enable-assertions
    --enable-params-check --disable-stats --disable-debug-data
    --without-java --without-go --without-mpi --without-cuda --without-rocm
    --without-ze --without-gdrcopy --without-knem --without-xpmem
    --without-ugni --without-fuse3 --disable-doxygen-doc"
