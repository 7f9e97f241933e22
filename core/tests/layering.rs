//! Imports point down: every module of the core imports only from its own
//! floor and the floors below it, as declared once in `core/src/lib.rs`
//! (the `// layers:` block). This test reads the code of every file under
//! `core/src` (comments, strings and test modules left out: the
//! `#[cfg(test)] mod x { … }` blocks and the files of `#[cfg(test)] mod x;`)
//! and checks each `crate::…` path against that list: a path to a higher
//! floor, one through the crate root's re-exports (`crate::Resolver`), or
//! one between modules the block keeps apart (`// apart: index sources`:
//! the engines never import each other) fails. It also checks that the
//! list names every module `lib.rs` declares, once, and that the fronts
//! (`ffi`, `python`, `node`, `cli`) name no module of the core but its
//! public ones (`wire`, `sources`): the crate root's API otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The floors declared in `lib.rs`, module name -> floor (0 lowest), and
/// the groups of modules kept apart (`// apart: a b`): no module of a group
/// imports another of it, whatever their floors.
struct Layers {
    floors: BTreeMap<String, usize>,
    apart: Vec<BTreeSet<String>>,
}

impl Layers {
    /// Whether `a` and `b` are two modules kept apart.
    fn apart(&self, a: &str, b: &str) -> bool {
        a != b && self.apart.iter().any(|g| g.contains(a) && g.contains(b))
    }
}

fn declared_layers(lib_rs: &str) -> Layers {
    let mut floors = BTreeMap::new();
    let mut apart = Vec::new();
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
            for group in &apart {
                for name in group {
                    assert!(floors.contains_key(name), "`apart:` names `{name}`, which has no floor");
                }
            }
            return Layers { floors, apart };
        }
        if !inside {
            continue;
        }
        let body =
            line.strip_prefix("//").unwrap_or_else(|| panic!("a line of the layers block is not a comment: {line}"));
        // A floor's modules come first, then two or more spaces and what they are.
        let names = body.trim_start().split("  ").next().unwrap_or("");
        if let Some(group) = names.strip_prefix("apart:") {
            let group: BTreeSet<String> = group.split_whitespace().map(str::to_owned).collect();
            assert!(group.len() >= 2, "an `apart:` line names fewer than two modules: {line}");
            apart.push(group);
            continue;
        }
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
        .code
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

/// The code of a file: without comments, string and char literals (a
/// `#[path = "…"]`'s kept), and without its test modules (they may reach
/// anywhere): each `#[cfg(test)] mod x { … }` block blanked (its lines kept
/// as empty lines, so line numbers hold); `test_files`, the modules it
/// declares as `#[cfg(test)] mod x;` (their names, and their `#[path]`).
struct Code {
    code: String,
    test_files: Vec<(String, Option<String>)>,
}

fn code_of(text: &str) -> Code {
    without_test_modules(&stripped(text))
}

/// `code` (stripped) with its `#[cfg(test)] mod x { … }` blocks blanked,
/// and the modules it declares `#[cfg(test)] mod x;`. Another item under
/// `#[cfg(test)]` (a `use`, a `fn`) is code like any other.
fn without_test_modules(code: &str) -> Code {
    let mut out = String::with_capacity(code.len());
    let mut test_files = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let mut after = &from["#[cfg(test)]".len()..];
        // Other attributes of the item, and its visibility.
        let mut path = None;
        loop {
            after = after.trim_start();
            if let Some(attr) = after.strip_prefix("#[") {
                let end = attr.find(']').map_or(attr.len(), |e| e + 1);
                if let Some(p) = attr[..end].strip_prefix("path = \"") {
                    path = p.split('"').next().map(str::to_owned);
                }
                after = &attr[end..];
            } else if let Some(a) = after.strip_prefix("pub(crate) ").or_else(|| after.strip_prefix("pub(super) ")) {
                after = a;
            } else if let Some(a) = after.strip_prefix("pub ") {
                after = a;
            } else {
                break;
            }
        }
        let Some(decl) = after.strip_prefix("mod ") else {
            // Not a module: checked as code.
            out.push_str(&from[..1]);
            rest = &from[1..];
            continue;
        };
        let name: String = decl.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let tail = decl[name.len()..].trim_start();
        let skipped = if tail.starts_with(';') {
            test_files.push((name, path));
            from.len() - tail.len() + 1
        } else if tail.starts_with('{') {
            let mut depth = 0;
            let mut end = tail.len();
            for (i, c) in tail.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            from.len() - tail.len() + end
        } else {
            out.push_str(&from[..1]);
            rest = &from[1..];
            continue;
        };
        out.extend(from[..skipped].chars().filter(|&c| c == '\n'));
        rest = &from[skipped..];
    }
    out.push_str(rest);
    Code { code: out, test_files }
}

/// `text` without comments, string and char literals (a string in a
/// `#[path = "…"]` attribute kept as it is).
fn stripped(text: &str) -> String {
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
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                if out.trim_end().ends_with("#[path =") {
                    out.push_str(&text[start..i.min(text.len())]);
                } else {
                    out.push_str("\"\"");
                }
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

/// The files of the test modules `file` declares (`#[cfg(test)] mod x;`):
/// each a file, or a folder whose files are all the module's.
fn test_module_files(file: &Path, test_files: &[(String, Option<String>)]) -> Vec<PathBuf> {
    let dir = file.parent().unwrap();
    let stem = file.file_stem().unwrap().to_string_lossy();
    let base = if ["mod", "lib", "main"].contains(&stem.as_ref()) { dir.to_path_buf() } else { dir.join(&*stem) };
    let mut out = Vec::new();
    for (name, path) in test_files {
        match path {
            Some(path) => out.push(dir.join(path)),
            None => {
                out.push(base.join(format!("{name}.rs")));
                out.push(base.join(name));
            }
        }
    }
    out
}

/// What breaks the layers in the tree under `src`: `file:line: module
/// (floor a) imports name (floor b)`, a path through the crate root, an
/// import between modules kept apart.
fn violations(src: &Path, layers: &Layers) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let codes: Vec<(PathBuf, Code)> =
        files.into_iter().map(|f| (f.clone(), code_of(&std::fs::read_to_string(&f).unwrap()))).collect();
    let tests: Vec<PathBuf> = codes.iter().flat_map(|(f, c)| test_module_files(f, &c.test_files)).collect();
    let mut out = Vec::new();
    for (file, code) in &codes {
        let module = module_of(src, file);
        if module == "lib" || tests.iter().any(|t| file.starts_with(t)) {
            continue;
        }
        let Some(&own) = layers.floors.get(&module) else {
            out.push(format!("{}: module `{module}` has no floor in lib.rs's layers block", file.display()));
            continue;
        };
        for (line, name) in crate_paths(&code.code) {
            match layers.floors.get(&name) {
                Some(_) if layers.apart(&module, &name) => {
                    out.push(format!("{}:{line}: `{module}` imports `{name}`; lib.rs keeps them apart", file.display()))
                }
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

/// The modules of the core a front may name: those `lib.rs` declares
/// `pub mod` and neither hides from the documentation nor deprecates
/// (`wire`, `sources`).
fn public_modules(lib_rs: &str) -> BTreeSet<String> {
    let code = code_of(lib_rs).code;
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    let mut item_start = 0;
    let mut at = 0;
    while let Some(found) = rest.find("pub mod ") {
        let pos = at + found;
        // The attributes since the item before it.
        let before = &code[item_start.max(code[..pos].rfind([';', '}']).map_or(0, |p| p + 1))..pos];
        let name: String = code[pos + 8..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !before.contains("doc(hidden)") && !before.contains("deprecated") {
            out.insert(name);
        }
        item_start = pos + 8;
        at = pos + 8;
        rest = &code[at..];
    }
    out
}

/// The paths of `code` (a front's) into the core that name a module
/// other than `allowed`: `dsh_session_reference::m::…` or `m::…` in a
/// `dsh_session_reference::{…}` group, with its line.
fn module_paths(code: &str, allowed: &BTreeSet<String>) -> Vec<(usize, String)> {
    const CORE: &str = "dsh_session_reference::";
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find(CORE).map(|p| p + at) {
        at = pos + CORE.len();
        if code[..pos].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let line = code[..pos].matches('\n').count() + 1;
        let after = &code[at..];
        // The items named: one path, or each of a group (to its brace).
        let items: Vec<&str> = match after.strip_prefix('{') {
            Some(group) => {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
                for (i, c) in group[..end].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(&group[start..i]);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                items.push(&group[start..end]);
                items
            }
            None => vec![after],
        };
        for item in items {
            let item = item.trim_start();
            let name: String = item.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let module = name.starts_with(|c: char| c.is_ascii_lowercase()) && name != "self";
            if module && item[name.len()..].trim_start().starts_with("::") && !allowed.contains(&name) {
                found.push((line, name));
            }
        }
    }
    found
}

/// The paths of the fronts' code (`ffi`, `python`, `node`, `cli`, under
/// `root`) that name a module of the core not in `allowed`.
fn front_violations(root: &Path, allowed: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for front in ["ffi", "python", "node", "cli"] {
        let mut files = Vec::new();
        rust_files(&root.join(front).join("src"), &mut files);
        let codes: Vec<(PathBuf, Code)> =
            files.into_iter().map(|f| (f.clone(), code_of(&std::fs::read_to_string(&f).unwrap()))).collect();
        let tests: Vec<PathBuf> = codes.iter().flat_map(|(f, c)| test_module_files(f, &c.test_files)).collect();
        for (file, code) in &codes {
            if tests.iter().any(|t| file.starts_with(t)) {
                continue;
            }
            for (line, name) in module_paths(&code.code, allowed) {
                out.push(format!(
                    "{}:{line}: a front names the core's module `{name}`; use the crate root or `wire`",
                    file.display()
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_has_one_floor() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let floors = declared_layers(&lib).floors;
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
    let layers = declared_layers(&lib);
    assert!(layers.apart("index", "sources"), "lib.rs keeps the engines apart");
    let found = violations(&src_dir(), &layers);
    assert!(found.is_empty(), "imports that break the layers:\n{}", found.join("\n"));
}

#[test]
fn fronts_use_the_crate_root_and_wire() {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap();
    let allowed = public_modules(&lib);
    assert!(allowed.contains("wire") && !allowed.contains("fs") && !allowed.contains("harden"), "{allowed:?}");
    let root = src_dir().parent().unwrap().parent().unwrap().to_path_buf();
    let found = front_violations(&root, &allowed);
    assert!(found.is_empty(), "module paths in the fronts:\n{}", found.join("\n"));
}

/// The checker itself finds what it must: a tree with an upward import
/// (also past a `#[cfg(test)]` item that is not a module), one through the
/// root, a grouped import, and one between modules kept apart fails;
/// comments, strings, test modules and their files do not count.
#[test]
fn the_check_catches_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("high")).unwrap();
    std::fs::create_dir_all(src.join("low")).unwrap();
    std::fs::write(
        src.join("low.rs"),
        "use crate::error::Error;\n\
         // crate::high in a comment\n\
         const S: &str = \"crate::high\";\n\
         fn f() { let _ = crate::high::x; }\n\
         use crate::{error::Result, high::Y};\n\
         fn g() -> crate::Resolver { todo!() }\n\
         #[cfg(test)]\nmod tests { use crate::high::Z; fn t() { if true { crate::high::w(); } } }\n\
         #[cfg(test)]\nmod more;\n\
         #[cfg(test)]\n#[path = \"low_tests.rs\"]\nmod other;\n\
         #[cfg(test)]\npub(crate) use crate::error::E;\n\
         fn h() { crate::high::after_tests(); }\n\
         use crate::side::S;\n",
    )
    .unwrap();
    std::fs::write(src.join("low/more.rs"), "use crate::high::Z;\n").unwrap();
    std::fs::write(src.join("low_tests.rs"), "use crate::high::Z;\n").unwrap();
    std::fs::write(src.join("high/mod.rs"), "use crate::low::f;\nuse crate::error::Error;\n").unwrap();
    std::fs::write(src.join("error.rs"), "pub struct Error;\n").unwrap();
    std::fs::write(src.join("side.rs"), "pub struct S;\n").unwrap();
    let floors: BTreeMap<String, usize> =
        [("error", 0), ("side", 1), ("low", 1), ("low_tests", 1), ("high", 2)].map(|(m, f)| (m.to_owned(), f)).into();
    let apart = vec![["low", "side"].map(str::to_owned).into()];
    let found = violations(src, &Layers { floors, apart });
    assert_eq!(found.len(), 5, "{found:#?}");
    assert!(found[0].ends_with(":4: `low` (floor 1) imports `high` (floor 2), a floor above it"), "{}", found[0]);
    assert!(found[1].ends_with(":5: `low` (floor 1) imports `high` (floor 2), a floor above it"), "{}", found[1]);
    assert!(found[2].ends_with(":6: `low` reaches `crate::Resolver` through the crate root; name its module"));
    assert!(found[3].ends_with(":16: `low` (floor 1) imports `high` (floor 2), a floor above it"), "{}", found[3]);
    assert!(found[4].ends_with(":17: `low` imports `side`; lib.rs keeps them apart"), "{}", found[4]);
}

/// A front's paths into the core: the root's items and `wire`'s pass, a
/// hidden module (alone or in a group) does not.
#[test]
fn the_check_catches_a_front_naming_a_module() {
    let allowed: BTreeSet<String> = ["wire", "sources"].map(str::to_owned).into();
    let code = "use dsh_session_reference::{Resolver, wire::stringify, self};\n\
                use dsh_session_reference::sources::SourceSpec;\n\
                fn f() { dsh_session_reference::fs::private_dir(p); dsh_session_reference::block_on(x); }\n\
                use dsh_session_reference::{Config, harden::invisible::{self, is_invisible}};\n\
                use my_dsh_session_reference::fs::x;\n";
    let found = module_paths(code, &allowed);
    assert_eq!(found, [(3, "fs".to_owned()), (4, "harden".to_owned())]);
    let lib = "#[doc(hidden)]\npub mod fs;\npub mod sources;\n#[deprecated(since = \"1\")]\npub mod old {\n}\n\
               /// Doc.\npub mod wire {\n    pub use crate::fs::x;\n}\nmod index;\n";
    assert_eq!(public_modules(lib), ["sources", "wire"].map(str::to_owned).into());
}

#[test]
fn the_layers_block_is_read_as_written() {
    let lib = "// layers:\n//   a b   first\n//   c     second\n//   apart: a c   kept apart\n// end layers\nmod a;\npub mod b;\npub(crate) mod c;\npub mod alias {\n    pub use crate::a::X;\n}\n";
    let layers = declared_layers(lib);
    assert_eq!(layers.floors.get("a"), Some(&0));
    assert_eq!(layers.floors.get("b"), Some(&0));
    assert_eq!(layers.floors.get("c"), Some(&1));
    assert_eq!(layers.floors.len(), 3);
    assert!(layers.apart("a", "c") && layers.apart("c", "a") && !layers.apart("a", "b"));
    assert_eq!(declared_modules(lib), ["a", "b", "c"].into_iter().map(String::from).collect());
}
