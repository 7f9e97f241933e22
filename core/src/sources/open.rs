//! Opening sources by kind and location: the default location of each
//! format, `kind=DIR` specs, and one [`MultiQuery`] over several, which
//! every front uses so that they all open the same things the same way.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use super::claude_code::ClaudeCodeSource;
use super::codex::CodexSource;
use super::dsh::DshStore;
use super::{FileSource, MultiQuery};
use crate::error::HostError;
use crate::host::{Blocking, BlockingSessionQuery, SessionHeader, SessionQuery, SurfaceData};

/// The formats a source can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// DeepSeek Harness session logs (a sessions root).
    Dsh,
    /// Claude Code transcripts (a projects root).
    ClaudeCode,
    /// Codex CLI rollouts (a Codex home).
    Codex,
}

impl SourceKind {
    /// Every kind, in the order defaults are opened.
    pub const ALL: [SourceKind; 3] = [SourceKind::Dsh, SourceKind::ClaudeCode, SourceKind::Codex];

    /// `"dsh"`, `"claude-code"` or `"codex"`.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Dsh => "dsh",
            SourceKind::ClaudeCode => "claude-code",
            SourceKind::Codex => "codex",
        }
    }

    /// The kind of a name given by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the ids of its sessions start with (`""` for DSH, whose ids
    /// stay exactly as DSH writes them).
    pub fn prefix(self) -> &'static str {
        match self {
            SourceKind::Dsh => "",
            SourceKind::ClaudeCode => super::claude_code::PREFIX,
            SourceKind::Codex => super::codex::PREFIX,
        }
    }

    /// The default location, from the environment `env` gives:
    /// `$DSH_HOME/sessions` else `~/.dsh/sessions`;
    /// `$CLAUDE_CONFIG_DIR/projects` else `~/.claude/projects`;
    /// `$CODEX_HOME` else `~/.codex`. (`~` is `$HOME`, else `$USERPROFILE`.)
    pub fn default_location_with(self, env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
        let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = || var("HOME").or_else(|| var("USERPROFILE")).unwrap_or_default();
        match self {
            SourceKind::Dsh => var("DSH_HOME").unwrap_or_else(|| home().join(".dsh")).join("sessions"),
            SourceKind::ClaudeCode => {
                var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home().join(".claude")).join("projects")
            }
            SourceKind::Codex => var("CODEX_HOME").unwrap_or_else(|| home().join(".codex")),
        }
    }

    /// The default location from this process's environment.
    pub fn default_location(self) -> PathBuf {
        self.default_location_with(&|name| std::env::var_os(name))
    }
}

/// One source to open: a kind and its root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceSpec {
    /// The format.
    pub kind: SourceKind,
    /// Its root directory.
    pub root: PathBuf,
}

impl SourceSpec {
    /// A spec of `kind` at `root`.
    pub fn new(kind: SourceKind, root: impl Into<PathBuf>) -> Self {
        SourceSpec { kind, root: root.into() }
    }

    /// Parses `kind=DIR` (`dsh=…`, `claude-code=…`, `codex=…`).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let (kind, dir) = spec.split_once('=').ok_or_else(|| format!("{spec:?} is not KIND=DIR"))?;
        let kind = SourceKind::from_name(kind)
            .ok_or_else(|| format!("unknown source kind {kind:?}: use dsh, claude-code or codex"))?;
        if dir.is_empty() {
            return Err(format!("{spec:?} names no directory"));
        }
        Ok(SourceSpec::new(kind, dir))
    }

    /// The spec of a kind as `{"kind": …, "root": …}` names it.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, String> {
        let kind = value.get("kind").and_then(serde_json::Value::as_str).ok_or("a source needs a string `kind`")?;
        let kind = SourceKind::from_name(kind)
            .ok_or_else(|| format!("unknown source kind {kind:?}: use dsh, claude-code or codex"))?;
        let root = match value.get("root") {
            None | Some(serde_json::Value::Null) => kind.default_location(),
            Some(serde_json::Value::String(r)) if !r.is_empty() => PathBuf::from(r),
            Some(_) => return Err("a source's `root` must be a non-empty string or null".into()),
        };
        Ok(SourceSpec::new(kind, root))
    }
}

/// The default location of every kind that exists as a directory on this
/// machine, in [`SourceKind::ALL`] order.
pub fn default_specs() -> Vec<SourceSpec> {
    SourceKind::ALL.into_iter().map(|k| SourceSpec::new(k, k.default_location())).filter(|s| s.root.is_dir()).collect()
}

/// The specs a front was given as JSON: `null` for [`default_specs`], or
/// an array of `{"kind": "dsh"|"claude-code"|"codex", "root"?: string|null}`
/// (a missing or null root is the kind's default location). The C ABI,
/// Python and Node all take this shape.
pub fn specs_from_json(value: &serde_json::Value) -> Result<Vec<SourceSpec>, String> {
    match value {
        serde_json::Value::Null => Ok(default_specs()),
        serde_json::Value::Array(list) if !list.is_empty() => list.iter().map(SourceSpec::from_json).collect(),
        serde_json::Value::Array(_) => Err("the list of sources is empty".into()),
        _ => Err("sources must be null (every default location) or an array of {kind, root}".into()),
    }
}

/// How each source of `multi` fared in its last listing, as the SDKs give
/// it: `[{"name", "sessions": n}]` or `[{"name", "error": why}]`.
pub fn report_json(multi: &MultiQuery) -> serde_json::Value {
    let report = multi.last_report().into_iter().map(|s| match s.outcome {
        Ok(n) => serde_json::json!({"name": s.name, "sessions": n}),
        Err(e) => serde_json::json!({"name": s.name, "error": e}),
    });
    serde_json::Value::Array(report.collect())
}

/// A surface as JSON bytes, for an SDK's `read_surface`: DSH events as the
/// source gave them, a conversation as its pre-projected snapshot.
pub fn surface_json_bytes(surface: &SurfaceData) -> Vec<u8> {
    let text = match surface {
        SurfaceData::Json(bytes) => return (**bytes).as_ref().to_vec(),
        SurfaceData::Value(value) => crate::json::stringify(value),
        SurfaceData::Conversation(c) => crate::json::stringify(&c.to_snapshot_json()),
    };
    text.into_bytes()
}

/// A source that could not be opened: listing it reports why (so a view
/// over several sources reports it and lists the others), reading fails.
#[derive(Clone, Debug)]
struct Unavailable(String);

impl BlockingSessionQuery for Unavailable {
    fn list_sessions(&self) -> Result<Vec<SessionHeader>, HostError> {
        Err(HostError::new(self.0.clone()))
    }
    fn read_title(&self, _: &str) -> Result<Option<String>, HostError> {
        Err(HostError::new(self.0.clone()))
    }
    fn read_surface(&self, _: &str) -> Result<SurfaceData, HostError> {
        Err(HostError::new(self.0.clone()))
    }
}

/// Opens one source as a session query. An error names the root.
pub fn open_source(spec: &SourceSpec) -> std::io::Result<Arc<dyn SessionQuery>> {
    Ok(match spec.kind {
        SourceKind::Dsh => Arc::new(DshStore::open(&spec.root)?),
        SourceKind::ClaudeCode => ClaudeCodeSource::open(&spec.root)?.into_query(),
        SourceKind::Codex => CodexSource::open(&spec.root)?.into_query(),
    })
}

/// One view over the sources of `specs`, in order, named by kind. A root
/// that cannot be opened becomes a source whose listing fails with the
/// reason (reported by [`MultiQuery::last_report`], never fatal to the
/// others). Two sources of one kind are refused: reads are routed by the
/// id's prefix, so the second could never be read.
pub fn open_sources(specs: &[SourceSpec]) -> Result<MultiQuery, String> {
    let mut multi = MultiQuery::new();
    let mut seen = Vec::new();
    for spec in specs {
        if seen.contains(&spec.kind) {
            return Err(format!("two {} sources: give at most one root per kind", spec.kind.name()));
        }
        seen.push(spec.kind);
        let query: Arc<dyn SessionQuery> = match open_source(spec) {
            Ok(q) => q,
            Err(e) => Arc::new(Blocking::new(Unavailable(e.to_string()))),
        };
        multi = multi.with_source(spec.kind.name(), spec.kind.prefix(), query);
    }
    Ok(multi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_environment() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        };
        let plain = env(&[("HOME", "/h")]);
        assert_eq!(SourceKind::Dsh.default_location_with(&plain), PathBuf::from("/h/.dsh/sessions"));
        assert_eq!(SourceKind::ClaudeCode.default_location_with(&plain), PathBuf::from("/h/.claude/projects"));
        assert_eq!(SourceKind::Codex.default_location_with(&plain), PathBuf::from("/h/.codex"));
        let set = env(&[("HOME", "/h"), ("DSH_HOME", "/d"), ("CLAUDE_CONFIG_DIR", "/c"), ("CODEX_HOME", "/x")]);
        assert_eq!(SourceKind::Dsh.default_location_with(&set), PathBuf::from("/d/sessions"));
        assert_eq!(SourceKind::ClaudeCode.default_location_with(&set), PathBuf::from("/c/projects"));
        assert_eq!(SourceKind::Codex.default_location_with(&set), PathBuf::from("/x"));
    }

    #[test]
    fn specs_parse() {
        assert_eq!(SourceSpec::parse("codex=/x").unwrap(), SourceSpec::new(SourceKind::Codex, "/x"));
        assert!(SourceSpec::parse("gemini=/x").unwrap_err().contains("unknown source kind"));
        assert!(SourceSpec::parse("codex").is_err());
        assert!(SourceSpec::parse("codex=").is_err());
        let two = [SourceSpec::new(SourceKind::Codex, "/a"), SourceSpec::new(SourceKind::Codex, "/b")];
        assert!(open_sources(&two).unwrap_err().contains("two codex sources"));
        let specs = specs_from_json(&serde_json::json!([{"kind": "codex", "root": "/x"}, {"kind": "dsh"}])).unwrap();
        assert_eq!(specs[0], SourceSpec::new(SourceKind::Codex, "/x"));
        assert_eq!(specs[1], SourceSpec::new(SourceKind::Dsh, SourceKind::Dsh.default_location()));
        for bad in [
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!([{"kind": "x"}]),
            serde_json::json!([{"kind": "dsh", "root": 5}]),
        ] {
            assert!(specs_from_json(&bad).is_err(), "{bad}");
        }
    }
}
