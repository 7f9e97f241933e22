#!/usr/bin/env bash
# Installs what scripts/package.sh wrote into dist/ the way a user would, with
# no Rust toolchain on PATH and no network, and runs it:
#
#   1. the checksums, and the contents of the sdist and the crate;
#   2. Python: a fresh venv, `pip install --no-index` of the wheel, then each
#      of the README's examples saved as a file and run from a fresh directory;
#   3. Node: a fresh npm project installs the two tarballs (offline, with an
#      empty cache and an unreachable registry), then runs the README's
#      examples as ES modules and as CommonJS;
#   4. C: the commands of the SDK tarball's README, as written, in a fresh
#      directory holding the tarball: unpack, build the example through
#      pkg-config (shared with an rpath, then static) and run it;
#   5. the CLI: `dsh-session-ref demo` from an empty directory (the example
#      store is embedded in the binary);
#   6. the Linux binaries need no glibc newer than DSR_DIST_GLIBC (2.17), and
#      link libgcc_s.so.1 (the unwinder glibc's pthread_exit uses).
#
# Fails loudly when an artifact is missing or broken. Part of
# scripts/test-all.sh, after scripts/package.sh.
#
# Environment: DSR_DIST_DIR (default dist/), PYTHON (default python3),
# DSR_DIST_TARGET, DSR_DIST_ZIG, DSR_DIST_GLIBC as for scripts/package.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$SECONDS
step() { printf '\n--> test-dist: %s  (+%ds)\n' "$*" $((SECONDS - start)); }
die() { echo "test-dist.sh: $*" >&2; exit 1; }
trap 'echo "test-dist.sh: failed (line $LINENO): $BASH_COMMAND" >&2' ERR

dist=${DSR_DIST_DIR:-$root/dist}
[ -d "$dist" ] || die "no $dist: run scripts/package.sh first"
dist=$(cd "$dist" && pwd)
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml")
[ -n "$version" ] || die "no version in Cargo.toml"
python=$(command -v "${PYTHON:-python3}") || die "no ${PYTHON:-python3}"

step "no Rust toolchain on PATH"
path=""
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ -d "$d" ] || continue
  [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ] || path=${path:+$path:}$d
done
export PATH=$path
unset CARGO RUSTC RUSTUP_TOOLCHAIN CARGO_TARGET_DIR RUSTFLAGS CARGO_HOME RUSTUP_HOME
! command -v cargo >/dev/null && ! command -v rustc >/dev/null || die "cargo or rustc is still on PATH"
echo "PATH=$PATH"
# No network either: npm gets an unreachable registry, pip --no-index.
export npm_config_registry=http://127.0.0.1:9/ npm_config_audit=false npm_config_fund=false \
  npm_config_update_notifier=false PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_NO_INDEX=1

work=$(mktemp -d "${TMPDIR:-/tmp}/dsr-test-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
case $work in "$root"/*) die "the work directory must be outside the source tree" ;; esac

# The one file matching a pattern in dist/, or a loud failure.
artifact() {
  local found=()
  for f in "$dist"/$1; do [ -f "$f" ] && found+=("$f"); done
  [ ${#found[@]} -eq 1 ] || die "expected one dist/$1, found ${#found[@]}: run scripts/package.sh"
  echo "${found[0]}"
}
target=${DSR_DIST_TARGET:-}
if [ -z "$target" ]; then
  sdk=$(artifact "dsh-session-reference-$version-*.tar.gz")
  target=${sdk##*/dsh-session-reference-$version-}
  target=${target%.tar.gz}
fi
wheel=$(artifact "dsh_session_reference-$version-cp39-abi3-*.whl")
sdist=$(artifact "dsh_session_reference-$version.tar.gz")
npm_main=$(artifact "dsh-session-reference-$version.tgz")
npm_platform=$(artifact "dsh-session-reference-*-$version.tgz")
sdk=$(artifact "dsh-session-reference-$version-$target.tar.gz")
cli=$(artifact "dsh-session-ref-$version-$target.tar.gz")
crate=$(artifact "dsh-session-reference-$version.crate")

step "checksums, sdist and crate contents"
if command -v sha256sum >/dev/null; then
  (cd "$dist" && sha256sum --check --strict --quiet SHA256SUMS)
else
  (cd "$dist" && shasum -a 256 --check --quiet SHA256SUMS) # macOS
fi
for f in "$wheel" "$sdist" "$npm_main" "$npm_platform" "$sdk" "$cli" "$crate"; do
  grep -q " ${f##*/}\$" "$dist/SHA256SUMS" || die "${f##*/} is not in SHA256SUMS"
done
has_files() {
  local listing=$1; shift
  for f in "$@"; do grep -qx "$f" <<<"$listing" || die "$f is missing"; done
}
s=dsh_session_reference-$version
has_files "$(tar -tzf "$sdist")" "$s/PKG-INFO" "$s/pyproject.toml" "$s/Cargo.toml" "$s/Cargo.lock" "$s/LICENSE-MIT" \
  "$s/LICENSE-APACHE" "$s/core/src/lib.rs" "$s/dsh_session_reference/__init__.py" "$s/dsh_session_reference/py.typed"
grep -qx "Version: $version" <<<"$(tar -xzOf "$sdist" "$s/PKG-INFO")" || die "the sdist's PKG-INFO is not version $version"
c=dsh-session-reference-$version
has_files "$(tar -tzf "$crate")" "$c/Cargo.toml" "$c/Cargo.lock" "$c/README.md" "$c/LICENSE-MIT" "$c/LICENSE-APACHE" \
  "$c/src/lib.rs"
echo "ok"

# --- Python ---------------------------------------------------------------------
step "Python: venv + pip install --no-index ${wheel##*/}"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-cache-dir "$wheel"
"$work/venv/bin/python" -m pip check
mkdir "$work/py" && cd "$work/py"
step "Python: the installed package, and the README's examples run as scripts from outside the repository"
"$work/venv/bin/python" - "$version" "$work/venv" <<'PY'
import pathlib, sys
version, venv = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
import dsh_session_reference
from dsh_session_reference import _native
assert pathlib.Path(dsh_session_reference.__file__).resolve().is_relative_to(venv), dsh_session_reference.__file__
assert pathlib.Path(_native.__file__).name.endswith(".abi3.so"), _native.__file__
assert dsh_session_reference.__version__ == version, dsh_session_reference.__version__
print(f"dsh_session_reference {version} from {_native.__file__}")
PY
# Each example saved as a file in a fresh directory and run with the venv's
# python, with the variables the README says to set (the runner of
# python/tests/test_readme.py).
"$work/venv/bin/python" "$root/python/tests/readme_examples.py"

# --- Node -----------------------------------------------------------------------
step "Node: a fresh project installs ${npm_platform##*/} and ${npm_main##*/} offline"
mkdir -p "$work/node/app" && cd "$work/node/app"
printf '{"name":"dist-test","version":"1.0.0","private":true}\n' > package.json
npm install --offline --no-audit --no-fund --loglevel=error --cache "$work/node/npm-cache" \
  "$npm_platform" "$npm_main" </dev/null
platform=${npm_platform##*/dsh-session-reference-}
platform=${platform%-$version.tgz}
[ -f "node_modules/dsh-session-reference-$platform/dsh-session-reference.$platform.node" ] ||
  die "the platform package did not install its .node"
[ -z "$(find node_modules/dsh-session-reference -name '*.node')" ] || die "the main package holds a .node"
# The README's examples, each saved in this project and run with `node FILE`
# from here, with the variables the README says to set for its sample data
# (node/test/readme-examples.js, which node/test/readme.test.js uses too).
node - "$root/node/test/readme-examples.js" "$work/node/app" <<'JS'
const path = require('node:path')
const [helpers, app] = process.argv.slice(2)
const { runReadmeExamples } = require(helpers)
const resolved = require.resolve('dsh-session-reference', { paths: [app] })
if (!resolved.startsWith(path.join(app, 'node_modules') + path.sep)) throw new Error(`resolved ${resolved}`)
const count = runReadmeExamples(app, { commonjs: true })
console.log(`${count} README examples ran as ES modules and as CommonJS against ${resolved}`)
JS

# --- C --------------------------------------------------------------------------
step "C: ${sdk##*/}, its README's commands as written"
# As a user: the tarball in a directory of its own, then the README's
# commands of one terminal session there (unpack, go in, build through
# pkg-config with the rpath, run; then static).
sdk_dir=dsh-session-reference-$version-$target
prefix=$work/c/$sdk_dir
mkdir "$work/c" && cp "$sdk" "$work/c/" && cd "$work/c"
tar -xzOf "$sdk" "$sdk_dir/README.md" > sdk-README.md
case $target in
  *-linux-*)
    { "$root/scripts/readme-example.sh" sdk-README.md use.sh
      "$root/scripts/readme-example.sh" sdk-README.md static.sh; } > session.sh
    (env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH bash -e session.sh) | tee session.out
    [ "$(grep -c '<referenced-sessions>' session.out)" = 2 ] || die "the C example printed no context (shared, static)"
    ;;
  *) tar -xzf "$sdk" ;;
esac
for f in include/dsh_session_reference.h lib/libdsh_session_reference.a lib/pkgconfig/dsh-session-reference.pc \
  examples/host.c examples/sources.c README.md LICENSE-MIT LICENSE-APACHE; do
  [ -f "$prefix/$f" ] || die "the C SDK lacks $f"
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg=dsh-session-reference
pkg-config --exists --print-errors $pkg
[ "$(pkg-config --modversion $pkg)" = "$version" ] || die "pkg-config says version $(pkg-config --modversion $pkg)"
libdir=$(pkg-config --variable=libdir $pkg)
case $target in
  *-linux-*)
    soname=$(readelf -d "$prefix/lib/libdsh_session_reference.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    [ -n "$soname" ] || die "the shared library has no soname"
    [ -f "$prefix/lib/$soname" ] || die "the soname $soname is not in lib/"
    # (outputs in variables: `producer | grep -q` can fail on SIGPIPE under pipefail)
    loaded=$(ldd "$prefix/host")
    grep -q "=> $(cd "$libdir" && pwd -P)/$soname\|=> $libdir/$soname" <<<"$loaded" ||
      { echo "$loaded"; die "the README's host does not load $soname from the SDK"; }
    ! grep -q dsh_session_reference <<<"$(readelf -d "$prefix/host-static")" || die "host-static still needs the shared library"
    # (the same output but for the context message's random id)
    [ "$(grep -c . session.out)" = 6 ] || die "expected three lines from each of host and host-static"
    head -n 3 session.out | sed 's/"id":"[0-9a-f-]*"/"id":ID/' | cmp - <(tail -n 3 session.out | sed 's/"id":"[0-9a-f-]*"/"id":ID/') ||
      die "the static build printed something else"
    # The examples compile without a warning.
    CFLAGS=(-std=c11 -Wall -Wextra -Werror -pedantic)
    for example in host sources; do
      # shellcheck disable=SC2046
      gcc "${CFLAGS[@]}" "$prefix/examples/$example.c" $(pkg-config --cflags --libs $pkg) -o "strict-$example"
    done
    echo "shared ($soname) and static builds run"
    ;;
esac

# --- CLI ------------------------------------------------------------------------
step "CLI: ${cli##*/}, demo from an empty directory"
mkdir "$work/cli" "$work/cli/elsewhere" "$work/cli/home" "$work/cli/tmp"
tar -xzf "$cli" -C "$work/cli"
exe=$work/cli/dsh-session-ref-$version-$target/dsh-session-ref
[ -x "$exe" ] || die "the CLI tarball has no dsh-session-ref"
cli_dir=${exe%/*}
for f in README.md man/dsh-session-ref.1 man/dsh-session-ref-search.1 completions/dsh-session-ref.bash \
  completions/_dsh-session-ref completions/dsh-session-ref.fish; do
  [ -s "$cli_dir/$f" ] || die "the CLI tarball has no $f"
done
# The README's links stay inside the tarball (no ../docs or relative links).
! grep -Eo '\]\([^)]*\)' "$cli_dir/README.md" | grep -Ev '^\]\((https?://|#|dsh-session:)' ||
  die "the CLI tarball's README links to files it does not hold"
bash -n "$cli_dir/completions/dsh-session-ref.bash" || die "the bash completion does not parse"
if command -v man >/dev/null; then
  man -l "$cli_dir/man/dsh-session-ref.1" 2>/dev/null | grep -q 'dsh-session-ref' || die "the manual page does not render"
fi
case $target in *-linux-*) ! grep -q '\.symtab' <<<"$(readelf -S "$exe")" || die "dsh-session-ref is not stripped" ;; esac
# The README's install commands, as written, from the unpacked directory
# (HOME a fresh directory): the binary, manual pages and completions land
# under ~/.local and ~/.config, and the installed binary runs.
"$root/scripts/readme-example.sh" "$cli_dir/README.md" install.sh > "$work/cli/install.sh"
(cd "$cli_dir" && env HOME="$work/cli/home" bash -e "$work/cli/install.sh")
for f in .local/bin/dsh-session-ref .local/share/man/man1/dsh-session-ref.1 \
  .local/share/bash-completion/completions/dsh-session-ref .zfunc/_dsh-session-ref \
  .config/fish/completions/dsh-session-ref.fish; do
  [ -s "$work/cli/home/$f" ] || die "the README's install commands did not install ~/$f"
done
cd "$work/cli/elsewhere"
[ "$(env -u DSH_HOME HOME="$work/cli/home" "$work/cli/home/.local/bin/dsh-session-ref" --version)" = "dsh-session-ref $version" ] ||
  die "the installed dsh-session-ref --version"
rm -r "$work/cli/home" && mkdir "$work/cli/home"
env -u DSH_HOME HOME="$work/cli/home" TMPDIR="$work/cli/tmp" "$exe" demo > demo.txt
grep -q '^== Sessions root: the bundled example store' demo.txt || die "demo did not use the embedded store"
grep -q '<referenced-sessions>' demo.txt || die "demo printed no context"
env -u DSH_HOME HOME="$work/cli/home" TMPDIR="$work/cli/tmp" "$exe" demo --json |
  node -e 'const o = JSON.parse(require("fs").readFileSync(0, "utf8")); if (o.prepared.additionalContext.source.references.length !== 2) process.exit(1)' ||
  die "demo --json is not the two-reference result"
[ -z "$(ls -A "$work/cli/tmp")" ] || die "demo left its unpacked example store behind"
[ "$(ls -A)" = demo.txt ] || die "demo wrote into the current directory"
sed -n '1,6p' demo.txt

# --- glibc floor -------------------------------------------------------------------
case $target in
  *-linux-gnu)
    if [ "${DSR_DIST_ZIG:-1}" != 0 ]; then
      floor=${DSR_DIST_GLIBC:-2.17}
      step "the Linux binaries need glibc <= $floor"
      tag=manylinux_${floor/./_}
      [ "$tag" != manylinux_2_17 ] || tag=manylinux2014
      case ${wheel##*/} in *"-$tag"_*) ;; *) die "${wheel##*/} is not tagged $tag" ;; esac
      mkdir "$work/wheel" && (cd "$work/wheel" && "$work/venv/bin/python" -m zipfile -e "$wheel" .)
      tar -xzf "$npm_platform" -C "$work/node"
      for bin in "$prefix/lib/libdsh_session_reference.so" "$exe" "$work"/wheel/dsh_session_reference/*.so \
        "$work"/node/package/*.node; do
        need=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
        [ "$(printf '%s\n%s\n' "$need" "$floor" | sort -V | tail -n 1)" = "$floor" ] ||
          die "${bin##*/} needs glibc $need, newer than $floor"
        echo "${bin##*/}: glibc $need"
        # The unwinder glibc's pthread_exit uses (scripts/package.sh, "The
        # unwinder"): with zig's static one instead, a Python thread ended
        # during interpreter exit crashed the process.
        readelf -d "$bin" | grep -q 'NEEDED.*\[libgcc_s\.so\.1\]' ||
          die "${bin##*/} does not link libgcc_s.so.1: it carries another unwinder than glibc's pthread_exit uses"
      done
    fi
    ;;
esac

step "all artifacts install and run without a Rust toolchain ($((SECONDS - start))s)"
