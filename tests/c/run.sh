#!/usr/bin/env bash
# The C host test of the C ABI (part of the project's test command).
#
#   tests/c/run.sh
#
# 1. builds the ffi crate (release; honours CARGO_TARGET_DIR, default target/),
# 2. regenerates include/dsh_session_reference.h with the cbindgen CLI and
#    fails on any difference (installs cbindgen if missing),
# 3. compiles the header as C++17 and the C test with
#    -std=c11 -Wall -Wextra -Werror -pedantic,
# 4. runs the test against the shared library, then an AddressSanitizer +
#    UBSan build against the static library, then the shared build under
#    valgrind (--leak-check=full --error-exitcode=1),
# 5. compiles and runs the host example of include/README.md,
# 6. installs into a temporary prefix with ffi/install.sh and builds the
#    example against it through pkg-config.
# Every conformance vector runs in each of the three runs of step 4
# (DSR_CONFORMANCE_DIR overrides tests/conformance), and so does
# tests/c/test_hostile.c (hostile hosts and an 8-thread stress with random
# cancellations). Under valgrind only, it uses an 8 MB snapshot instead of
# 100 MB and 3,000 listed sessions instead of 100,000 (valgrind runs them
# ~50x slower); the plain run also bounds the big snapshot's peak RSS.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$root/$target ;; esac
export CARGO_TARGET_DIR=$target
cargo=${CARGO:-cargo}
CBINDGEN_VERSION=0.29.4
work=$(mktemp -d "${TMPDIR:-/tmp}/dsr-c-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
step() { printf '\n== %s (%ss)\n' "$1" "$(($(date +%s) - start))"; }

step "tools"
missing=()
for tool in gcc g++ valgrind pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    pkgs=()
    for tool in "${missing[@]}"; do
        case $tool in
            gcc) pkgs+=(gcc libc6-dev) ;;
            g++) pkgs+=(g++) ;;
            *) pkgs+=("$tool") ;;
        esac
    done
    echo "installing ${pkgs[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
fi
cbindgen=$(command -v cbindgen || true)
if [ -z "$cbindgen" ] || [ "$("$cbindgen" --version)" != "cbindgen $CBINDGEN_VERSION" ]; then
    # The header's exact text depends on the cbindgen version: pin it.
    "$cargo" install cbindgen --locked --version "$CBINDGEN_VERSION" --root "$target/tools"
    cbindgen=$target/tools/bin/cbindgen
fi

step "build the ffi crate"
"$cargo" build --release -p dsh-session-reference-ffi
lib=$target/release

step "header drift check"
"$cbindgen" --quiet --config ffi/cbindgen.toml --crate dsh-session-reference-ffi --output "$work/header.h"
if ! diff -u include/dsh_session_reference.h "$work/header.h"; then
    echo "include/dsh_session_reference.h is out of date: regenerate it with" >&2
    echo "  cbindgen --config ffi/cbindgen.toml --crate dsh-session-reference-ffi --output include/dsh_session_reference.h" >&2
    exit 1
fi
echo "the header matches ffi/src"

step "compile"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic -g -Iinclude)
LIBS=(-lpthread -ldl -lm -lrt)
g++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude tests/c/header_cpp.cpp \
    "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/header_cpp"
"$work/header_cpp"
echo "the header compiles and links as C++17"
gcc "${CFLAGS[@]}" -O1 tests/c/test_main.c tests/c/json.c -L"$lib" -Wl,-rpath,"$lib" \
    -ldsh_session_reference "${LIBS[@]}" -o "$work/test_shared"
gcc "${CFLAGS[@]}" -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
    tests/c/test_main.c tests/c/json.c "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/test_asan"
gcc "${CFLAGS[@]}" -O1 tests/c/test_hostile.c tests/c/json.c -L"$lib" -Wl,-rpath,"$lib" \
    -ldsh_session_reference "${LIBS[@]}" -o "$work/hostile_shared"
gcc "${CFLAGS[@]}" -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
    tests/c/test_hostile.c tests/c/json.c "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/hostile_asan"

step "run (shared library)"
"$work/test_shared"
DSR_TEST_CHECK_RSS=1 "$work/hostile_shared"

step "run under AddressSanitizer + UBSan (static library)"
asan_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    DSR_TEST_TIME_FACTOR=3)
env "${asan_env[@]}" "$work/test_asan"
env "${asan_env[@]}" "$work/hostile_asan"

step "run under valgrind (shared library)"
vg=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1
    --suppressions=tests/c/valgrind.supp --fair-sched=yes
    # The library's blocking pool may hold up to 512 threads (hung host
    # callbacks keep theirs); valgrind's default limit is 500 threads.
    --max-threads=1500)
DSR_TEST_TIME_FACTOR=10 DSR_TEST_NO_FORK=1 "${vg[@]}" "$work/test_shared"
DSR_TEST_TIME_FACTOR=10 DSR_TEST_BIG_MB=8 DSR_TEST_SESSIONS=3000 "${vg[@]}" "$work/hostile_shared"

step "include/README.md example"
awk '/<!-- example:host.c -->/{f=1;next} f&&/^```c$/{g=1;next} g&&/^```$/{exit} g{print}' include/README.md \
    > "$work/host.c"
[ -s "$work/host.c" ] || { echo "no example found in include/README.md" >&2; exit 1; }
gcc "${CFLAGS[@]}" "$work/host.c" "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/host"
"$work/host" | tee "$work/host.out"
grep -q '<referenced-sessions>' "$work/host.out"
awk '/<!-- example:sources.c -->/{f=1;next} f&&/^```c$/{g=1;next} g&&/^```$/{exit} g{print}' include/README.md \
    > "$work/sources.c"
[ -s "$work/sources.c" ] || { echo "no sources example found in include/README.md" >&2; exit 1; }
gcc "${CFLAGS[@]}" "$work/sources.c" "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/sources"
fx=$root/tests/fixtures/foreign-logs
"$work/sources" "[{\"kind\":\"claude-code\",\"root\":\"$fx/claude-code\"},{\"kind\":\"codex\",\"root\":\"$fx/codex/daaain\"}]" \
    | tee "$work/sources.out"
grep -q 'codex:11111111-1111-4111-8111-111111111111' "$work/sources.out"
grep -q 'After compaction' "$work/sources.out"

step "install into a prefix and build through pkg-config"
# The release build the steps above made (the default, `dist`, is what a
# user installs: the same code with LTO, a much longer build).
DSR_PROFILE=release ffi/install.sh "$work/prefix"
export PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig
pkg-config --exists --print-errors dsh-session-reference
[ "$(pkg-config --modversion dsh-session-reference)" = "$(sed -n 's/^#define DSR_VERSION_STRING "\(.*\)"$/\1/p' include/dsh_session_reference.h)" ]
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -pedantic "$work/host.c" $(pkg-config --cflags --libs dsh-session-reference) \
    -Wl,-rpath,"$(pkg-config --variable=libdir dsh-session-reference)" -o "$work/host_installed"
"$work/host_installed" >/dev/null
# (ldd's output in a variable: `ldd | grep -q` fails on SIGPIPE under pipefail)
grep -q "$work/prefix/lib/libdsh_session_reference.so" <<<"$(ldd "$work/host_installed")"
echo "the installed library, header and pkg-config file work"

step "C ABI tests passed"
