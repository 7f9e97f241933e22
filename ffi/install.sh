#!/bin/sh
# Installs the C library, its header and a pkg-config file into a prefix.
#
#   ffi/install.sh PREFIX
#
# Builds `dsh-session-reference-ffi` in release mode (honours CARGO and
# CARGO_TARGET_DIR), then installs
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

(cd "$root" && CARGO_TARGET_DIR=$target "$cargo" build --release -p dsh-session-reference-ffi)

version=$(sed -n 's/^#define DSR_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/dsh_session_reference.h")
[ -n "$version" ] || { echo "cannot read DSR_VERSION_STRING from the header" >&2; exit 1; }

mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
cp "$root/include/dsh_session_reference.h" "$prefix/include/"
chmod 644 "$prefix/include/dsh_session_reference.h"
cp "$target/release/libdsh_session_reference.a" "$prefix/lib/"
chmod 644 "$prefix/lib/libdsh_session_reference.a"
for shared in libdsh_session_reference.so libdsh_session_reference.dylib; do
    if [ -f "$target/release/$shared" ]; then
        cp "$target/release/$shared" "$prefix/lib/"
        chmod 755 "$prefix/lib/$shared"
    fi
done

case $(uname -s) in
    Darwin) private="-framework CoreFoundation -lSystem -lc -lm" ;;
    *) private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc" ;;
esac
"$root/ffi/pkg-config.sh" "$prefix" "$version" "$private" > "$prefix/lib/pkgconfig/dsh-session-reference.pc"
echo "installed dsh_session_reference $version into $prefix"
