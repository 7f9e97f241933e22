"""The one-shot command line beside the `sqlite3` command line over an FTS5
database of the same text: whole processes, warm, one
query class at a time, interleaved, medians.

Not part of the library or any release artifact. Needs a root and the
FTS5 database the discovery benchmark leaves with `DSR_FTS5_KEEP_DB=1`:

    DSR_BENCH_FTS5=1 DSR_FTS5_KEEP_DB=1 DSR_BENCH_NO_FOREIGN=1 DSR_BENCH_SESSIONS=10000 \\
        DSR_BENCH_ROOT=target/s29/root cargo bench -p dsh-session-reference --bench discovery
    cargo build --release -p dsh-session-ref
    python3 scripts/cli_fts5_bench.py target/release/dsh-session-ref target/s29/root target/s29/root.fts5.db \\
        PR1137 maewaoe ... (the benchmark's query words; without any, its fixed ones)

Ours: `dsh-session-ref --root ROOT search WORDS --cwd /work/p3 --json` with
the cache on, in a cache home of its own, after two runs that wrote the
cache files (each call still checks every log for change, so its answer
holds every change made before it). Theirs: `sqlite3 DB "SELECT ..."`, the
query of scripts/fts5_bench.py (`MATCH` for words of three characters or
more, `LIKE` for shorter ones, the target's cwd first, newer first, 50),
which answers from what was last indexed. Both are started the same way
(`subprocess.run`, output captured), so the ratio is of whole calls.

Ours is timed twice: in its own process (`--no-daemon`), and as a person
first runs it: the same command without any flag, which, finding no
daemon (a runtime directory of its own), answers in its own process and
starts one in the background; the later calls are answered by it (waited
for before timing, stopped at the end), and their answers are checked to
be the same bytes as the command's own. `DSR_CLI_NO_DAEMON=1` times the
first only.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fts5_bench import where  # noqa: E402

CWD = "/work/p3"
REPS = int(os.environ.get("DSR_CLI_REPS", "15"))


def sql_literal(v):
    return "'" + str(v).replace("'", "''") + "'"


def sqlite_query(q):
    cond, args = where(q)
    args = args + [CWD]
    sql = f"SELECT sid FROM docs WHERE {cond} ORDER BY (cwd = ?) DESC, created DESC LIMIT 50"
    parts = sql.split("?")
    out = parts[0]
    for a, p in zip(args, parts[1:]):
        out += sql_literal(a) + p
    return out


def timed(cmd, env):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode(errors='replace')[:500]}")
    return took, r.stdout


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, root, db = sys.argv[1:4]
    queries = sys.argv[4:] or ["PR1137", "alphamarker", "zzqqxx", "teranise", "缓存索引", "模型"]
    home = tempfile.mkdtemp(prefix="dsr-cli-bench-")
    runtime = tempfile.mkdtemp(prefix="dsr-cli-bench-run-")
    env = dict(os.environ, XDG_CACHE_HOME=home, XDG_RUNTIME_DIR=runtime)
    # As a person runs it: nothing set that keeps the daemon from starting.
    env.pop("CI", None)
    env.pop("DSR_NO_DAEMON", None)
    with_daemon = not os.environ.get("DSR_CLI_NO_DAEMON")
    ours = lambda q: [binary, "--root", root, "--quiet", "--no-daemon", "search", *q.split(), "--cwd", CWD, "--json"]  # noqa: E731
    daemon = lambda q: [binary, "--root", root, "--quiet", "search", *q.split(), "--cwd", CWD, "--json"]  # noqa: E731
    theirs = lambda q: ["sqlite3", db, sqlite_query(q)]  # noqa: E731
    # Warm: the first run indexes every session and writes the cache files,
    # the second starts from them.
    for _ in range(2):
        timed(ours(queries[0]), env)
    try:
        if with_daemon:
            # The first call as a person runs it: no daemon yet.
            first, _ = timed(daemon(queries[0]), env)
            running = False
            for _ in range(3000):
                status = json.loads(timed([binary, "daemon", "status", "--json"], env)[1])
                if status.get("running"):
                    running = True
                    break
                time.sleep(0.01)
            if not running or not status.get("startedOnFirstUse"):
                sys.exit(f"the first call started no daemon: {status}")
            print(f"first call (answered in its own process, the daemon started): {first * 1e3:.1f} ms")
            timed(daemon(queries[0]), env)
        print(f"command line, warm cache, medians of {REPS}, interleaved ({os.getloadavg()[0]:.1f} load)")
        for q in queries:
            a, b, c = [], [], []
            timed(ours(q), env)
            timed(theirs(q), env)
            if with_daemon:
                alone, answered = timed(ours(q), env)[1], timed(daemon(q), env)[1]
                if alone != answered:
                    sys.exit(f"{q!r}: the daemon's answer differs from the command's own")
            for _ in range(REPS):
                a.append(timed(ours(q), env)[0])
                b.append(timed(theirs(q), env)[0])
                if with_daemon:
                    c.append(timed(daemon(q), env)[0])
            ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
            line = f"  {q!r}: ours {ma:.1f} ms, sqlite3 CLI {mb:.1f} ms, ratio {ma / mb:.2f}x"
            if with_daemon:
                mc = statistics.median(c) * 1e3
                line += f"; as first run (the daemon it started) {mc:.1f} ms, ratio {mc / mb:.2f}x"
            print(line, flush=True)
        print(f"(load average after: {os.getloadavg()[0]:.1f})")
    finally:
        if with_daemon:
            subprocess.run([binary, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
