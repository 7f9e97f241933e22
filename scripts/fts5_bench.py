"""SQLite FTS5 (trigram tokenizer) beside the built-in search index, for
the discovery benchmark (core/benches/discovery.rs, `DSR_BENCH_FTS5=1`).

Not part of the library or any release artifact: the benchmark starts it
with the path of a JSON-lines export of the sessions it generated (one
object per session: `sid`, `cwd`, `created`, `body` = the projected items,
the title, the id and the cwd, one per line) and a database path. It builds
the FTS5 table, prints one line `{"build_s", "optimize_s", "db_bytes",
"text_bytes", "reused"}`, then answers one request per line on stdin with
one JSON line on stdout (bench/tantivy-peer speaks the same protocol):

- `{"q": "...", "cwd": "...", "full": false}`: runs the query once, ranked
  like ours where FTS5 can (the target's cwd first, then newer), cut at 50,
  and answers `{"ms": time, "n": results}`; with `"text": true` it also
  reads each result's text and finds the first word in it (what a snippet
  needs at least, as the built-in search returns one);
- the same with `"full": true`: every matching session, unranked, and
  answers `{"ms": time, "ids": [...]}` (checked against the benchmark's
  brute-force scan);
- `{"q": "...", "rank": "bm25", "tok": "trigram" | "words", "limit": n}`:
  the first `n` matching sessions by FTS5's `bm25()`, best first, as
  `{"ms": time, "ids": [...]}`, for the known-item benchmark
  (core/benches/known_item.rs): over the trigram table, or over `words`,
  the same text through the `unicode61` tokenizer (every query word must
  occur; a word the tokenizer splits is a phrase of its tokens).

With `DSR_FTS5_KEEP_DB` set the database is kept (to time the `sqlite3`
command line over it), with the SHA-256 of the export it was built from and
its build figures in `<database>.built.json` beside it, and a later run
over an export of the same hash reuses it (`"reused": true`, the figures
of the build that made it); else it is removed at the end.

Semantics as the built-in search's: case-insensitive substrings, every
word of the query somewhere in the session. FTS5's trigram tokenizer
answers `MATCH` only for words of three characters or more; shorter ones
go through `LIKE`, which that tokenizer serves by scanning every row.
"""

import hashlib
import json
import os
import sqlite3
import sys
import time
import unicodedata


def where(query):
    words = []
    for w in query.lower().split():
        if w not in words:
            words.append(w)
    match = [w for w in words if len(w) >= 3]
    like = [w for w in words if len(w) < 3]
    conds, args = [], []
    if match:
        conds.append("docs MATCH ?")
        args.append(" AND ".join('"' + w.replace('"', '""') + '"' for w in match))
    for w in like:
        conds.append("body LIKE ? ESCAPE '\\'")
        args.append("%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
    return " AND ".join(conds), args


def word_match(query):
    """The `MATCH` expression over the `words` table: each query word a
    quoted string, which FTS5 splits with the table's tokenizer into a
    phrase of its tokens; all required. A word without a letter or digit
    (no token) is left out; None when no word is left."""
    phrases = []
    for w in query.lower().split():
        if any(unicodedata.category(c)[0] in "LN" for c in w):
            p = '"' + w.replace('"', '""') + '"'
            if p not in phrases:
                phrases.append(p)
    return " AND ".join(phrases) or None


# What the database holds, kept with a built one: one built with other
# tables is not reused.
SCHEMA = "docs-trigram+words-unicode61"


def insert(con, rows):
    con.executemany("INSERT INTO docs(body, sid, cwd, created) VALUES (?, ?, ?, ?)", rows)
    con.executemany("INSERT INTO words(body, sid) VALUES (?, ?)", [(r[0], r[1]) for r in rows])


def ranked(con, req):
    """The first `limit` matches by `bm25()`, best first."""
    limit = int(req.get("limit", 50))
    if req.get("tok", "trigram") == "words":
        match = word_match(req["q"])
        if match is None:
            return []
        rows = con.execute("SELECT sid FROM words WHERE words MATCH ? ORDER BY bm25(words) LIMIT ?", [match, limit])
        return [r[0] for r in rows]
    if req.get("tok", "trigram") != "trigram":
        raise ValueError("no tokenizer " + repr(req["tok"]))
    cond, args = where(req["q"])
    if not cond:
        return []
    rows = con.execute(f"SELECT sid FROM docs WHERE {cond} ORDER BY bm25(docs) LIMIT ?", args + [limit])
    return [r[0] for r in rows]


def build(export, db):
    """Builds the FTS5 table in `db` from the export: (build_s, optimize_s)."""
    if os.path.exists(db):
        os.remove(db)
    con = sqlite3.connect(db)
    con.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(body, sid UNINDEXED, cwd UNINDEXED, created UNINDEXED, "
        "tokenize='trigram')"
    )
    con.execute("CREATE VIRTUAL TABLE words USING fts5(body, sid UNINDEXED, tokenize='unicode61')")
    t = time.perf_counter()
    with open(export, encoding="utf-8") as f:
        rows = []
        for line in f:
            d = json.loads(line)
            rows.append((d["body"], d["sid"], d["cwd"], d["created"]))
            if len(rows) >= 500:
                insert(con, rows)
                rows = []
        insert(con, rows)
    con.commit()
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    con.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    con.execute("INSERT INTO words(words) VALUES ('optimize')")
    con.commit()
    con.close()
    return build_s, time.perf_counter() - t


def main():
    export, db = sys.argv[1], sys.argv[2]
    keep = bool(os.environ.get("DSR_FTS5_KEEP_DB"))
    figures_path = db + ".built.json"
    digest, text = hashlib.sha256(), 0
    with open(export, "rb") as f:
        for line in f:
            digest.update(line)
            text += len(json.loads(line)["body"].encode())
    digest = digest.hexdigest()
    kept = None
    if keep and os.path.exists(db) and os.path.exists(figures_path):
        with open(figures_path, encoding="utf-8") as f:
            kept = json.load(f)
        if kept.get("sha256") != digest or kept.get("schema") != SCHEMA:
            kept = None
    if kept is None:
        if os.path.exists(figures_path):
            os.remove(figures_path)
        build_s, optimize_s = build(export, db)
        if keep:
            with open(figures_path, "w", encoding="utf-8") as f:
                json.dump({"sha256": digest, "schema": SCHEMA, "build_s": build_s, "optimize_s": optimize_s}, f)
    else:
        build_s, optimize_s = kept["build_s"], kept["optimize_s"]
    con = sqlite3.connect(db)
    size = os.path.getsize(db)
    first = {"build_s": build_s, "optimize_s": optimize_s, "db_bytes": size, "text_bytes": text,
             "reused": kept is not None}
    print(json.dumps(first), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("rank") == "bm25":
            t = time.perf_counter()
            ids = ranked(con, req)
            print(json.dumps({"ms": (time.perf_counter() - t) * 1e3, "ids": ids}), flush=True)
            continue
        cond, args = where(req["q"])
        text = req.get("text") and not req.get("full")
        if req.get("full"):
            sql = f"SELECT sid FROM docs WHERE {cond}"
        else:
            cols = "sid, body" if text else "sid"
            sql = f"SELECT {cols} FROM docs WHERE {cond} ORDER BY (cwd = ?) DESC, created DESC LIMIT 50"
            args = args + [req["cwd"]]
        first = (req["q"].split() or [""])[0].lower()
        t = time.perf_counter()
        ids = []
        for r in con.execute(sql, args):
            ids.append(r[0])
            if text:
                r[1].lower().find(first)
        ms = (time.perf_counter() - t) * 1e3
        out = {"ms": ms, "ids": ids} if req.get("full") else {"ms": ms, "n": len(ids)}
        print(json.dumps(out), flush=True)
    con.close()
    if not keep:
        os.remove(db)


if __name__ == "__main__":
    main()
