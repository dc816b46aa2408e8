#!/bin/sh
# Regenerate the build system (configure, Makefile.in) from configure.ac.
set -e
cd "$(dirname "$0")"
mkdir -p config/m4 config/aux
autoreconf -v --install --force
