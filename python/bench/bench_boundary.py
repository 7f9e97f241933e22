"""The Python boundary against the Rust core, in one process (BENCHMARKS.md,
targets 3 and 4). Not part of the test suite: run it by hand on a release
build and record the output in BENCHMARKS.md.

    DSR_PYTHON_PROFILE=release python/run-tests.sh     # installs a release wheel in python/.venv
    python/.venv/bin/python python/bench/bench_boundary.py [--quick]

Every Rust figure comes from ``_native._bench_prepare_rust``: the same
``prepare`` of the same bytes through the core's in-memory ``MemoryQuery``,
entirely in Rust on the package's runtime with the GIL released. The Python
figure is ``Resolver.prepare`` with a host whose ``read_surface`` returns the
snapshot as ``bytes``. Inputs are generated deterministically (the core
benchmark's realistic session: reasoning, tool calls and 2 KB tool results
around 400-byte messages). Times are medians of interleaved runs.

1. Zero copy: the peak RSS added by ``prepare`` of a 128 MB snapshot given
   as ``bytes`` (``str`` for contrast: it is encoded once).
2. Throughput on 16 MB: Python MB/s over Rust MB/s (target: at least 70%).
3. Small calls, 3 sources x 20 messages: Python time per call minus Rust
   time per call (target: under 50 us); for reference, a call of one tiny
   source (one host call) and one without references (no host call).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import dsh_session_reference as dsr
from dsh_session_reference import _native

TARGET = {"id": "bench-target", "cwd": None}
CONTENT = [{"type": "text", "text": "go"}]


def text(i: int, length: int) -> str:
    base = f'message {i:>8} <tag> "quoted" and plain words that fill the line '
    return (base * (length // len(base) + 1))[:length]


def event(seq: int, i: int, kind: str, body: str) -> Dict[str, Any]:
    if kind in ("checkpoint", "user"):
        source = {"kind": "plugin", "plugin": "compact"} if kind == "checkpoint" else {"kind": "user"}
        return {"seq": seq, "time": seq, "type": "user/message", "data": {
            "id": f"m{i}", "role": "user", "content": [{"type": "text", "text": body}], "source": source},
            "surfaceOp": "append"}
    if kind == "assistant":
        return {"seq": seq, "time": seq, "type": "assistant/message", "data": {"turn": i, "step": 1, "message": {
            "id": f"m{i}", "role": "assistant", "content": [
                {"type": "reasoning", "text": "thinking about it " * 20},
                {"type": "text", "text": body},
                {"type": "tool-call", "id": f"c{i}", "name": "read", "arguments": {"path": "/src/lib.rs"}}],
            "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"}
    return {"seq": seq, "time": seq, "type": "tool/result", "data": {"turn": i, "step": 1, "message": {
        "id": f"t{i}", "role": "user", "content": [{"type": "tool-result", "toolCallId": f"c{i}",
                                                    "content": [{"type": "text", "text": body}],
                                                    "isError": False}],
        "source": {"kind": "tool", "callId": f"c{i}"}}}, "surfaceOp": "append"}


def session(session_id: str, *, size: Optional[int] = None, messages: Optional[int] = None) -> bytes:
    """A realistic session of about ``size`` bytes, or of ``messages``
    projected messages (user and assistant turns, plus tool results)."""
    events: List[str] = []
    total = i = seq = projected = 0
    while (size is not None and total < size) or (messages is not None and projected < messages):
        kind = "checkpoint" if i == 0 else "user" if i % 3 == 1 else "assistant"
        for k, body in [(kind, text(i, 400)), ("tool", text(i, 2000))]:
            if k == "tool" and kind != "assistant":
                continue
            encoded = json.dumps(event(seq, i, k, body), separators=(",", ":"))
            total += len(encoded) + 1
            events.append(encoded)
            seq += 1
        projected += 1
        i += 1
    head = json.dumps({"id": session_id, "createdAt": 1700000000000, "cwd": "/work"}, separators=(",", ":"))
    return f'{{"session":{head},"capturedThroughSeq":{max(seq, 1) - 1},"events":[{",".join(events)}]}}'.encode()


class BytesHost:
    """Snapshots handed over as ``bytes`` (or another form of them)."""

    def __init__(self, snapshots: Dict[str, Any]) -> None:
        self.snapshots = snapshots

    def list_sessions(self) -> List[Any]:
        return []

    def read_title(self, session_id: str) -> Optional[str]:
        return None

    def read_surface(self, session_id: str) -> Any:
        return self.snapshots[session_id]


def peak_rss_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def zero_copy(mb: int) -> List[Tuple[str, float, float]]:
    """Peak RSS added by one prepare of an ``mb`` MB snapshot, per form."""
    big = session("big", size=mb << 20)
    rows = []
    for form in ["bytes", "str"]:
        value: Any = big if form == "bytes" else big.decode()
        resolver = dsr.Resolver(BytesHost({"big": value}))
        resolver.prepare(TARGET, CONTENT, [{"sessionId": "big"}])  # warm: threads, pools
        gc.collect()
        peak_rss_reset()
        before = rss("VmRSS")
        resolver.prepare(TARGET, CONTENT, [{"sessionId": "big"}])
        rows.append((form, len(big) / 1e6, (rss("VmHWM") - before) / 1e6))
        del value, resolver
    return rows


def clocks() -> Tuple[float, float]:
    """Wall time and the process's CPU time (every thread's), in seconds."""
    return time.perf_counter(), time.process_time()


def since(start: Tuple[float, float], per: int = 1) -> Tuple[float, float]:
    wall, cpu = clocks()
    return (wall - start[0]) / per, (cpu - start[1]) / per


def medians(samples: List[Tuple[float, float]]) -> Tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def throughput(mb: int, runs: int) -> Tuple[float, Tuple[float, float], Tuple[float, float]]:
    """Size in MB, and median (wall, cpu) seconds of one prepare of an ``mb``
    MB session: Python, Rust."""
    big = session("big", size=mb << 20)
    refs = [{"sessionId": "big"}]
    resolver = dsr.Resolver(BytesHost({"big": big}))
    resolver.prepare(TARGET, CONTENT, refs)
    python, rust = [], []
    for _ in range(runs):  # interleaved, so both see the same machine
        start = clocks()
        resolver.prepare(TARGET, CONTENT, refs)
        python.append(since(start))
        start = clocks()
        _native._bench_prepare_rust({"big": big}, refs, 1)
        rust.append(since(start))
    return len(big) / 1e6, medians(python), medians(rust)


def small_calls(calls: int, runs: int, case: str) -> Tuple[Tuple[float, float], Tuple[float, float]]:
    """Median (wall, cpu) seconds per prepare: Python, Rust. ``case``:
    ``bytes``/``dict`` (3 sources x 20 messages, the host returning bytes or
    dicts), ``one`` (1 source of 1 message, bytes), ``none`` (no reference:
    no host call)."""
    if case in ("bytes", "dict"):
        snapshots = {sid: session(sid, messages=20) for sid in ["s1", "s2", "s3"]}
    else:
        snapshots = {"s1": session("s1", messages=1)}
    refs = [] if case == "none" else [{"sessionId": sid} for sid in snapshots]
    forms: Dict[str, Any] = {sid: b if case != "dict" else json.loads(b) for sid, b in snapshots.items()}
    resolver = dsr.Resolver(BytesHost(forms))
    out = resolver.prepare(TARGET, CONTENT, refs)
    if case in ("bytes", "dict"):
        assert [r["originalMessages"] for r in out["additionalContext"]["source"]["references"]] == [20, 20, 20]
    python, rust = [], []
    for _ in range(runs):  # interleaved
        start = clocks()
        for _ in range(calls):
            resolver.prepare(TARGET, CONTENT, refs)
        python.append(since(start, calls))
        start = clocks()
        _native._bench_prepare_rust(snapshots, refs, calls)
        rust.append(since(start, calls))
    return medians(python), medians(rust)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    runs = 3 if args.quick else 9
    print(f"python {sys.version.split()[0]}, dsh_session_reference {dsr.__version__} "
          f"({os.path.basename(_native.__file__)}), {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}")

    print("\n== 1. zero copy: peak RSS added by one prepare (input already in memory) ==")
    print(f"{'form':>6} {'input MB':>9} {'added MB':>9} {'added/input':>12}")
    for form, size, added in zero_copy(128):
        print(f"{form:>6} {size:>9.1f} {added:>9.1f} {added / size:>11.2f}x")

    print(f"\n== 2. prepare of a realistic session from bytes, median of {runs} (wall; cpu: all threads) ==")
    print(f"{'MB':>6} {'python':>9} {'rust':>9} {'py MB/s':>8} {'rs MB/s':>8} {'py/rs':>6} "
          f"{'py cpu':>9} {'rs cpu':>9} {'py/rs':>6}  target: py/rs >= 70%")
    for mb in [16] if args.quick else [1, 16, 128]:
        size, (python, python_cpu), (rust, rust_cpu) = throughput(mb, runs if mb < 128 else max(3, runs // 3))
        ratio, cpu_ratio = rust / python, rust_cpu / python_cpu
        print(f"{size:>6.1f} {python * 1e3:>7.2f}ms {rust * 1e3:>7.2f}ms {size / python:>8.0f} {size / rust:>8.0f} "
              f"{ratio:>6.0%} {python_cpu * 1e3:>7.2f}ms {rust_cpu * 1e3:>7.2f}ms {cpu_ratio:>6.0%}  "
              f"{'met' if ratio >= 0.7 else 'MISSED'}")

    calls = 100 if args.quick else 500
    print(f"\n== 3. small calls, {calls} calls per run, median of {2 * runs + 1} ==")
    print(f"{'case':>22} {'python':>9} {'rust':>9} {'overhead':>9} {'py cpu':>9} {'rs cpu':>9} "
          f"{'overhead':>9}  target: overhead < 50 us")
    for case, label in [("bytes", "3 x 20 messages, bytes"), ("dict", "3 x 20 messages, dicts"),
                        ("one", "1 x 1 message, bytes"), ("none", "no reference")]:
        (python, python_cpu), (rust, rust_cpu) = small_calls(calls, 2 * runs + 1, case)
        overhead, cpu_overhead = (python - rust) * 1e6, (python_cpu - rust_cpu) * 1e6
        verdict = ("met" if overhead < 50 else "MISSED") if case == "bytes" else "(info)"
        print(f"{label:>22} {python * 1e6:>7.1f}us {rust * 1e6:>7.1f}us {overhead:>7.1f}us "
              f"{python_cpu * 1e6:>7.1f}us {rust_cpu * 1e6:>7.1f}us {cpu_overhead:>7.1f}us  {verdict}")

if __name__ == "__main__":
    main()
