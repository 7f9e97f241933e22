//! The peers a search benchmark measures ours beside, each in a process of
//! its own over an export of the same fields: SQLite FTS5
//! (scripts/fts5_bench.py) and tantivy (bench/tantivy-peer, built here on
//! first use). Bench-only: nothing of either is built into the library.
//! Included by path (`#[path]`) by the benchmarks that use it.

// Each benchmark that includes this uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

/// Every session's searched fields as JSON lines (`sid`, `cwd`, `created`,
/// `body`): what the peers below build their indexes from. Removed when
/// dropped.
pub struct Export(PathBuf);

impl Export {
    pub fn write(path: PathBuf, corpus: &[(String, String, f64, String)]) -> Export {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for (sid, cwd, created, body) in corpus {
            writeln!(f, "{}", json!({"sid": sid, "cwd": cwd, "created": created, "body": body})).unwrap();
        }
        f.into_inner().unwrap().sync_all().unwrap();
        Export(path)
    }
}

impl Drop for Export {
    fn drop(&mut self) {
        drop(std::fs::remove_file(&self.0));
    }
}

/// A session's searched fields as one text, as the peers index them: its
/// projected items, title, id and cwd, one per line (no query word holds a
/// line end, so none spans two).
pub fn fields_text<S: AsRef<str>>(items: impl IntoIterator<Item = S>, title: &str, id: &str, cwd: &str) -> String {
    let mut body = String::new();
    for item in items {
        body.push_str(item.as_ref());
        body.push('\n');
    }
    body.push_str(&format!("{title}\n{id}\n{cwd}"));
    body
}

/// The peers asked for (FTS5 with `fts5`, tantivy with its program), each
/// built from an export of `corpus` (`sid`, `cwd`, `created`, the
/// [`fields_text`]); their databases at `base` with the extensions
/// `{prefix}fts5.db` and `{prefix}tantivy`, the export (removed once they
/// are built) at `{prefix}peer-export.jsonl`.
pub fn start_peers(
    fts5: bool,
    tantivy: Option<&Path>,
    corpus: &[(String, String, f64, String)],
    base: &Path,
    prefix: &str,
) -> Vec<Peer> {
    if !fts5 && tantivy.is_none() {
        return Vec::new();
    }
    let export = Export::write(base.with_extension(format!("{prefix}peer-export.jsonl")), corpus);
    let mut peers = Vec::new();
    if fts5 {
        peers.push(Peer::fts5(&export, &base.with_extension(format!("{prefix}fts5.db"))));
    }
    if let Some(program) = tantivy {
        peers.push(Peer::tantivy(program, &export, &base.with_extension(format!("{prefix}tantivy"))));
    }
    peers
}

/// Another search engine over the same fields, in a process of its own:
/// SQLite FTS5 (trigram; scripts/fts5_bench.py) or tantivy (3-grams;
/// bench/tantivy-peer). Bench-only: nothing of either is built into the
/// library. Both take `<export> <database>`, print their build figures on
/// one line, then answer one JSON request per line (see the script).
pub struct Peer {
    pub name: &'static str,
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

impl Peer {
    /// SQLite FTS5 through Python's `sqlite3`.
    pub fn fts5(export: &Export, db: &Path) -> Peer {
        let mut cmd = std::process::Command::new("python3");
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fts5_bench.py"));
        Peer::start("FTS5", "FTS5 (trigram)", cmd, export, db)
    }

    /// tantivy (bench/tantivy-peer, built by [`build_tantivy_peer`]).
    pub fn tantivy(program: &Path, export: &Export, dir: &Path) -> Peer {
        Peer::start("tantivy", "tantivy (3-grams)", std::process::Command::new(program), export, dir)
    }

    fn start(name: &'static str, long: &str, mut cmd: std::process::Command, export: &Export, db: &Path) -> Peer {
        use std::io::BufRead;
        let mut child = cmd
            .arg(&export.0)
            .arg(db)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the {name} peer: {e}"));
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let built: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("the {name} build's figures ({e}): {line:?}"));
        let (db, text) = (built["db_bytes"].as_f64().unwrap(), built["text_bytes"].as_f64().unwrap());
        let (build, optimize) = (built["build_s"].as_f64().unwrap(), built["optimize_s"].as_f64().unwrap());
        println!(
            "  {long}: {} in {build:.1} s (+ {optimize:.1} s to merge into one), {:.0} MB = {:.0}% of the {:.0} MB \
             it indexes",
            if built["reused"].as_bool() == Some(true) { "reused, built" } else { "built" },
            db / 1e6,
            100.0 * db / text,
            text / 1e6
        );
        Peer { name, child, out }
    }

    fn ask(&mut self, q: &str, cwd: &str, full: bool) -> serde_json::Value {
        let text = !full && std::env::var_os("DSR_BENCH_PEER_TEXT").is_some();
        self.request(&json!({"q": q, "cwd": cwd, "full": full, "text": text}))
    }

    /// One ranked query, cut at 50: its time as the peer measured it, and
    /// how many results it gave. With `DSR_BENCH_PEER_TEXT` the peer also
    /// reads each result's text and finds the first word in it (what our
    /// snippet needs at least).
    pub fn time(&mut self, q: &str, cwd: &str) -> (Duration, usize) {
        let v = self.ask(q, cwd, false);
        (Duration::from_secs_f64(v["ms"].as_f64().unwrap() / 1e3), v["n"].as_u64().unwrap() as usize)
    }

    /// Every session it finds.
    pub fn all(&mut self, q: &str) -> std::collections::BTreeSet<String> {
        let v = self.ask(q, "", true);
        v["ids"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_owned()).collect()
    }

    /// The first `limit` sessions matching `q` by the peer's BM25 score,
    /// best first, over its trigrams (`tok` `"trigram"`) or its words
    /// (`"words"`: FTS5's `unicode61`, tantivy's default tokenizer).
    pub fn ranked(&mut self, q: &str, tok: &str, limit: usize) -> Vec<String> {
        let v = self.request(&json!({"q": q, "rank": "bm25", "tok": tok, "limit": limit}));
        v["ids"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_owned()).collect()
    }

    fn request(&mut self, req: &serde_json::Value) -> serde_json::Value {
        use std::io::BufRead;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{req}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the {} peer's answer ({e}): {line:?}", self.name))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        drop(self.child.wait());
    }
}

/// Builds bench/tantivy-peer (release, locked, into `target/tantivy-peer`
/// of the workspace) so a fresh clone needs no extra step: its program.
pub fn build_tantivy_peer() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = repo.join("target/tantivy-peer");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = std::process::Command::new(cargo);
    build
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(repo.join("bench/tantivy-peer/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target);
    if std::env::var_os("CARGO_BUILD_JOBS").is_none() {
        build.env("CARGO_BUILD_JOBS", "2");
    }
    let started = Instant::now();
    let status = build.status().expect("cargo, to build bench/tantivy-peer");
    let took = started.elapsed();
    assert!(status.success(), "building bench/tantivy-peer failed");
    println!("tantivy peer (bench/tantivy-peer) ready in {:.1} s", took.as_secs_f64());
    target.join("release/tantivy-peer")
}
