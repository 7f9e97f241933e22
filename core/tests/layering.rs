//! Imports point down: every module of the core imports only from its own
//! floor and the floors below it, as declared once in `core/src/lib.rs`
//! (the `// layers:` block). This test reads the code of every file under
//! `core/src` (comments, strings and `#[cfg(test)]` modules left out) and
//! checks each `crate::…` path against that list: a path to a higher floor,
//! or one through the crate root's re-exports (`crate::Resolver`), fails.
//! It also checks that the list names every module `lib.rs` declares, once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The floors declared in `lib.rs`: module name -> floor (0 lowest).
fn declared_layers(lib_rs: &str) -> BTreeMap<String, usize> {
    let mut floors = BTreeMap::new();
    let mut inside = false;
    let mut floor = 0;
    for line in lib_rs.lines() {
        let line = line.trim();
        if line == "// layers:" {
            inside = true;
            continue;
        }
        if line == "// end layers" {
            assert!(inside, "`// end layers` before `// layers:` in lib.rs");
            return floors;
        }
        if !inside {
            continue;
        }
        let body =
            line.strip_prefix("//").unwrap_or_else(|| panic!("a line of the layers block is not a comment: {line}"));
        // A floor's modules come first, then two or more spaces and what they are.
        let names = body.trim_start().split("  ").next().unwrap_or("");
        let mut any = false;
        for name in names.split_whitespace() {
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name:?} in the layers block is not a module name"
            );
            assert!(floors.insert(name.to_owned(), floor).is_none(), "module {name} is declared on two floors");
            any = true;
        }
        if any {
            floor += 1;
        }
    }
    panic!("lib.rs has no `// layers:` … `// end layers` block");
}

/// The file modules `lib.rs` declares (`mod x;`, `pub mod x;`,
/// `pub(crate) mod x;`). Inline modules (`pub mod wire { pub use … }`) are
/// part of the root: re-exports, which stand above every floor.
fn declared_modules(lib_rs: &str) -> BTreeSet<String> {
    code_of(lib_rs)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            rest[name.len()..].trim_start().starts_with(';').then_some(name)
        })
        .collect()
}

/// `text` without comments, string and char literals, and without what
/// follows the first `#[cfg(test)]` (test modules may reach anywhere).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                // A raw string: r"…", r#"…"#, …
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == b'"' && b[j + 1..].iter().take(hashes).filter(|&&c| c == b'#').count() == hashes {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push_str("\"\"");
                i = j;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{…}') or a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    // Multi-byte UTF-8 char literal, or a lifetime.
                    let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 1 + ch_len)
                };
                match end {
                    Some(end) => {
                        out.push_str("' '");
                        i = end + 1;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                let ch = text[i..].chars().next().unwrap();
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// Every module a `crate::` path of `code` names first: `crate::a::b` and
/// `crate::{a::b, c}` give `a` (and `c`); `crate::Name` gives `Name`.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = &rest[..at];
            if before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                // `$crate::`, `some_crate::`: not this crate's root.
                rest = &rest[at + 7..];
                continue;
            }
            let after = &rest[at + 7..];
            if let Some(group) = after.strip_prefix('{') {
                // The first name of each item of the group, to the matching brace
                // (a group may span lines: take what this line has).
                let mut depth = 1;
                let mut item = String::new();
                let mut start = true;
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        ',' if depth == 1 => {
                            if !item.is_empty() {
                                found.push((n + 1, std::mem::take(&mut item)));
                            }
                            start = true;
                            continue;
                        }
                        _ => {}
                    }
                    if depth == 1 && start {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            item.push(c);
                        } else if !item.is_empty() {
                            start = false;
                        }
                    }
                }
                if !item.is_empty() {
                    found.push((n + 1, item));
                }
            } else {
                let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    found.push((n + 1, name));
                }
            }
            rest = after;
        }
    }
    found
}

/// The module a file under `core/src` belongs to (`host/search.rs` -> `host`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.strip_suffix(".rs").map(str::to_owned).unwrap_or(first)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The upward imports of the tree under `src`: `file:line: module (floor a) imports
/// name (floor b)`.
fn violations(src: &Path, floors: &BTreeMap<String, usize>) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for file in files {
        let module = module_of(src, &file);
        if module == "lib" {
            continue;
        }
        // Inline tests of a source file that holds only tests.
        if file.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_tests.rs")) {
            continue;
        }
        let Some(&own) = floors.get(&module) else {
            out.push(format!("{}: module `{module}` has no floor in lib.rs's layers block", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, name) in crate_paths(&code_of(&text)) {
            match floors.get(&name) {
                Some(&floor) if floor <= own => {}
                Some(&floor) => out.push(format!(
                    "{}:{line}: `{module}` (floor {own}) imports `{name}` (floor {floor}), a floor above it",
                    file.display()
                )),
                None => out.push(format!(
                    "{}:{line}: `{module}` reaches `crate::{name}` through the crate root; name its module",
                    file.display()
                )),
            }
        }
    }
    out
}

#[test]
fn every_module_has_one_floor() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let floors = declared_layers(&lib);
    let modules = declared_modules(&lib);
    for m in &modules {
        assert!(floors.contains_key(m), "module `{m}` has no floor in lib.rs");
    }
    for m in floors.keys() {
        assert!(modules.contains(m), "the layers block names `{m}`, which lib.rs does not declare");
    }
}

#[test]
fn imports_point_down() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let floors = declared_layers(&lib);
    let found = violations(&src_dir(), &floors);
    assert!(found.is_empty(), "imports that run up a floor:\n{}", found.join("\n"));
}

/// The checker itself finds what it must: a tree with an upward import,
/// one through the root, and a grouped import fails; comments, strings
/// and test modules do not count.
#[test]
fn the_check_catches_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("high")).unwrap();
    std::fs::write(
        src.join("low.rs"),
        "use crate::error::Error;\n\
         // crate::high in a comment\n\
         const S: &str = \"crate::high\";\n\
         fn f() { let _ = crate::high::x; }\n\
         use crate::{error::Result, high::Y};\n\
         fn g() -> crate::Resolver { todo!() }\n\
         #[cfg(test)]\nmod tests { use crate::high::Z; }\n",
    )
    .unwrap();
    std::fs::write(src.join("high/mod.rs"), "use crate::low::f;\nuse crate::error::Error;\n").unwrap();
    std::fs::write(src.join("error.rs"), "pub struct Error;\n").unwrap();
    let floors: BTreeMap<String, usize> =
        [("error".to_owned(), 0), ("low".to_owned(), 1), ("high".to_owned(), 2)].into_iter().collect();
    let found = violations(src, &floors);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].ends_with(":4: `low` (floor 1) imports `high` (floor 2), a floor above it"), "{}", found[0]);
    assert!(found[1].ends_with(":5: `low` (floor 1) imports `high` (floor 2), a floor above it"), "{}", found[1]);
    assert!(found[2].ends_with(":6: `low` reaches `crate::Resolver` through the crate root; name its module"));
}

#[test]
fn the_layers_block_is_read_as_written() {
    let lib = "// layers:\n//   a b   first\n//   c     second\n// end layers\nmod a;\npub mod b;\npub(crate) mod c;\npub mod alias {\n    pub use crate::a::X;\n}\n";
    let floors = declared_layers(lib);
    assert_eq!(floors.get("a"), Some(&0));
    assert_eq!(floors.get("b"), Some(&0));
    assert_eq!(floors.get("c"), Some(&1));
    assert_eq!(declared_modules(lib), ["a", "b", "c"].into_iter().map(String::from).collect());
}
