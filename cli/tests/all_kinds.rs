//! Every kind the library reads, at once: sample sessions of each
//! (`tests/fixtures/all-kinds.json`, one row per kind) placed where its
//! agent keeps them under one home, then the commands run with no
//! `--source` (every default location that exists used and named on
//! stderr, both of a kind that keeps two layouts) and with every kind given as `--source KIND=PATH`: each finds,
//! shows, reads, mentions, searches and prepares sessions of every kind,
//! and lists exactly the sessions the samples hold.

mod common;

#[path = "../../core/tests/support/sqlite_fixtures.rs"]
mod sqlite_fixtures;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{cmd, copy_tree, run_with, Out};
use dsh_session_reference::format_mention;
use dsh_session_reference::sources::{location_variables, SourceKind};
use serde_json::Value;

/// `tests/fixtures/`.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// One row of the table: a kind's samples and what they hold.
struct Row {
    kind: SourceKind,
    /// Where its agent keeps them, below `$HOME` (`None`: nowhere by default).
    home: Option<String>,
    /// Which of the kind's default locations it is (0: the first; more:
    /// an `also` of the row, read with it).
    nth: usize,
    row: Value,
    /// Every session a listing of the samples gives (once placed, with
    /// `{at}` replaced by where they are).
    ids: BTreeSet<String>,
    /// One session: its id, title and words it says.
    id: String,
    title: String,
    says: String,
}

/// The table, in [`SourceKind::ALL`] order; fails when a kind the library
/// reads has no row.
fn rows() -> Vec<Row> {
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("all-kinds.json")).unwrap()).unwrap();
    let s = |v: &Value| v.as_str().unwrap().to_owned();
    let mut rows = Vec::new();
    for kind in SourceKind::ALL {
        let found: Vec<&Value> =
            table["kinds"].as_array().unwrap().iter().filter(|r| r["kind"] == kind.name()).collect();
        let [row] = found[..] else {
            panic!(
                "the kind {} has {} rows in tests/fixtures/all-kinds.json: a kind the library reads adds one row \
                 there (its sample sessions, where its agent keeps them, and the ids they list), which this test \
                 and the MCP test of every kind read",
                kind.name(),
                found.len()
            )
        };
        let also = row["also"].as_array().into_iter().flatten();
        for (i, row) in std::iter::once(row).chain(also).enumerate() {
            let shown = &row["shown"];
            rows.push(Row {
                kind,
                home: row["home"].as_str().map(str::to_owned),
                nth: i,
                row: row.clone(),
                ids: row["ids"].as_array().unwrap().iter().map(s).collect(),
                id: s(&shown["id"]),
                title: s(&shown["title"]),
                says: s(&shown["says"]),
            });
        }
    }
    let main = rows.iter().filter(|r| r.nth == 0).count();
    assert_eq!(main, table["kinds"].as_array().unwrap().len(), "a row of no kind the library reads");
    rows
}

/// Puts `row`'s samples at `at` (a directory, or a database file).
fn place(row: &Row, at: &Path) {
    let r = &row.row;
    if let Some(tree) = r["copy"].as_str() {
        copy_tree(&fixtures().join(tree), at);
    } else if let Some(dir) = r["sql"].as_str() {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        let kind = Path::new(dir).file_name().unwrap().to_str().unwrap();
        sqlite_fixtures::build_db(kind, at, &["schema.sql", "sessions.sql"]);
    } else if r["zed"].is_string() {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        sqlite_fixtures::zed_threads_db(at);
    } else {
        panic!("{}: no way to place its samples", row.kind.name());
    }
}

/// A temporary directory with `home/`, every kind's samples at its default
/// location there, and a kind without one under `elsewhere/`.
struct Placed {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    rows: Vec<Row>,
    /// Where each row's samples are.
    at: Vec<PathBuf>,
}

fn placed() -> Placed {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let elsewhere = tmp.path().join("elsewhere");
    let mut rows = rows();
    let env = |name: &str| (name == "HOME").then(|| home.clone().into_os_string());
    let mut at = Vec::new();
    for row in &mut rows {
        let path = match &row.home {
            Some(below) => {
                // The table's locations are the kind's own (on Linux).
                let all = row.kind.default_locations_with(&env);
                if cfg!(target_os = "linux") {
                    assert_eq!(all.get(row.nth), Some(&home.join(below)), "{}: {all:?}", row.kind.name());
                }
                all[row.nth].clone()
            }
            None => {
                assert!(!row.kind.has_default_location(), "{}: the table gives no location", row.kind.name());
                elsewhere.join(row.kind.name())
            }
        };
        place(row, &path);
        let here = |id: &String| id.replace("{at}", path.to_str().unwrap());
        row.ids = row.ids.iter().map(here).collect();
        row.id = here(&row.id);
        at.push(path);
    }
    Placed { _tmp: tmp, home, rows, at }
}

/// The command with `home` as `$HOME` and no other variable a default
/// location reads.
fn run_in(home: &Path, args: &[&str]) -> Out {
    let mut c = cmd();
    for name in location_variables() {
        c.env_remove(name);
    }
    for name in ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "USERPROFILE", "APPDATA", "LOCALAPPDATA"] {
        c.env_remove(name);
    }
    c.env("HOME", home);
    let out = run_with(c, args, None);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    out
}

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// The session ids of a `candidates --json` or `search --json` answer.
fn ids_of(v: &Value) -> BTreeSet<String> {
    v.as_array().unwrap().iter().map(|c| c["sessionId"].as_str().unwrap().to_owned()).collect()
}

/// `a` then `b`.
fn cat<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    [a, b].concat()
}

/// Every command finds and answers sessions of every kind its sources
/// hold: `with` (the `--source` arguments, or none) run in `home`.
fn every_command_answers(home: &Path, with: &[&str], rows: &[&Row]) {
    let listed = run_in(home, &cat(with, &["candidates", "--target", "t", "--limit", "1000", "--json"]));
    let want: BTreeSet<String> = rows.iter().flat_map(|r| r.ids.iter().cloned()).collect();
    assert_eq!(ids_of(&json(&listed)), want, "the listing of every kind's samples");
    for row in rows {
        let name = row.kind.name();
        let shown = json(&run_in(home, &cat(with, &["show", &row.id, "--json"])));
        let texts: Vec<&str> =
            shown["messages"].as_array().unwrap().iter().map(|m| m["text"].as_str().unwrap()).collect();
        assert!(texts.iter().any(|t| t.contains(&row.says)), "{name}: {} shows {texts:?}", row.id);
        let read = json(&run_in(home, &cat(with, &["read", &row.id, "--json"])));
        assert_eq!(read["sessionId"], row.id.as_str(), "{name}");
        assert_eq!(read["totalMessages"].as_u64(), Some(texts.len() as u64), "{name}: read and show agree");
        assert!(read["text"].as_str().unwrap().contains(&row.says), "{name}: read {}", row.id);
        let mention = run_in(home, &cat(with, &["mention", &row.id]));
        assert_eq!(mention.stdout, format!("{}\n", format_mention(&row.id, Some(&row.title))), "{name}");
        let found = json(&run_in(home, &cat(with, &["search", &row.says, "--limit", "50", "--json"])));
        assert!(ids_of(&found).contains(&row.id), "{name}: searching {:?} found {found}", row.says);
    }
    // Messages mentioning a session of every kind, as many at once as a
    // message may (three).
    for three in rows.chunks(3) {
        let message: Vec<String> = three.iter().map(|r| format_mention(&r.id, None)).collect();
        let out =
            run_in(home, &cat(with, &["prepare", "--target", "t", "--message", &message.join(" and "), "--prompt"]));
        for row in three {
            assert!(out.stdout.contains(&row.says), "{}: the prompt lacks {:?}", row.kind.name(), row.says);
        }
    }
}

/// With no `--source`: every kind with a default location is read there,
/// every location named on stderr in the table's order; a kind read only
/// where given (Aider) is not.
#[test]
fn every_kind_at_its_default_location_with_no_source() {
    let p = placed();
    let listed = run_in(&p.home, &["candidates", "--target", "t", "--json"]);
    let named: Vec<String> = (p.rows.iter().zip(&p.at))
        .filter(|(r, _)| r.home.is_some())
        .map(|(r, at)| format!("{}={}", r.kind.name(), at.display()))
        .collect();
    let first = listed.stderr.lines().next().unwrap_or_default();
    assert_eq!(first, format!("note: sources: {}", named.join(", ")), "{}", listed.stderr);
    let defaults: Vec<&Row> = p.rows.iter().filter(|r| r.home.is_some()).collect();
    every_command_answers(&p.home, &[], &defaults);
}

/// Every kind given as `--source KIND=PATH` at once (the home empty).
#[test]
fn every_kind_given_at_once() {
    let p = placed();
    let specs: Vec<String> =
        (p.rows.iter().zip(&p.at)).map(|(r, at)| format!("{}={}", r.kind.name(), at.display())).collect();
    let with: Vec<&str> = specs.iter().flat_map(|s| ["--source", s.as_str()]).collect();
    let empty = p.home.with_file_name("empty-home");
    std::fs::create_dir_all(&empty).unwrap();
    let all: Vec<&Row> = p.rows.iter().collect();
    every_command_answers(&empty, &with, &all);
}
