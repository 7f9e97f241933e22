#!/usr/bin/env bash
# Builds the Python wheel, installs it into a virtualenv, runs the pytest
# suite against the installed package and checks the type stubs.
#
# Needs only python3 (3.9+, with venv and pip) and cargo. Non-interactive;
# exits non-zero on any failure (pytest's "no tests collected" included).
#
# Environment:
#   PYTHON              interpreter to create the venv with (default python3)
#   DSR_PYTHON_VENV     the venv (default python/.venv; reused when present)
#   DSR_PYTHON_PROFILE  cargo profile of the wheel: dev (default: shares the
#                       workspace's debug artifacts, ~2x faster to build on 2 cores
#                       than release, and the suite still runs in ~20 s) or release
#   DSR_PYTHON_WHEEL    a built wheel to test instead of building one (the test
#                       command passes the wheel scripts/package.sh made, so that
#                       the Rust code is compiled once for both)
#   CARGO_TARGET_DIR    honoured (default: the workspace's target/)
#   DSR_CONFORMANCE_DIR vector set to run (default tests/conformance)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
start=$SECONDS
step() { printf '\n--> python: %s  (+%ds)\n' "$*" $((SECONDS - start)); }

venv="${DSR_PYTHON_VENV:-$here/.venv}"
profile="${DSR_PYTHON_PROFILE:-dev}"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1

step "virtualenv $venv with $(cat "$here/requirements-dev.txt" | grep -v '^#' | tr '\n' ' ')"
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q -r "$here/requirements-dev.txt"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/wheels"
if [ -n "${DSR_PYTHON_WHEEL:-}" ]; then
  step "the wheel to test: $DSR_PYTHON_WHEEL (DSR_PYTHON_WHEEL)"
  [ -f "$DSR_PYTHON_WHEEL" ] || { echo "DSR_PYTHON_WHEEL: no such file: $DSR_PYTHON_WHEEL" >&2; exit 1; }
  cp "$DSR_PYTHON_WHEEL" "$work/wheels/"
else
  step "build the wheel (maturin, profile $profile, CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
  "$venv/bin/maturin" build --manifest-path "$here/Cargo.toml" --interpreter "$venv/bin/python" \
    --profile "$profile" --out "$work/wheels"
fi

step "install the wheel"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$work"/wheels/*.whl

# Run from a directory that does not contain the source package, so that
# everything imports the installed wheel.
cd "$work"

step "pytest (against the installed wheel)"
status=0
"$venv/bin/pytest" -c "$here/pyproject.toml" --rootdir "$here" --timeout 300 -q "$here/tests" || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
elif [ "$status" -ne 0 ]; then
  exit "$status"
fi

step "stubs match the module (mypy.stubtest)"
"$venv/bin/python" -m mypy.stubtest --mypy-config-file "$here/pyproject.toml" \
  dsh_session_reference

step "the typed example checks under mypy --strict"
"$venv/bin/python" -m mypy --config-file "$here/pyproject.toml" --no-incremental "$here/tests/typed_usage.py"

step "passed in $((SECONDS - start))s"
