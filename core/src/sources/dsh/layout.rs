//! Where a session's log lives under a DSH sessions root: the project
//! directory derived from the cwd, the session directory derived from the
//! id, and the file name of each format generation.
//!
//! `<root>/<project-dir>/<session-dir>/<generation file>`, where the
//! generation file is `session.jsonl` for v0 and `session.v<N>.jsonl` for
//! N ≥ 1, plus `.zstd` in a compressed root. Only these canonical names are
//! generations: `session.v0.jsonl`, `session.v01.jsonl`, `session.V2.jsonl`,
//! `session.lock` and temporary files are not.

/// The project directory of sessions that have no cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";
/// The file name of a plain JSONL log of generation v0.
pub const RAW_LOG_NAME: &str = "session.jsonl";
/// The file name of a Zstandard-compressed log of generation v0.
pub const ZSTD_LOG_NAME: &str = "session.jsonl.zstd";
/// The suffix a compressed root adds to every generation file name.
pub const ZSTD_SUFFIX: &str = ".zstd";
/// The longest project key (between the `--` markers), in characters.
const MAX_PROJECT_KEY: usize = 251;

/// How a log is stored on disk. A root uses one encoding only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Plain JSONL, `session.jsonl`.
    Raw,
    /// A series of independent, checksummed Zstandard frames, `session.jsonl.zstd`.
    Zstd,
}

impl Encoding {
    /// The file name of a v0 log in this encoding (see
    /// [`generation_file_name`] for the others).
    pub fn file_name(self) -> &'static str {
        match self {
            Encoding::Raw => RAW_LOG_NAME,
            Encoding::Zstd => ZSTD_LOG_NAME,
        }
    }

    /// The encoding of a log file name of any generation, if it is one.
    pub fn from_file_name(name: &str) -> Option<Encoding> {
        parse_generation_file_name(name).map(|(_, encoding)| encoding)
    }

    /// `none` or `zstd`, as the fixtures spell the compression.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Raw => "none",
            Encoding::Zstd => "zstd",
        }
    }
}

/// The file name of generation `generation` in `encoding`:
/// `session.jsonl[.zstd]` for 0, `session.v<N>.jsonl[.zstd]` above.
///
/// ```
/// use dsh_session_reference::sources::dsh::layout::{generation_file_name, Encoding};
/// assert_eq!(generation_file_name(0, Encoding::Raw), "session.jsonl");
/// assert_eq!(generation_file_name(4, Encoding::Zstd), "session.v4.jsonl.zstd");
/// ```
pub fn generation_file_name(generation: u64, encoding: Encoding) -> String {
    let suffix = match encoding {
        Encoding::Raw => "",
        Encoding::Zstd => ZSTD_SUFFIX,
    };
    match generation {
        0 => format!("session.jsonl{suffix}"),
        n => format!("session.v{n}.jsonl{suffix}"),
    }
}

/// The generation and encoding of a canonical generation file name, or
/// `None` for any other name. The name before the compression suffix must
/// match `^session(?:\.v([1-9][0-9]*))?\.jsonl$`; a generation too large
/// for a `u64` reads as `u64::MAX` (a newer DSH than any).
///
/// ```
/// use dsh_session_reference::sources::dsh::layout::{parse_generation_file_name, Encoding};
/// assert_eq!(parse_generation_file_name("session.v3.jsonl.zstd"), Some((3, Encoding::Zstd)));
/// assert_eq!(parse_generation_file_name("session.jsonl"), Some((0, Encoding::Raw)));
/// assert_eq!(parse_generation_file_name("session.v0.jsonl"), None);
/// assert_eq!(parse_generation_file_name("session.lock"), None);
/// ```
pub fn parse_generation_file_name(name: &str) -> Option<(u64, Encoding)> {
    let (base, encoding) = match name.strip_suffix(ZSTD_SUFFIX) {
        Some(base) => (base, Encoding::Zstd),
        None => (name, Encoding::Raw),
    };
    let middle = base.strip_prefix("session")?.strip_suffix(".jsonl")?;
    if middle.is_empty() {
        return Some((0, encoding));
    }
    let digits = middle.strip_prefix(".v")?;
    let valid = digits.bytes().all(|b| b.is_ascii_digit()) && digits.bytes().next().is_some_and(|b| b != b'0');
    valid.then(|| (digits.parse().unwrap_or(u64::MAX), encoding))
}

fn is_plain(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x2E | 0x5F | 0x2D)
}

fn push_escaped(out: &mut String, unit: u16) {
    if is_plain(unit) {
        out.push(char::from(unit as u8));
    } else {
        out.push_str(&format!("~{unit:04X}"));
    }
}

/// The session directory of `id`: every UTF-16 code unit outside
/// `[A-Za-z0-9._-]` (and so `~` itself) written as `~XXXX` with four
/// upper-case hex digits; the ids `.` and `..` become `~002E` and
/// `~002E~002E`.
///
/// ```
/// use dsh_session_reference::sources::dsh::layout::session_dir_name;
/// assert_eq!(session_dir_name("subagent mixed ~1"), "subagent~0020mixed~0020~007E1");
/// assert_eq!(session_dir_name(".."), "~002E~002E");
/// ```
pub fn session_dir_name(id: &str) -> String {
    match id {
        "." => return "~002E".to_owned(),
        ".." => return "~002E~002E".to_owned(),
        _ => {}
    }
    let mut out = String::with_capacity(id.len());
    for unit in id.encode_utf16() {
        push_escaped(&mut out, unit);
    }
    out
}

/// The project directory of a cwd: `_no-cwd` without one, else `--KEY--`
/// where KEY maps each run of `/`, `\` or `:` to one `-`, keeps
/// `[A-Za-z0-9._-]`, escapes every other UTF-16 code unit as `~XXXX`, drops
/// leading `-` (an empty key becomes `root`) and is cut to 251 characters.
///
/// ```
/// use dsh_session_reference::sources::dsh::layout::project_dir_name;
/// assert_eq!(project_dir_name(Some("/home/dev/alpha")), "--home-dev-alpha--");
/// assert_eq!(project_dir_name(Some(r"C:\work\gamma")), "--C-work-gamma--");
/// assert_eq!(project_dir_name(None), "_no-cwd");
/// ```
pub fn project_dir_name(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else { return NO_CWD_DIR.to_owned() };
    let mut key = String::with_capacity(cwd.len());
    let mut in_separator_run = false;
    for unit in cwd.encode_utf16() {
        if matches!(unit, 0x2F | 0x5C | 0x3A) {
            if !in_separator_run {
                key.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        push_escaped(&mut key, unit);
    }
    let trimmed = key.trim_start_matches('-');
    let key = if trimmed.is_empty() { "root" } else { trimmed };
    // KEY is ASCII, so characters are bytes.
    let key = &key[..key.len().min(MAX_PROJECT_KEY)];
    format!("--{key}--")
}

/// The path of a v0 log relative to the root, as DSH derives it from the
/// header's id and cwd: `<project-dir>/<session-dir>/<file name>`.
pub fn relative_log_path(id: &str, cwd: Option<&str>, encoding: Encoding) -> String {
    relative_generation_path(id, cwd, 0, encoding)
}

/// The path of the log of generation `generation` relative to the root.
pub fn relative_generation_path(id: &str, cwd: Option<&str>, generation: u64, encoding: Encoding) -> String {
    format!("{}/{}/{}", project_dir_name(cwd), session_dir_name(id), generation_file_name(generation, encoding))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_dirs() {
        assert_eq!(session_dir_name("compaction-recovery"), "compaction-recovery");
        assert_eq!(session_dir_name("."), "~002E");
        assert_eq!(session_dir_name("a.b"), "a.b");
        assert_eq!(session_dir_name("..."), "...");
        assert_eq!(session_dir_name("权限/策略 \"context\""), "~6743~9650~002F~7B56~7565~0020~0022context~0022");
        assert_eq!(session_dir_name("😀"), "~D83D~DE00");
        assert_eq!(session_dir_name("~"), "~007E");
    }

    #[test]
    fn generation_names() {
        for (name, want) in [
            ("session.jsonl", Some((0, Encoding::Raw))),
            ("session.jsonl.zstd", Some((0, Encoding::Zstd))),
            ("session.v1.jsonl", Some((1, Encoding::Raw))),
            ("session.v12.jsonl.zstd", Some((12, Encoding::Zstd))),
            ("session.v99999999999999999999999.jsonl", Some((u64::MAX, Encoding::Raw))),
            ("session.v0.jsonl", None),
            ("session.v01.jsonl", None),
            ("session.V2.jsonl", None),
            ("session.v.jsonl", None),
            ("session.v2.jsonl.tmp", None),
            ("session.v2.jsonl.zstd.zstd", None),
            (".session.v2.jsonl", None),
            ("session.lock", None),
            ("session.v-1.jsonl", None),
            ("session.v+1.jsonl", None),
        ] {
            assert_eq!(parse_generation_file_name(name), want, "{name}");
            if let Some((n, e)) = want.filter(|(n, _)| *n < 100) {
                assert_eq!(generation_file_name(n, e), name);
            }
        }
    }

    #[test]
    fn project_dirs() {
        assert_eq!(project_dir_name(Some("/")), "--root--");
        assert_eq!(project_dir_name(Some("//a::b\\\\c/")), "--a-b-c---");
        assert_eq!(project_dir_name(Some("/x/~y z")), "--x-~007Ey~0020z--");
        assert_eq!(project_dir_name(Some("--a")), "--a--");
        let long = "/".to_owned() + &"é".repeat(100);
        let dir = project_dir_name(Some(&long));
        assert_eq!(dir.len(), 251 + 4);
        assert!(dir.starts_with("--~00E9~00E9"));
    }
}
