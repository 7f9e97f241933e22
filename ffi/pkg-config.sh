#!/bin/sh
# Prints the pkg-config file of the C library, dsh-session-reference.pc.
#
#   ffi/pkg-config.sh PREFIX VERSION LIBS_PRIVATE > PREFIX/lib/pkgconfig/dsh-session-reference.pc
#
# PREFIX is written as given: an absolute path (ffi/install.sh), or
# '${pcfiledir}/../..' for a prefix that works wherever it is unpacked (the
# C SDK of scripts/package.sh). LIBS_PRIVATE: what a static link needs.
set -eu
if [ $# -ne 3 ]; then
    echo "usage: $0 PREFIX VERSION LIBS_PRIVATE" >&2
    exit 2
fi
cat <<PC
prefix=$1
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: dsh-session-reference
Description: Bounded, read-only, tamper-proof snapshots of other conversations (C API of dsh-session-reference)
Version: $2
Cflags: -I\${includedir}
Libs: -L\${libdir} -ldsh_session_reference
Libs.private: $3
PC
