"""A team database served over HTTP under load (BENCHMARKS.md, "Teams").

Serves a pushed team database twice with `dsh-session-ref serve`: per user
(`serve --users`, as user `bench`, granted one project) and whole
(`--source postgres=URL serve`, every session). Through each, 16 clients
at once, each on its own keep-alive connection, send every request
`--reps` times: the listing (`/api/candidates`, a page of 50) and a search
for each query. Prints p50 and p99 of each, with the CPU time the server
and the database's processes took over it and the load average.

    python3 scripts/teams_serve_bench.py --binary target/release/dsh-session-ref \\
        --url 'postgres://dsr:PASSWORD@127.0.0.1:55433/bench?sslmode=disable' \\
        --postmaster PID zyxquartz the qqqqnomatch

The standard library only; the HTTP client is serve_bench.py's.
"""

import argparse
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import Connection, cpu_seconds, percentile, prepared  # noqa: E402

PROJECT = "/work/p3"


def tree_cpu(pid):
    """CPU seconds of `pid` and its children (a postmaster's backends)."""
    total = cpu_seconds(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        children = []
    for c in children:
        try:
            total += cpu_seconds(c)
        except OSError:
            pass
    return total


def users(binary, url, *args):
    out = subprocess.run([binary, "users", "--database", url, *args], capture_output=True, text=True)
    return out.stdout.strip()


def run(url_line, clients, reps, path, body, postmaster, server):
    host_port, _, token = url_line.removeprefix("http://").partition("/?token=")
    host, port = host_port.rsplit(":", 1)
    raw = prepared(host_port, token, path, body)
    first = Connection(host, int(port)).ask(raw)
    if first[0] != 200:
        raise RuntimeError(f"{path} {body}: {first[0]} {first[1][:300]!r}")
    times, errors, lock = [], [], threading.Lock()

    def client():
        conn = Connection(host, int(port))
        mine = []
        try:
            for _ in range(reps):
                t0 = time.perf_counter()
                status, data = conn.ask(raw)
                mine.append(time.perf_counter() - t0)
                if status != 200:
                    raise RuntimeError(f"{status} {data[:200]!r}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        with lock:
            times.extend(mine)

    cpu0 = (cpu_seconds(server), tree_cpu(postmaster) if postmaster else 0.0)
    threads = [threading.Thread(target=client) for _ in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    cpu1 = (cpu_seconds(server), tree_cpu(postmaster) if postmaster else 0.0)
    if errors:
        raise RuntimeError(errors[0])
    times.sort()
    return first[1], percentile(times, 50), percentile(times, 99), wall, cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--postmaster", type=int, help="the database server's pid: its CPU time is shown")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("queries", nargs="*")
    a = p.parse_args()
    users(a.binary, a.url, "add", "bench")
    users(a.binary, a.url, "grant", "bench", PROJECT)
    token = users(a.binary, a.url, "token", "bench")
    target = {"id": "bench", "cwd": PROJECT}
    for what, extra in (("one project (user bench, serve --users)", ["--users"]), ("every session", [])):
        proc = subprocess.Popen([a.binary, "--no-cache", "--source", f"postgres={a.url}", "serve", "--scope", "all",
                                 *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url_line = proc.stdout.readline().strip()
            if extra:
                url_line = url_line.split("?token=")[0].rstrip("/") + "/?token=" + token
            asks = [("list", "/api/candidates", {"target": target, "limit": 50})]
            asks += [(f"search {q!r}", "/api/search", {"target": target, "query": q}) for q in a.queries]
            for name, path, body in asks:
                answer, p50, p99, wall, server_cpu, db_cpu = run(url_line, a.clients, a.reps, path, body,
                                                                 a.postmaster, proc.pid)
                shown = answer.count(b'"sessionId"')
                print(f"{what}: {name} ({shown} shown): p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms; "
                      f"{a.clients}x{a.reps} in {wall:.1f} s, CPU server {server_cpu:.1f} s, database {db_cpu:.1f} s; "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
