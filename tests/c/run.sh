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
# 5. compiles the examples of include/README.md (host.c, sources.c) strictly
#    and runs host.c,
# 6. runs the README's "Build and install" commands exactly as written (each
#    fenced block marked <!-- example:NAME -->), with HOME a fresh directory,
#    from a directory outside the checkout that holds the examples: install
#    into $HOME/.local, build through pkg-config with the rpath and run,
#    static, sources.c on the sample transcripts, and without installing.
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
    # The header's exact text depends on the cbindgen version: pin it. A
    # debug build: it runs once on one crate, and its release build was
    # about 110 s of a clean CI run on two cores.
    "$cargo" install cbindgen --debug --locked --version "$CBINDGEN_VERSION" --root "$target/tools"
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

step "include/README.md examples, strict"
# The examples as a user saves them: in a directory of their own, outside
# the checkout.
user=$work/user
home=$work/home
mkdir "$user" "$home"
case $user in "$root"/*) echo "$user is inside the checkout: set TMPDIR elsewhere" >&2; exit 1 ;; esac
example() { "$root/scripts/readme-example.sh" "$root/include/README.md" "$1" | sed "s|/path/to/checkout|$root|g"; }
example host.c > "$user/host.c"
example sources.c > "$user/sources.c"
for prog in host sources; do
    gcc "${CFLAGS[@]}" "$user/$prog.c" "$lib/libdsh_session_reference.a" "${LIBS[@]}" -o "$work/$prog"
done
"$work/host" | tee "$work/host.out"
grep -q '<referenced-sessions>' "$work/host.out"

step "include/README.md build commands, as written, with HOME=$home"
# "Build and install": ffi/install.sh "$HOME/.local" in the checkout (with the
# release build the steps above made: the default, `dist`, is what a user
# installs, the same code with LTO and a much longer build), then the
# commands of one terminal session in $user, where host.c and sources.c are
# ("/path/to/checkout" being this checkout).
example install.sh > "$work/install.sh"
# (the toolchain stays where it is installed when HOME changes)
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
HOME=$home DSR_PROFILE=release bash -e "$work/install.sh"
{ example build.sh; example static.sh; example sources.sh; } > "$work/session.sh"
(cd "$user" && env HOME="$home" bash -e "$work/session.sh") | tee "$work/session.out"
[ "$(grep -c '<referenced-sessions>' "$work/session.out")" = 3 ] # host, host-static, sources with an id
grep -q '"sessionId":"codex:44444444-4444-4444-8444-444444444444"' "$work/session.out"
grep -q 'codex:11111111-1111-4111-8111-111111111111' "$work/session.out"
export PKG_CONFIG_PATH=$home/.local/lib/pkgconfig
[ "$(pkg-config --modversion dsh-session-reference)" = "$(sed -n 's/^#define DSR_VERSION_STRING "\(.*\)"$/\1/p' include/dsh_session_reference.h)" ]
# (ldd's output in a variable: `ldd | grep -q` fails on SIGPIPE under pipefail)
grep -q "$home/.local/lib/libdsh_session_reference.so" <<<"$(ldd "$user/host")"
! grep -q dsh_session_reference <<<"$(readelf -d "$user/host-static")"
# Without the rpath the program does not start, as the README says.
# shellcheck disable=SC2046
gcc -std=c11 "$user/host.c" $(pkg-config --cflags --libs dsh-session-reference) -o "$work/host_no_rpath"
if env -u LD_LIBRARY_PATH "$work/host_no_rpath" >/dev/null 2>"$work/no_rpath.err"; then
    echo "a host built without -rpath started: the README's explanation is wrong here" >&2
    exit 1
fi
grep -q 'error while loading shared libraries: libdsh_session_reference.so' "$work/no_rpath.err"
LD_LIBRARY_PATH=$home/.local/lib "$work/host_no_rpath" >/dev/null
if [ "$target" = "$root/target" ]; then
    # "Without installing": against the checkout's target/release.
    (cd "$user" && rm -f host && env -u CARGO_TARGET_DIR HOME="$home" bash -e <(example uninstalled.sh)) |
        tee "$work/uninstalled.out"
    grep -q '<referenced-sessions>' "$work/uninstalled.out"
    grep -q "$root/target/release/libdsh_session_reference.so" <<<"$(ldd "$user/host")"
else
    echo "(the \"without installing\" commands assume target/; CARGO_TARGET_DIR is $target: not run)"
fi
echo "the README's commands build and run its examples, installed, static and uninstalled"

step "C ABI tests passed"
