#!/usr/bin/env bash
# Checks that the four fronts (the Python wheel, the Node addon, the C SDK,
# the CLI) resolve the same features for every crate the core is built from,
# so that scripts/package.sh, which builds them one at a time, compiles the
# core and its dependencies once and not four times.
#
#   scripts/check-front-features.sh
#
# cargo resolves a dependency's features from the packages one invocation
# builds (`resolver.feature-unification = "workspace"` is unstable in cargo
# 1.95): the CLI's rmcp enables more of tokio, tokio-util, serde and
# indexmap, and pyo3's and napi's macros more of syn, whose features change
# serde_derive, tokio-macros and futures-macro and so everything built with
# them. Each front's Cargo.toml therefore asks for the union itself (the
# block "One build of the core for every front"). When this check fails, add
# the features it names to that block in every front.
set -euo pipefail
cd "$(dirname "$0")/.."
fronts=(dsh-session-reference-ffi dsh-session-reference-python dsh-session-reference-node dsh-session-ref)
work=$(mktemp -d "${TMPDIR:-/tmp}/dsr-front-features.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree() { # package -> "name version [features]" of every crate in its build, sorted
  cargo tree --locked -q -p "$1" -e normal,build -f '{p} [{f}]' --prefix none | sed 's/ (\*)$//' | sort -u
}
# The crates the core is built from (its normal and build dependencies,
# proc-macros and their own dependencies included), as "name version".
tree dsh-session-reference | awk '{ print $1 " " $2 }' | sort -u >"$work/core"
[ -s "$work/core" ] || { echo "cargo tree listed no crate for the core" >&2; exit 1; }
for front in "${fronts[@]}"; do
  tree "$front" | awk 'NR == FNR { core[$1 " " $2] = 1; next } ($1 " " $2) in core' "$work/core" - >"$work/$front"
done
status=0
for front in "${fronts[@]:1}"; do
  if ! diff -u --label "${fronts[0]}" --label "$front" "$work/${fronts[0]}" "$work/$front"; then
    status=1
  fi
done
if [ "$status" != 0 ]; then
  echo "The fronts build the core's dependencies with different features (above), so" >&2
  echo "scripts/package.sh would compile the core once per front: add the features" >&2
  echo "to the block \"One build of the core for every front\" of every front's Cargo.toml." >&2
  exit 1
fi
echo "the ${#fronts[@]} fronts build the core's $(wc -l <"$work/core") crates with the same features"
