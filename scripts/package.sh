#!/usr/bin/env bash
# Builds what a release publishes, exactly as it would be published, into dist/:
#
#   dsh_session_reference-<v>-cp39-abi3-manylinux2014_<arch>.manylinux_2_17_<arch>.whl
#                                    the abi3 wheel (CPython >= 3.9), compliance checked by maturin
#   dsh_session_reference-<v>.tar.gz the sdist (builds with maturin and cargo)
#   dsh-session-reference-<v>.tgz    the npm main package (wrapper, types, optionalDependencies)
#   dsh-session-reference-<plat>-<v>.tgz
#                                    the npm platform package of this machine (the .node)
#   dsh-session-reference-<v>-<target>.tar.gz
#                                    the C SDK: include/, lib/ (soname'd .so and .a), lib/pkgconfig/
#   dsh-session-ref-<v>-<target>.tar.gz
#                                    the stripped CLI
#   dsh-session-reference-<v>.crate  the core crate, as `cargo package` makes and verifies it
#   SHA256SUMS
#
#   scripts/package.sh [STEP...]     steps: check wheel sdist npm c-sdk cli crates (default: all)
#
# Everything is built with the `dist` cargo profile (Cargo.toml: fat LTO, one
# codegen unit, stripped) into one target dir. On Linux the C code and the
# final links go through `zig cc` (the ziglang package from PyPI, driven by
# maturin's zig wrapper) against glibc 2.17, so every artifact, not only the
# wheel, runs on glibc >= 2.17; the wheel's tag is then manylinux2014. They
# link libgcc_s.so.1, as a plain gcc link does, not zig's unwinder (see "The
# unwinder" below).
# scripts/test-dist.sh installs and runs the results without a Rust toolchain.
# .github/workflows/release.yml runs the same steps per platform.
#
# Environment:
#   DSR_DIST_DIR       output directory (default dist/; emptied of old artifacts first)
#   DSR_DIST_TARGET    target triple (default: the host's)
#   DSR_DIST_ZIG       1 (default on Linux): link through zig against DSR_DIST_GLIBC;
#                      0: the system toolchain (the wheel is then tagged for this machine's glibc)
#   DSR_DIST_GLIBC     glibc floor with zig (default 2.17, manylinux2014)
#   DSR_DIST_PROFILE   cargo profile of the artifacts (default dist; the test command passes
#                      dist-check: the same settings without whole-program LTO, see Cargo.toml)
#   DSR_PYTHON_VENV    virtualenv with maturin (default python/.venv, shared with python/run-tests.sh)
#   CARGO_TARGET_DIR   honoured (default target/); CARGO_BUILD_JOBS default 2
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
step() { printf '\n--> package: %s  (+%ds)\n' "$*" $((SECONDS - start)); }
die() { echo "package.sh: $*" >&2; exit 1; }
trap 'echo "package.sh: failed (line $LINENO): $BASH_COMMAND" >&2' ERR

ZIGLANG_VERSION=0.17.1
profile=${DSR_DIST_PROFILE:-dist}
out=${DSR_DIST_DIR:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
case $CARGO_TARGET_DIR in /*) ;; *) CARGO_TARGET_DIR=$root/$CARGO_TARGET_DIR ;; esac
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
host=$(rustc -vV | sed -n 's/^host: //p')
target=${DSR_DIST_TARGET:-$host}
venv=${DSR_PYTHON_VENV:-$root/python/.venv}
work=$(mktemp -d "${TMPDIR:-/tmp}/dsr-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(check wheel sdist npm c-sdk cli crates)
for s in "${steps[@]}"; do
  case $s in check | wheel | sdist | npm | c-sdk | cli | crates) ;; *) die "unknown step '$s'" ;; esac
done

# One version for everything: the workspace's.
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
[ -n "$version" ] || die "no version in [workspace.package] of Cargo.toml"
out_dir=$CARGO_TARGET_DIR/$target/$profile

# --- the toolchain -----------------------------------------------------------
step "virtualenv $venv (maturin$([ "${DSR_DIST_ZIG:-}" = 0 ] || echo ", ziglang $ZIGLANG_VERSION"))"
vbin=$venv/bin
[ -d "$venv/Scripts" ] && vbin=$venv/Scripts # a Windows venv
[ -x "$vbin/python" ] || [ -x "$vbin/python.exe" ] || "${PYTHON:-python3}" -m venv "$venv"
[ -d "$venv/Scripts" ] && vbin=$venv/Scripts
case $target in *-linux-gnu | *-linux-musl) zig=${DSR_DIST_ZIG:-1} ;; *) zig=${DSR_DIST_ZIG:-0} ;; esac
pip_pkgs=(-r python/requirements-dev.txt)
[ "$zig" = 0 ] || pip_pkgs+=("ziglang==$ZIGLANG_VERSION")
"$vbin/python" -m pip install -q "${pip_pkgs[@]}"
maturin=$vbin/maturin

if [ "$zig" != 0 ]; then
  # Wrappers of a fixed path, so that cargo, maturin and napi all link the
  # same way and share one build of the dependencies.
  glibc=${DSR_DIST_GLIBC:-2.17}
  arch=${target%%-*}
  case $target in
    *-linux-gnu) zig_target=$arch-linux-gnu.$glibc ;;
    *-linux-musl) zig_target=$arch-linux-musl ;;
  esac
  wrappers=$CARGO_TARGET_DIR/zig-wrappers/$zig_target
  # The unwinder. Rust's standard library links libgcc_s on *-linux-gnu,
  # and `maturin zig cc` (cargo-zigbuild) turns -lgcc_s into zig's own static
  # libunwind. glibc's pthread_exit unwinds with libgcc_s, which it loads
  # itself; CPython before 3.14 calls it on a thread that takes the GIL back
  # during finalization, and the Rust frames on such a thread were then
  # unwound by one unwinder and read by the other: the wheel crashed at
  # interpreter exit with work in flight (python/tests/test_exit.py).
  # So the linker wrapper passes libgcc_s itself, by path, as a plain gcc
  # link would: every artifact needs libgcc_s.so.1 (in every manylinux
  # policy's list), and scripts/test-dist.sh checks that it does.
  gcc_s=""
  case $target in
    *-linux-gnu)
      for gcc in "$arch-linux-gnu-gcc" gcc; do
        [ "$gcc" = gcc ] && [ "$arch" != "${host%%-*}" ] && continue
        command -v "$gcc" >/dev/null 2>&1 || continue
        candidate=$("$gcc" -print-file-name=libgcc_s.so.1)
        case $candidate in /*) [ -f "$candidate" ] && { gcc_s=$candidate; break; } ;; esac
      done
      [ -n "$gcc_s" ] || die "no libgcc_s.so.1 for $target (tried $arch-linux-gnu-gcc$([ "$arch" = "${host%%-*}" ] && echo " and gcc") -print-file-name): install that target's gcc"
      # (a path of its own: the wrappers before this rule linked zig's
      # unwinder, and cargo relinks only when the linker's path changes)
      wrappers=$wrappers+gcc_s
      ;;
  esac
  mkdir -p "$wrappers"
  for tool in cc c++ ar; do
    case $tool in ar) flags="" ;; *) flags="-target $zig_target" ;; esac
    {
      echo '#!/bin/sh'
      if [ -n "$gcc_s" ] && [ "$tool" != ar ]; then
        echo '# -lgcc_s by path (scripts/package.sh, "The unwinder"): zig would put its libunwind in its place'
        # (this machine's libgcc_s may use a newer glibc than the floor; the
        # user's own libgcc_s is the one loaded at run time)
        echo 'for arg do shift; if [ "$arg" = -lgcc_s ]; then set -- "$@" '"'$gcc_s'"' -Wl,--allow-shlib-undefined; else set -- "$@" "$arg"; fi; done'
      fi
      cat <<SH
CARGO_ZIGBUILD_ZIG_COMMAND="$vbin/python" CARGO_ZIGBUILD_ZIG_COMMAND_ARGS="-m ziglang" \\
  exec "$maturin" zig $tool -- $flags "\$@"
SH
    } > "$wrappers/$tool.tmp"
    chmod +x "$wrappers/$tool.tmp"
    # Rewritten only when it changes: cargo fingerprints the linker's path.
    if cmp -s "$wrappers/$tool.tmp" "$wrappers/$tool"; then rm "$wrappers/$tool.tmp"; else mv "$wrappers/$tool.tmp" "$wrappers/$tool"; fi
  done
  upper=$(echo "$target" | tr 'a-z-' 'A-Z_')
  lower=${target//-/_}
  # Only for the builds of artifacts (with_toolchain): elsewhere, e.g. in
  # `cargo package`, they would rebuild the workspace's own debug artifacts.
  toolchain_env=("CARGO_TARGET_${upper}_LINKER=$wrappers/cc" "CC_$lower=$wrappers/cc" "CXX_$lower=$wrappers/c++"
    "AR_$lower=$wrappers/ar")
else
  toolchain_env=()
fi
with_toolchain() { env "${toolchain_env[@]}" "$@"; }
case $target in
  *-linux-gnu) if [ "$zig" != 0 ]; then compat=manylinux_${glibc/./_}; else compat=""; fi ;;
  *-linux-musl) compat=musllinux_1_2 ;;
  *) compat="" ;;
esac
[ "$compat" != manylinux_2_17 ] || compat=manylinux2014

# Build step helpers: every cargo build of a release artifact goes through here.
cargo_dist() { with_toolchain cargo "$1" --locked --profile "$profile" --target "$target" "${@:2}"; }

# dist/NAME.tar.gz of $work/NAME, owned by root whoever builds it.
make_tar() {
  if [[ $(tar --version 2>/dev/null) == *GNU* ]]; then
    tar -C "$work" --owner=0 --group=0 --numeric-owner -czf "$out/$1.tar.gz" "$1"
  else
    tar -C "$work" --uid 0 --gid 0 -czf "$out/$1.tar.gz" "$1" # bsdtar
  fi
}

has() { local s; for s in "${steps[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

# --- check: one version everywhere, generated files current --------------------
if has check; then
  step "one version ($version) everywhere"
  header_version=$(sed -n 's/^#define DSR_VERSION_STRING "\(.*\)"$/\1/p' include/dsh_session_reference.h)
  [ "$header_version" = "$version" ] || die "include/dsh_session_reference.h says $header_version, Cargo.toml $version"
  node_version=$(node -p "require('./node/package.json').version")
  [ "$node_version" = "$version" ] || die "node/package.json says $node_version, Cargo.toml $version"
  grep -q "^## \[$version\]" CHANGELOG.md || die "CHANGELOG.md has no '## [$version]' section"
  (cd node && [ -d node_modules/@napi-rs/cli ] || npm ci --no-audit --no-fund --loglevel=error </dev/null)
  # (napi keeps the directory it writes inside the package)
  npm_check=$(mktemp -d node/.npm-check.XXXXXX)
  (cd node && npx --no-install napi create-npm-dirs --npm-dir "${npm_check#node/}" >/dev/null)
  npm_same=1
  diff -ru node/npm "$npm_check" || npm_same=0
  rm -rf "$npm_check"
  if [ "$npm_same" = 0 ]; then
    die "node/npm/ differs from what 'napi create-npm-dirs' makes of node/package.json: regenerate it (cd node && npx napi create-npm-dirs)"
  fi
fi

# Artifacts of an earlier run are removed step by step, so a stale one can
# never pass for a fresh one.
clean() { local p; for p in "$@"; do rm -f "$out"/$p; done; }

# --- wheel and sdist -----------------------------------------------------------
if has wheel; then
  step "wheel (maturin, profile $profile, target $target${compat:+, compatibility $compat})"
  clean "dsh_session_reference-*.whl"
  with_toolchain "$maturin" build --locked --manifest-path python/Cargo.toml --interpreter "$vbin/python" \
    --profile "$profile" --target "$target" ${compat:+--compatibility "$compat"} --out "$out"
fi
if has sdist; then
  step "sdist"
  clean "dsh_session_reference-*.tar.gz"
  "$maturin" sdist --manifest-path python/Cargo.toml --out "$out"
fi

# --- npm ---------------------------------------------------------------------
if has npm; then
  step "npm: the addon (napi build, profile $profile, target $target)"
  clean "dsh-session-reference-[0-9]*.tgz" "dsh-session-reference-*-[0-9]*.tgz"
  (cd node && [ -d node_modules/@napi-rs/cli ] || npm ci --no-audit --no-fund --loglevel=error </dev/null)
  # A fixed output directory: napi's build environment names it, and a new
  # one each time would rebuild the addon. It also receives the generated
  # index.js and index.d.ts (not packed from here: the main package takes
  # the committed ones), so that node/run-tests.sh can test this build
  # (DSR_NODE_ADDON_DIR, as the test command does).
  napi_out=$CARGO_TARGET_DIR/napi-$profile/$target
  rm -rf "$napi_out"
  mkdir -p "$napi_out"
  (cd node && with_toolchain npx --no-install napi build --platform --profile "$profile" --target "$target" \
    --output-dir "$napi_out" -- --locked </dev/null)
  addon=$(cd "$napi_out" && ls dsh-session-reference.*.node)
  platform=${addon#dsh-session-reference.}
  platform=${platform%.node}
  [ -d "node/npm/$platform" ] || die "napi built $addon, but node/npm/$platform does not exist (napi.targets in node/package.json)"

  # npm packs only LICENSE or LICENCE by itself: list the two license files.
  with_licenses() {
    node -e '
      const fs = require("fs"), file = process.argv[1], pkg = JSON.parse(fs.readFileSync(file, "utf8"))
      pkg.files = [...pkg.files, "LICENSE-MIT", "LICENSE-APACHE"]
      fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n")
    ' "$1"
  }

  step "npm: the platform package dsh-session-reference-$platform"
  cp -R "node/npm/$platform" "$work/pkg-$platform"
  cp "$napi_out/$addon" LICENSE-MIT LICENSE-APACHE "$work/pkg-$platform/"
  with_licenses "$work/pkg-$platform/package.json"
  (cd "$work/pkg-$platform" && npm pack --silent --pack-destination "$out" >/dev/null)

  step "npm: the main package, with optionalDependencies on every platform package"
  mkdir "$work/pkg-main"
  # The published files of node/package.json, less any local build's .node.
  node -e '
    const fs = require("fs"), path = require("path")
    const [src, dst] = process.argv.slice(1)
    const pkg = JSON.parse(fs.readFileSync(path.join(src, "package.json"), "utf8"))
    for (const f of pkg.files) if (!f.includes("*")) fs.copyFileSync(path.join(src, f), path.join(dst, f))
    // What `napi pre-publish` adds: one optional dependency per platform package.
    pkg.optionalDependencies = {}
    for (const dir of fs.readdirSync(path.join(src, "npm")).sort()) {
      const sub = JSON.parse(fs.readFileSync(path.join(src, "npm", dir, "package.json"), "utf8"))
      pkg.optionalDependencies[sub.name] = sub.version
    }
    fs.writeFileSync(path.join(dst, "package.json"), JSON.stringify(pkg, null, 2) + "\n")
  ' node "$work/pkg-main"
  cp LICENSE-MIT LICENSE-APACHE "$work/pkg-main/"
  with_licenses "$work/pkg-main/package.json"
  (cd "$work/pkg-main" && npm pack --silent --pack-destination "$out" >/dev/null)
  # (listings in variables: `producer | grep -q` can fail on SIGPIPE under pipefail)
  listing=$(tar -tzf "$out/dsh-session-reference-$version.tgz")
  ! grep -q '\.node$' <<<"$listing" || die "the main npm package holds a .node"
  listing=$(tar -tzf "$out/dsh-session-reference-$platform-$version.tgz")
  grep -qx "package/$addon" <<<"$listing" ||
    die "the platform package lacks $addon"
fi

# --- C SDK ---------------------------------------------------------------------
if has c-sdk; then
  step "C SDK: the ffi crate (profile $profile, target $target)"
  sdk=dsh-session-reference-$version-$target
  clean "dsh-session-reference-*-$target.tar.gz"
  major=${version%%.*}
  minor=${version#*.}
  minor=${minor%%.*}
  # The ABI is the major version, or major.minor while the major is 0.
  if [ "$major" = 0 ]; then abi=0.$minor; else abi=$major; fi
  link_args=()
  case $target in
    *-linux-*) link_args=(-C "link-arg=-Wl,-soname,libdsh_session_reference.so.$abi") ;;
    *-apple-*) link_args=(-C "link-arg=-Wl,-install_name,@rpath/libdsh_session_reference.$abi.dylib") ;;
  esac
  # --print native-static-libs: what a static link needs (the Libs.private
  # line). rustc prints it only when it runs, so it is kept beside the library.
  build_ffi() {
    cargo_dist rustc -p dsh-session-reference-ffi --lib -- --print native-static-libs "${link_args[@]}" \
      2>"$work/ffi.log" || { cat "$work/ffi.log" >&2; return 1; }
    cat "$work/ffi.log" >&2
    sed -n 's/.*native-static-libs: //p' "$work/ffi.log" | tail -n 1 > "$work/native-static-libs"
    if [ -s "$work/native-static-libs" ]; then cp "$work/native-static-libs" "$out_dir/dsr-native-static-libs"; fi
  }
  build_ffi
  if [ ! -s "$out_dir/dsr-native-static-libs" ]; then
    cargo clean --profile "$profile" --target "$target" -p dsh-session-reference-ffi
    build_ffi
  fi
  private=$(cat "$out_dir/dsr-native-static-libs")
  [ -n "$private" ] || die "rustc printed no native-static-libs"

  step "C SDK: $sdk.tar.gz"
  stage=$work/$sdk
  mkdir -p "$stage/include" "$stage/lib/pkgconfig" "$stage/examples"
  cp include/dsh_session_reference.h "$stage/include/"
  cp "$out_dir/libdsh_session_reference.a" "$stage/lib/"
  # The profile's `strip` does not reach a static library: drop the debug
  # information of the standard library's objects (17 MB -> 6 MB on x86_64).
  case $target in
    *-linux-*) strip --strip-debug "$stage/lib/libdsh_session_reference.a" ;;
    *-apple-*) strip -S "$stage/lib/libdsh_session_reference.a" ;;
  esac
  case $target in
    *-linux-*)
      cp "$out_dir/libdsh_session_reference.so" "$stage/lib/libdsh_session_reference.so.$version"
      ln -s "libdsh_session_reference.so.$version" "$stage/lib/libdsh_session_reference.so.$abi"
      ln -s "libdsh_session_reference.so.$abi" "$stage/lib/libdsh_session_reference.so"
      ;;
    *-apple-*)
      cp "$out_dir/libdsh_session_reference.dylib" "$stage/lib/libdsh_session_reference.$abi.dylib"
      ln -s "libdsh_session_reference.$abi.dylib" "$stage/lib/libdsh_session_reference.dylib"
      ;;
  esac
  # shellcheck disable=SC2016 # ${pcfiledir} is for pkg-config to expand
  ffi/pkg-config.sh '${pcfiledir}/../..' "$version" "$private" > "$stage/lib/pkgconfig/dsh-session-reference.pc"
  # The examples of the API documentation, as tests/c/run.sh extracts them.
  for example in host.c sources.c; do
    scripts/readme-example.sh include/README.md "$example" > "$stage/examples/$example"
  done
  sed "s/@VERSION@/$version/g; s/@TARGET@/$target/g" ffi/sdk/README.md > "$stage/README.md"
  cp include/README.md "$stage/include/README.md"
  cp LICENSE-MIT LICENSE-APACHE CHANGELOG.md "$stage/"
  make_tar "$sdk"
fi

# --- CLI -----------------------------------------------------------------------
if has cli; then
  step "CLI: dsh-session-ref (profile $profile, target $target)"
  cli=dsh-session-ref-$version-$target
  clean "dsh-session-ref-*-$target.tar.gz"
  cargo_dist build -p dsh-session-ref
  exe=dsh-session-ref
  case $target in *-windows-*) exe=$exe.exe ;; esac
  mkdir -p "$work/$cli"
  cp "$out_dir/$exe" "$work/$cli/"
  case $target in
    *-linux-*) ! grep -q '\.symtab' <<<"$(readelf -S "$work/$cli/$exe")" || die "$exe is not stripped" ;;
  esac
  # The manual pages and completions come from the CLI's own definition,
  # printed by a binary of this machine's (the target's one, when it runs here).
  gen=$work/$cli/$exe
  if [ "$target" != "$host" ]; then
    cargo build --locked -p dsh-session-ref
    gen=$CARGO_TARGET_DIR/debug/dsh-session-ref
  fi
  mkdir -p "$work/$cli/man" "$work/$cli/completions"
  "$gen" man --dir "$work/$cli/man"
  "$gen" completions bash > "$work/$cli/completions/dsh-session-ref.bash"
  "$gen" completions zsh > "$work/$cli/completions/_dsh-session-ref"
  "$gen" completions fish > "$work/$cli/completions/dsh-session-ref.fish"
  "$gen" completions powershell > "$work/$cli/completions/_dsh-session-ref.ps1"
  cp cli/README.md "$work/$cli/README.md"
  cp LICENSE-MIT LICENSE-APACHE CHANGELOG.md "$work/$cli/"
  make_tar "$cli"
fi

# --- crates --------------------------------------------------------------------
if has crates; then
  # The core crate is the one published; it is packaged and verified (built
  # from the packaged sources alone). The other crates are packaged without
  # a build, which still checks their metadata and that every path
  # dependency carries a version.
  step "cargo package (core: verified; ffi, python, node, teams, cli: packaged)"
  clean "*.crate"
  # The verification builds the packaged core as a workspace of its own,
  # which has none of the workspace's profiles: in the default dev profile
  # every dependency was compiled again (into the same target dir). Given
  # the workspace's [profile.dev] settings as --config, it reuses the debug
  # builds of the dependencies that `cargo test` made.
  dev_profile=()
  while IFS= read -r setting; do dev_profile+=("--config=$setting"); done < <(awk '
    /^\[/ { sec = $0; gsub(/^\[|\]$/, "", sec); dev = (sec ~ /^profile\.dev(\.|$)/); next }
    dev && /^[a-z-]+ *=/ { key = $1; sub(/^[^=]*= */, ""); sub(/ *#.*/, ""); print sec "." key "=" $0 }' Cargo.toml)
  cargo package --locked --allow-dirty "${dev_profile[@]}" -p dsh-session-reference
  cargo package --locked --allow-dirty --no-verify -p dsh-session-reference -p dsh-session-reference-ffi -p dsh-session-reference-python \
    -p dsh-session-reference-node -p dsh-session-reference-teams -p dsh-session-ref >/dev/null
  cp "$CARGO_TARGET_DIR/package/dsh-session-reference-$version.crate" "$out/"
fi

step "checksums"
(
  cd "$out"
  rm -f SHA256SUMS
  sum=(sha256sum)
  command -v sha256sum >/dev/null || sum=(shasum -a 256) # macOS
  for f in *; do
    case $f in SHA256SUMS*) continue ;; esac
    if [ -f "$f" ]; then "${sum[@]}" "$f"; fi
  done > SHA256SUMS.tmp
  mv SHA256SUMS.tmp SHA256SUMS
  ls -l
)
step "done in $((SECONDS - start))s: $out"
