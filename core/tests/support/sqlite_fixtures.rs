// The SQLite kinds' fixture databases, built from the SQL and JSON files
// under tests/fixtures/foreign-logs/<kind>/ (included by each test crate
// that builds one: the kinds' own tests, and the command line's test of
// every kind at once).

use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// The fixture directory of `kind`.
pub fn fixtures(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign-logs").join(kind)
}

/// A WAL-mode database at `path` built from the SQL files of `kind`'s
/// fixture, closed (so nothing lies beside it).
pub fn build_db(kind: &str, path: &Path, files: &[&str]) {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    for file in files {
        conn.execute_batch(&std::fs::read_to_string(fixtures(kind).join(file)).unwrap()).unwrap();
    }
}

/// A Zed thread row's `data` for `data_type`: the document as JSON,
/// compressed for `zstd`.
pub fn zed_data(data_type: &str, document: &serde_json::Value) -> Vec<u8> {
    let json = serde_json::to_vec(document).unwrap();
    if data_type == "zstd" {
        zstd::encode_all(json.as_slice(), 3).unwrap()
    } else {
        json
    }
}

/// Zed's fixture threads (`threads.json`: each row's document, compressed
/// as its `data_type` says, or its `raw` bytes) as the database `db`.
pub fn zed_threads_db(db: &Path) {
    build_db("zed", db, &["schema.sql"]);
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures("zed").join("threads.json")).unwrap()).unwrap();
    let conn = Connection::open(db).unwrap();
    for r in rows {
        let s = |k: &str| r[k].as_str().map(str::to_owned);
        let data_type = s("data_type").unwrap();
        let data = match s("raw") {
            Some(raw) => raw.into_bytes(),
            None => zed_data(&data_type, &r["document"]),
        };
        conn.execute(
            "INSERT INTO threads VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                s("id"),
                s("summary"),
                s("updated_at"),
                data_type,
                data,
                s("parent_id"),
                s("folder_paths"),
                s("folder_paths_order"),
                s("created_at")
            ],
        )
        .unwrap();
    }
}
