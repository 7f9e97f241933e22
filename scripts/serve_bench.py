"""`dsh-session-ref serve` under load (BENCHMARKS.md, "HTTP server").

Starts the server over a generated root of DSH sessions (the discovery
benchmark's generator), warms it (one search indexes every session), then
runs `--clients` concurrent clients for `--seconds` on loopback, each on
its own keep-alive connection, alternating `POST /api/search` and
`POST /api/candidates` over a fixed list of queries. Prints p50, p99 and
the largest latency of each route, the requests per second, the CPU time
the server and the clients took per request (so that a client that eats
the cores the server needs shows; the clients write each request from
bytes made up front and read each answer by its Content-Length, on raw
sockets, rather than through `http.client`), the load average, and the
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
import resource
import socket
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


def cpu_seconds(pid):
    """The user and system CPU time process `pid` has taken, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Connection:
    """One keep-alive HTTP/1.1 connection that sends prepared requests and
    reads each answer's status and body (by its Content-Length)."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def ask(self, raw):
        self.sock.sendall(raw)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.recv()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += self.recv()
        self.buf = rest[length:]
        return status, rest[:length]

    def recv(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk


def prepared(host_port, token, path, body):
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: {host_port}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


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

    # Every request the clients send, in the order they take turns: a
    # search, then a `candidates`.
    turns = []
    for k in range(len(SEARCHES) * len(CANDIDATES)):
        for path, body in (("/api/search", {"target": target, "query": SEARCHES[k % len(SEARCHES)]}),
                           ("/api/candidates", {"target": target, "query": CANDIDATES[k % len(CANDIDATES)],
                                                "limit": 20})):
            turns.append((path, prepared(host_port, token, path, body)))

    def client(n):
        conn = Connection(host, int(port))
        mine = {k: [] for k in times}
        i = n
        try:
            while time.monotonic() < stop_at:
                path, raw = turns[i % len(turns)]
                t0 = time.perf_counter()
                status, data = conn.ask(raw)
                mine[path].append(time.perf_counter() - t0)
                if status != 200:
                    raise RuntimeError(f"{path}: {status} {data[:200]!r}")
                i += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
        with lock:
            for k, v in mine.items():
                times[k].extend(v)

    memory = [(0.0, rss_kib(proc.pid))]
    threads = [threading.Thread(target=client, args=(n,)) for n in range(a.clients)]
    t_start = time.monotonic()
    cpu_start = (cpu_seconds(proc.pid), own_cpu_seconds())
    load_start = os.getloadavg()[0]
    for t in threads:
        t.start()
    while time.monotonic() < stop_at:
        time.sleep(min(a.every, max(0.0, stop_at - time.monotonic())))
        memory.append((time.monotonic() - t_start, rss_kib(proc.pid)))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t_start
    server_cpu = cpu_seconds(proc.pid) - cpu_start[0]
    client_cpu = own_cpu_seconds() - cpu_start[1]
    load_end = os.getloadavg()[0]
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
    print(f"CPU per request: server {server_cpu / total * 1000:.2f} ms, clients {client_cpu / total * 1000:.2f} ms "
          f"(server {server_cpu:.1f} s, clients {client_cpu:.1f} s over the run); "
          f"load average {load_start:.1f} at the start, {load_end:.1f} at the end")
    rss = [m for _, m in memory]
    print("RSS (MiB) every {:.0f} s: {}".format(a.every, " ".join(f"{m / 1024:.0f}" for m in rss)))
    print(f"RSS first sample after warm-up {rss[0] / 1024:.1f} MiB, last {rss[-1] / 1024:.1f} MiB, "
          f"max {max(rss) / 1024:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
