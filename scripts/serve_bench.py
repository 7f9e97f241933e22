"""`dsh-session-ref serve` under load (BENCHMARKS.md, "HTTP server").

Starts the server over a generated root of DSH sessions (the discovery
benchmark's generator), warms it (one search indexes every session), then
runs `--clients` concurrent clients for `--seconds` on loopback, each on
its own keep-alive connection, alternating `POST /api/search` and
`POST /api/candidates` over a fixed list of queries. Prints p50, p99 and
the largest latency of each route, the requests per second, and the
server's resident memory sampled every `--every` seconds over the run.

    DSR_BENCH_ROOT=$PWD/target/serve-bench/root DSR_BENCH_SESSIONS=10000 DSR_BENCH_GENERATE_ONLY=1 \\
        cargo bench -p dsh-session-reference --bench discovery
    cargo build --release -p dsh-session-ref
    python3 scripts/serve_bench.py --binary target/release/dsh-session-ref --root target/serve-bench/root

The standard library only.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SEARCHES = ["PR1137", "alphamarker", "maewaoe", "deuteerc", "zzqqxx", "teranise", "缓存索引"]
CANDIDATES = ["", "ka", "PR", "alpha", "session 12"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--every", type=float, default=5)
    a = p.parse_args()
    cache = tempfile.mkdtemp(prefix="dsr-serve-bench-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    proc = subprocess.Popen([a.binary, "--root", a.root, "serve", "--scope", "all"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    url = proc.stdout.readline().strip()
    host_port, token = url.removeprefix("http://").split("/?token=")
    host, port = host_port.rsplit(":", 1)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    target = {"id": "web"}

    def request(conn, path, body):
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError(f"{path} {body}: {r.status} {data[:200]!r}")
        return data

    started = time.monotonic()
    warm = http.client.HTTPConnection(host, int(port), timeout=600)
    request(warm, "/api/candidates", {"target": target, "query": ""})
    listed = time.monotonic()
    request(warm, "/api/search", {"target": target, "query": SEARCHES[0]})
    indexed = time.monotonic()
    for q in SEARCHES:
        request(warm, "/api/search", {"target": target, "query": q})
    for q in CANDIDATES:
        request(warm, "/api/candidates", {"target": target, "query": q})
    print(f"warm-up: first candidates {listed - started:.1f} s, first search {indexed - listed:.1f} s")

    times = {"/api/search": [], "/api/candidates": []}
    lock = threading.Lock()
    stop_at = time.monotonic() + a.seconds
    errors = []

    def client(n):
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        mine = {k: [] for k in times}
        i = n
        try:
            while time.monotonic() < stop_at:
                if i % 2 == 0:
                    path, body = "/api/search", {"target": target, "query": SEARCHES[i // 2 % len(SEARCHES)]}
                else:
                    path, body = "/api/candidates", {"target": target, "query": CANDIDATES[i // 2 % len(CANDIDATES)],
                                                     "limit": 20}
                t0 = time.perf_counter()
                request(conn, path, body)
                mine[path].append(time.perf_counter() - t0)
                i += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        with lock:
            for k, v in mine.items():
                times[k].extend(v)

    memory = [(0.0, rss_kib(proc.pid))]
    threads = [threading.Thread(target=client, args=(n,)) for n in range(a.clients)]
    t_start = time.monotonic()
    for t in threads:
        t.start()
    while time.monotonic() < stop_at:
        time.sleep(min(a.every, max(0.0, stop_at - time.monotonic())))
        memory.append((time.monotonic() - t_start, rss_kib(proc.pid)))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t_start
    proc.terminate()
    proc.wait(timeout=60)
    if errors:
        print("errors:", errors[:5], file=sys.stderr)
        return 1
    total = sum(len(v) for v in times.values())
    print(f"{a.clients} clients, {elapsed:.1f} s, {total} requests, {total / elapsed:.0f} requests/s")
    for path, v in times.items():
        v.sort()
        print(f"{path}: {len(v)} requests, p50 {percentile(v, 50) * 1000:.2f} ms, "
              f"p99 {percentile(v, 99) * 1000:.2f} ms, max {v[-1] * 1000:.1f} ms, "
              f"mean {statistics.fmean(v) * 1000:.2f} ms")
    rss = [m for _, m in memory]
    print("RSS (MiB) every {:.0f} s: {}".format(a.every, " ".join(f"{m / 1024:.0f}" for m in rss)))
    print(f"RSS first sample after warm-up {rss[0] / 1024:.1f} MiB, last {rss[-1] / 1024:.1f} MiB, "
          f"max {max(rss) / 1024:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
