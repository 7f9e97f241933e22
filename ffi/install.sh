#!/bin/sh
# Installs the C library, its header and a pkg-config file into a prefix.
#
#   ffi/install.sh PREFIX
#
# Builds `dsh-session-reference-ffi` with the profile the release artifacts
# ship (`dist`: whole-program LTO, no debug info, stripped; about 4-5 MB, not
# the 38 MB / 101 MB of a release build with line tables), then installs
# (honours CARGO, CARGO_TARGET_DIR, and DSR_PROFILE to build another profile,
# e.g. DSR_PROFILE=release for a faster build while developing)
#   PREFIX/include/dsh_session_reference.h
#   PREFIX/lib/libdsh_session_reference.{so,dylib,a}
#   PREFIX/lib/pkgconfig/dsh-session-reference.pc
# Use it with: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs dsh-session-reference
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
cargo=${CARGO:-cargo}
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$root/$target ;; esac

profile=${DSR_PROFILE:-dist}
(cd "$root" && CARGO_TARGET_DIR=$target "$cargo" build --locked --profile "$profile" -p dsh-session-reference-ffi)
built=$target/$profile
[ "$profile" != dev ] || built=$target/debug

version=$(sed -n 's/^#define DSR_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/dsh_session_reference.h")
[ -n "$version" ] || { echo "cannot read DSR_VERSION_STRING from the header" >&2; exit 1; }

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
cp "$root/include/dsh_session_reference.h" "$prefix/include/"
chmod 644 "$prefix/include/dsh_session_reference.h"
cp "$built/libdsh_session_reference.a" "$prefix/lib/"
chmod 644 "$prefix/lib/libdsh_session_reference.a"
for shared in libdsh_session_reference.so libdsh_session_reference.dylib; do
    if [ -f "$built/$shared" ]; then
        cp "$built/$shared" "$prefix/lib/"
        chmod 755 "$prefix/lib/$shared"
    fi
done

case $(uname -s) in
    Darwin) private="-framework CoreFoundation -lSystem -lc -lm" ;;
    *) private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc" ;;
esac
"$root/ffi/pkg-config.sh" "$prefix" "$version" "$private" > "$prefix/lib/pkgconfig/dsh-session-reference.pc"
echo "installed dsh_session_reference $version into $prefix"
