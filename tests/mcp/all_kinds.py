"""Sample sessions of every kind placed where each agent keeps them, from
tests/fixtures/all-kinds.json (its table says how each is placed, the ids a
listing gives and one session's title and words): the MCP tests' home of
every kind at once, as cli/tests/all_kinds.rs builds it for the command
line."""

import json
import shutil
import sqlite3
import struct
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def table():
    """The rows of tests/fixtures/all-kinds.json, one per kind."""
    return json.loads((FIXTURES / "all-kinds.json").read_text())["kinds"]


def zstd_frame(data):
    """`data` as one zstd frame of raw (stored) blocks: what any zstd
    decoder reads back, with no compressor needed."""
    # The magic number; a single segment with a 4-byte content size, no
    # checksum, no dictionary.
    out = struct.pack("<IBI", 0xFD2FB528, 0xA0, len(data))
    chunks = [data[i:i + (128 << 10)] for i in range(0, len(data), 128 << 10)] or [b""]
    for n, chunk in enumerate(chunks):
        # A block header: last or not, the raw type (0), its size.
        last = 1 if n == len(chunks) - 1 else 0
        out += struct.pack("<I", last | (len(chunk) << 3))[:3] + chunk
    return out


def build_db(path, sql_files):
    """A WAL-mode database at `path` from the SQL files, closed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=wal")
    for f in sql_files:
        conn.executescript(f.read_text())
    conn.commit()
    conn.close()


def zed_db(path, fixture):
    """Zed's threads database at `path` from the fixture's threads.json."""
    build_db(path, [fixture / "schema.sql"])
    conn = sqlite3.connect(path)
    for r in json.loads((fixture / "threads.json").read_text()):
        if r.get("raw") is not None:
            data = r["raw"].encode()
        else:
            data = json.dumps(r["document"]).encode()
            if r["data_type"] == "zstd":
                data = zstd_frame(data)
        cols = ["id", "summary", "updated_at", "data_type"]
        conn.execute("INSERT INTO threads VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [*(r.get(c) for c in cols), data,
                      *(r.get(c) for c in ["parent_id", "folder_paths", "folder_paths_order", "created_at"])])
    conn.commit()
    conn.close()


def place(row, at):
    """Puts `row`'s sample sessions at `at` (a directory, or a database file)."""
    if "copy" in row:
        shutil.copytree(FIXTURES / row["copy"], at, dirs_exist_ok=True)
    elif "sql" in row:
        build_db(at, [FIXTURES / row["sql"] / "schema.sql", FIXTURES / row["sql"] / "sessions.sql"])
    elif "zed" in row:
        zed_db(at, FIXTURES / row["zed"])
    else:
        raise ValueError(f"{row['kind']}: no way to place its sessions")


def place_all(home, elsewhere):
    """Every kind's samples: at its default location under `home`, or (a
    kind without one) under `elsewhere`. The rows, their ids with `{at}`
    replaced by where they were placed, and the `--source KIND=PATH` of
    each. A kind's further default locations (`also`) are rows of their
    own, after its first."""
    rows, specs = [], []
    every = [r for first in table() for r in [first, *({**a, "kind": first["kind"]} for a in first.get("also", []))]]
    for row in every:
        at = home / row["home"] if row["home"] else elsewhere / row["kind"]
        place(row, at)
        here = lambda i, at=at: i.replace("{at}", str(at))  # noqa: E731
        rows.append({**row, "ids": [here(i) for i in row["ids"]], "shown": {**row["shown"], "id": here(row["shown"]["id"])}})
        specs.append(f"{row['kind']}={at}")
    return rows, specs
