#!/usr/bin/env python3
"""Discovery through the Python SDK beside the Rust benchmark, on one root
(BENCHMARKS.md, "Discovery through the SDKs").

    python3 scripts/sdk_discovery_bench.py            # 2,000 sessions of 150 KB
    DSR_BENCH_SESSIONS=10000 DSR_BENCH_KB=75 python3 scripts/sdk_discovery_bench.py

What it does, in one run:

1. the wheel: ``DSR_PYTHON_WHEEL`` (a built wheel), or one built here with
   maturin as python/run-tests.sh builds it, but with the profile of
   ``DSR_PYTHON_PROFILE`` (default ``release``: a ``dev`` wheel is the
   debug build of our own code, several times slower; the report names
   the wheel's profile);
   installed into ``DSR_PYTHON_VENV`` (default python/.venv);
2. the Rust figures: the discovery benchmark (core/benches/discovery.rs)
   with ``DSR_BENCH_CANDIDATES_ONLY=1`` writes the generated root to
   ``DSR_BENCH_ROOT`` (default target/sdk-bench/root, deleted afterwards
   unless ``DSR_BENCH_KEEP=1``) and times the DSH store's filtered
   ``candidates`` (first query, nothing changed, after one log grew by 100
   lines);
3. the same three figures through the installed package, in a process
   of its own: a ``DshSessionStore`` over that root and a ``Resolver``,
   a blocking ``candidates(target, "ka")`` each time; interleaved with
   each, the same call made in Rust in that process on a resolver of its
   own (``_native._bench_candidates_rust``: the core's ``candidates``
   under ``block_on``, as the benchmark calls it, no Python boundary), so
   that the ratio says what the SDK path adds, whatever the load. First
   queries on fresh stores and resolvers (``DSR_BENCH_FIRST_REPS``, default
   5 per side); "after growth": a log grown by 100 lines of whole turns
   (as the benchmark appends them) just before each query.

Prints the three sets of figures and the SDK's ratio to the Rust calls in
its process; for first queries also the CPU time (the whole process's,
every thread), which a loaded machine distorts less than wall time.
Medians of ``DSR_BENCH_REPS`` (default 15).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
QUERY = "ka"
TARGET = {"id": "new-chat", "cwd": "/work/p3"}


def reps() -> int:
    return int(os.environ.get("DSR_BENCH_REPS", "15"))


# First queries timed per side (each reads every title).
FIRST_REPS = int(os.environ.get("DSR_BENCH_FIRST_REPS", "5"))


# --- the SDK's figures (run in the venv's interpreter) -----------------------


def last_seq(path: Path) -> int:
    """The `seq` of a log's last event."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65536))
        tail = f.read().rstrip(b"\n")
    return int(json.loads(tail.rsplit(b"\n", 1)[-1]).get("seq", 0))


def grow(path: Path, lines: int, rng: random.Random) -> None:
    """Appends at least `lines` lines of whole turns to a DSH log, shaped as
    the Rust benchmark's (user text, assistant reasoning, text and a tool
    call, a 2-8 KB tool result, a title every seventh turn)."""
    words = ["alpha", "kappa", "session", "index", "query", "build", "PR1137", "src/lib.rs", "缓存"]

    def text(n: int) -> str:
        out: List[str] = []
        size = 0
        while size < n:
            w = rng.choice(words)
            out.append(w)
            size += len(w) + 1
        return " ".join(out)

    seq = last_seq(path) + 1
    out: List[Dict[str, Any]] = []
    turn = 10_000 + seq
    while len(out) < lines:
        turn += 1
        s = seq
        out += [
            {"type": "turn/start", "seq": s, "time": s, "data": {"turn": turn}},
            {"type": "user/message", "seq": s + 1, "time": s, "surfaceOp": "append", "data": {
                "id": f"u{turn}", "role": "user", "content": [{"type": "text", "text": text(400)}],
                "source": {"kind": "user"}}},
            {"type": "assistant/message", "seq": s + 2, "time": s, "surfaceOp": "append", "data": {
                "turn": turn, "step": 1, "message": {"id": f"a{turn}", "role": "assistant", "content": [
                    {"type": "reasoning", "text": text(600)}, {"type": "text", "text": text(700)},
                    {"type": "tool-call", "id": f"c{turn}", "name": "read", "arguments": {"path": "src/lib.rs"}}],
                    "source": {"kind": "model", "provider": "p", "model": "m"}}}},
            {"type": "tool/result", "seq": s + 3, "time": s, "surfaceOp": "append", "data": {
                "turn": turn, "step": 1, "message": {"id": f"t{turn}", "role": "user", "content": [
                    {"type": "tool-result", "toolCallId": f"c{turn}",
                     "content": [{"type": "text", "text": text(2000 + rng.randrange(6000))}], "isError": False}],
                    "source": {"kind": "tool", "callId": f"c{turn}"}}}},
            {"type": "turn/end", "seq": s + 4, "time": s, "data": {"turn": turn, "reason": "completed"}},
        ]
        seq += 5
        if turn % 7 == 1:
            out.append({"type": "session/title", "seq": seq, "time": seq, "data": {"title": text(30)}})
            seq += 1
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in out))


def cpu() -> float:
    return time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID)


def measure(root: Path) -> Dict[str, Any]:
    """The three figures through the installed package, each beside the
    same call made in Rust on a resolver of its own in this process
    (``_native._bench_candidates_rust``: the core's ``candidates`` under
    ``block_on``, no Python boundary), interleaved."""
    import dsh_session_reference as dsr
    from dsh_session_reference import _native

    logs = sorted(root.glob("*/*/session.jsonl"))
    n = len(logs)
    log_bytes = sum(p.stat().st_size for p in logs)

    def fresh() -> Any:
        return dsr.Resolver(dsr.DshSessionStore(str(root)))

    def sdk(r: Any) -> Tuple[float, float, int]:
        c, t = cpu(), time.perf_counter()
        found = r.candidates(TARGET, QUERY)
        return time.perf_counter() - t, cpu() - c, len(found)

    def rust(r: Any) -> Tuple[float, float, int]:
        c = cpu()
        took, found = _native._bench_candidates_rust(r, TARGET, QUERY)
        return took, cpu() - c, found

    # First queries: each on a fresh store and resolver (a warm page cache).
    firsts: Dict[str, List[Tuple[float, float, int]]] = {"sdk": [], "rust": []}
    for _ in range(FIRST_REPS):
        firsts["sdk"].append(sdk(fresh()))
        firsts["rust"].append(rust(fresh()))
    assert len({f[2] for fs in firsts.values() for f in fs}) == 1, "the same candidates every time"
    # Two long-lived resolvers, each past its second listing (which starts
    # watching the root, as in the benchmark).
    a, b = fresh(), fresh()
    for _ in range(2):
        sdk(a), rust(b)
    warm: Dict[str, List[float]] = {"sdk": [], "rust": []}
    for _ in range(reps()):
        warm["sdk"].append(sdk(a)[0])
        warm["rust"].append(rust(b)[0])
    rng = random.Random(7)
    grown: Dict[str, List[float]] = {"sdk": [], "rust": []}
    for i in range(reps()):
        # One log grown before each side's query (so both read a change).
        grow(logs[(2 * i * 7 + 3) % n], 100, rng)
        grown["sdk"].append(sdk(a)[0])
        grow(logs[((2 * i + 1) * 7 + 3) % n], 100, rng)
        grown["rust"].append(rust(b)[0])
    assert a.candidates(TARGET, QUERY) == fresh().candidates(TARGET, QUERY), "a long-lived resolver agrees"
    out: Dict[str, Any] = {"sessions": n, "log_bytes": log_bytes, "native": _native.__file__}
    for side in ("sdk", "rust"):
        out[side] = {
            "first_s": statistics.median(f[0] for f in firsts[side]),
            "first_cpu_s": statistics.median(f[1] for f in firsts[side]),
            "warm_s": statistics.median(warm[side]),
            "appended_s": statistics.median(grown[side]),
        }
    return out


# --- the driver --------------------------------------------------------------


def run(cmd: List[str], env: Dict[str, str], capture: bool = False) -> str:
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, env=env, check=True, text=True, stdout=subprocess.PIPE if capture else None)
    return out.stdout or ""


def install_wheel(env: Dict[str, str]) -> Tuple[Path, str]:
    venv = Path(env.get("DSR_PYTHON_VENV", REPO / "python" / ".venv"))
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(venv)], env)
        run([str(python), "-m", "pip", "install", "-q", "-r", str(REPO / "python" / "requirements-dev.txt")], env)
    wheel = env.get("DSR_PYTHON_WHEEL")
    what = f"{wheel} (DSR_PYTHON_WHEEL)" if wheel else f"built here, profile {env.get('DSR_PYTHON_PROFILE', 'release')}"
    out = Path(tempfile.mkdtemp(prefix="dsr-sdk-bench-"))
    try:
        if not wheel:
            profile = env.get("DSR_PYTHON_PROFILE", "release")
            run([str(venv / "bin" / "maturin"), "build", "--manifest-path", str(REPO / "python" / "Cargo.toml"),
                 "--interpreter", str(python), "--profile", profile, "--out", str(out)], env)
            wheel = str(next(out.glob("*.whl")))
        run([str(python), "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheel], env)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return python, what


def main() -> None:
    if sys.argv[1:2] == ["--measure"]:
        print("sdk-figures " + json.dumps(measure(Path(sys.argv[2]))), flush=True)
        return
    env = dict(os.environ)
    env.setdefault("CARGO_BUILD_JOBS", "2")
    env.setdefault("CARGO_TARGET_DIR", str(REPO / "target"))
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    root = Path(env.get("DSR_BENCH_ROOT") or Path(env["CARGO_TARGET_DIR"]) / "sdk-bench" / "root").resolve()
    env["DSR_BENCH_ROOT"] = str(root)
    env["DSR_BENCH_CANDIDATES_ONLY"] = "1"
    env["DSR_BENCH_NO_FOREIGN"] = "1"
    python, wheel = install_wheel(env)
    try:
        if root.exists():
            shutil.rmtree(root)
        out = run(["cargo", "bench", "--locked", "-p", "dsh-session-reference", "--bench", "discovery"], env,
                  capture=True)
        print(out, end="")
        rust = json.loads(next(l for l in out.splitlines() if l.startswith("sdk-compare "))[len("sdk-compare "):])
        sdk_out = run([str(python), str(Path(__file__).resolve()), "--measure", str(root)], env, capture=True)
        sdk = json.loads(next(l for l in sdk_out.splitlines() if l.startswith("sdk-figures "))[len("sdk-figures "):])
    finally:
        if not env.get("DSR_BENCH_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
    mb = rust["log_bytes"] / 1e6
    print(f"\n{rust['sessions']} sessions, {mb:.0f} MB of logs; load: {os.getloadavg()}")
    print(f"the package: {sdk['native']}; the wheel: {wheel}")
    inproc = sdk["rust"]
    sdk = sdk["sdk"]
    print("| candidates --query ka | Rust benchmark (its own process) | Rust in the SDK's process | Python SDK "
          "| SDK / Rust in process | target (SDK) |")
    print("|---|---|---|---|---|---|")

    def first(f: Dict[str, float]) -> str:
        return f"{f['first_s'] * 1e3:.0f} ms ({mb / f['first_s']:.0f} MB/s; CPU {f['first_cpu_s'] * 1e3:.0f} ms)"

    print(f"| first query | {first(rust)} | {first(inproc)} | {first(sdk)} | "
          f"{sdk['first_s'] / inproc['first_s']:.2f}x | >= 500 MB/s |")
    if "first_early_s" in rust:
        early = {"first_s": rust["first_early_s"], "first_cpu_s": rust["first_early_cpu_s"]}
        print(f"| first query, the benchmark's store watching from its first listing (as the SDK's does) "
              f"| {first(early)} | | | | |")
    for key, what, target in [("warm_s", "nothing changed", "< 5 ms"),
                              ("appended_s", "after one log grew by 100 lines", "< 20 ms")]:
        print(f"| {what} | {rust[key] * 1e3:.2f} ms | {inproc[key] * 1e3:.2f} ms | {sdk[key] * 1e3:.2f} ms "
              f"| {sdk[key] / inproc[key]:.2f}x | {target} |")


if __name__ == "__main__":
    main()
