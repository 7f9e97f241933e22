"""The MCP server's benchmark, measured from a client (BENCHMARKS.md, "MCP server").

Drives `dsh-session-ref mcp` with the official MCP Python SDK's client over
a generated root of DSH sessions (the discovery benchmark's generator):

    DSR_BENCH_ROOT=target/mcp-bench/root DSR_BENCH_SESSIONS=10000 DSR_BENCH_GENERATE_ONLY=1 \
        cargo bench -p dsh-session-reference --bench discovery
    cargo build --release -p dsh-session-ref
    bash tests/mcp/run.sh 2            # makes the venv with mcp 2.x
    target/mcp-venv/v2/bin/python scripts/mcp_bench.py --binary target/release/dsh-session-ref \
        --root target/mcp-bench/root

Times: a cold start (no cache file: the server indexes every session in
the background from its start; a search is answered at once from what is
indexed, marked incomplete, until every session is: the first answer and
the first complete one are timed from the handshake), then warm starts (the cache files the cold run saved) to the
handshake and to the first search and read answers, then warm
`search_sessions` and `read_session` calls in one session. Medians of
`--reps`. Works with mcp 1.x (initialize) and 2.x (2026-07-28 by default;
`--legacy` for its handshake).
"""

import argparse
import asyncio
import glob
import os
import shutil
import statistics
import sys
import time
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path

MAJOR = int(version("mcp").split(".")[0])
if MAJOR >= 2:
    from mcp import Client, StdioServerParameters
else:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client


@asynccontextmanager
async def connect(args, env, legacy):
    params = StdioServerParameters(command=args.binary, args=["--root", args.root, "mcp", "--scope", "all"], env=env)
    if MAJOR >= 2:
        async with Client(params, mode="legacy" if legacy else "auto") as client:
            yield client, client.session.protocol_version
    else:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield session, init.protocolVersion


async def call(client, name, arguments):
    t = time.perf_counter()
    r = await client.call_tool(name, arguments)
    took = time.perf_counter() - t
    if getattr(r, "is_error", None) or getattr(r, "isError", None):
        raise RuntimeError(f"{name} {arguments}: {r.content[0].text}")
    return took, r


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--cache", default="target/mcp-bench/cache")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--legacy", action="store_true")
    args = p.parse_args()
    args.binary = str(Path(args.binary).resolve())
    args.root = str(Path(args.root).resolve())
    cache = Path(args.cache).resolve()
    shutil.rmtree(cache, ignore_errors=True)
    env = {"XDG_CACHE_HOME": str(cache), "HOME": os.environ.get("HOME", "/")}
    n = len(glob.glob(os.path.join(args.root, "*", "*", "session.jsonl")))
    print(f"mcp {version('mcp')}, {n} sessions, binary {args.binary}")

    # Cold: no cache file. The server indexes in the background from its
    # start; a search answers at once from what is indexed (marked
    # incomplete) until every session is.
    t0 = time.perf_counter()
    async with connect(args, env, args.legacy) as (client, protocol):
        t_hello = time.perf_counter() - t0
        print(f"protocol {protocol}")
        took, r = await call(client, "search_sessions", {"query": "alphamarker", "limit": 50})
        first = r.structuredContent if hasattr(r, "structuredContent") else r.structured_content
        print(f"cold: handshake {ms(t_hello)}; first search_sessions answered {ms(took)} after it "
              f"(complete: {first['complete']}, {first['indexed']} of {first['total']} sessions indexed, "
              f"{len(first['results'])} results)")
        while True:
            took, r = await call(client, "search_sessions", {"query": "alphamarker", "limit": 50})
            found = r.structuredContent if hasattr(r, "structuredContent") else r.structured_content
            since = time.perf_counter() - t0 - t_hello
            if found["complete"]:
                print(f"cold: first complete search_sessions {since:.2f} s after the handshake "
                      f"({len(found['results'])} results, that call {ms(took)})")
                break
            print(f"  {since:.2f} s after the handshake: {found['indexed']} of {found['total']} indexed "
                  f"(call {ms(took)})")
            await asyncio.sleep(0.5)
        t_list, _ = await call(client, "list_sessions", {})
        print(f"cold: list_sessions then {ms(t_list)}")
        # The index is saved within 30 s of the first save; wait for it.
        deadline = time.time() + 90
        while time.time() < deadline:
            await asyncio.sleep(1)
            files = list(cache.glob("dsh-session-reference/index-*.bin"))
            if files and time.time() - files[0].stat().st_mtime > 2:
                break
            await call(client, "list_sessions", {"limit": 1})
    sizes = {f.name.split("-")[0]: f.stat().st_size for f in cache.glob("dsh-session-reference/*.bin")}
    print("cache files: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(sizes.items())))

    # Warm starts (reads of sessions spread over the root, whatever its size).
    n = len(glob.glob(os.path.join(args.root, "*", "session-*")))
    starts = {"handshake": [], "first search_sessions": [], "first read_session": [], "first list_sessions": []}
    for i in range(5):
        t0 = time.perf_counter()
        async with connect(args, env, args.legacy) as (client, _):
            starts["handshake"].append(time.perf_counter() - t0)
            await call(client, "search_sessions", {"query": f"PR{1100 + i}"})
            starts["first search_sessions"].append(time.perf_counter() - t0)
            await call(client, "read_session", {"id": f"session-{i * 997 % n:05}"})
            starts["first read_session"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        async with connect(args, env, args.legacy) as (client, _):
            await call(client, "list_sessions", {})
            starts["first list_sessions"].append(time.perf_counter() - t0)
    for k, v in starts.items():
        print(f"warm start to {k}: median {ms(statistics.median(v))} (min {ms(min(v))}, max {ms(max(v))})")

    # Warm calls in one session.
    async with connect(args, env, args.legacy) as (client, _):
        await call(client, "search_sessions", {"query": "alphamarker"})
        await call(client, "read_session", {"id": "session-00000"})
        series = {
            "search_sessions, identifier fragment (PR1137)": [
                (await call(client, "search_sessions", {"query": "PR1137"}))[0] for _ in range(args.reps)],
            "search_sessions, substring in 5,000 sessions (alphamarker)": [
                (await call(client, "search_sessions", {"query": "alphamarker", "limit": 50}))[0]
                for _ in range(args.reps)],
            "search_sessions, no match": [
                (await call(client, "search_sessions", {"query": "zzqxv"}))[0] for _ in range(args.reps)],
            "read_session, one session again (16 KB page)": [
                (await call(client, "read_session", {"id": "session-00042"}))[0] for _ in range(args.reps)],
            "read_session, a different session each time (16 KB page)": [
                (await call(client, "read_session", {"id": f"session-{(i * 613) % n:05}"}))[0]
                for i in range(1, args.reps + 1)],
            "read_session, 64 KB page from the start": [
                (await call(client, "read_session", {"id": "session-00042", "start": 0, "maxBytes": 65536}))[0]
                for _ in range(args.reps)],
            "list_sessions (20 newest)": [(await call(client, "list_sessions", {}))[0] for _ in range(args.reps)],
        }
    for k, v in series.items():
        print(f"warm {k}: median {ms(statistics.median(v))} (min {ms(min(v))}, max {ms(max(v))})")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
