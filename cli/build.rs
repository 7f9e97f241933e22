//! Embeds the example DSH store (`examples/sessions/`) in the binary, so that
//! `dsh-session-ref demo` works wherever the binary is installed: writes
//! `$OUT_DIR/example_store.rs`, a `&[(relative path, bytes)]` of every file.
//! Outside the source tree (a packaged crate) the list is empty and `demo`
//! asks for `--root`.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("read examples/sessions").map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, base, out);
        } else {
            let rel = path.strip_prefix(base).unwrap().to_str().expect("UTF-8 example path").replace('\\', "/");
            out.push((rel, path));
        }
    }
}

fn main() {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("../examples/sessions");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    if root.is_dir() {
        let root = root.canonicalize().unwrap();
        walk(&root, &root, &mut files);
    }
    let mut code = String::from("&[\n");
    for (rel, path) in files {
        code.push_str(&format!("    ({rel:?}, include_bytes!({:?}) as &[u8]),\n", path.display().to_string()));
    }
    code.push_str("]\n");
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join("example_store.rs"), code).unwrap();
}
