//! A session's project key: the repository's remote URL where its cwd is
//! in a git repository that has one, else the path.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The project key of sessions in `cwd`: the URL of the remote `origin`
/// (else of the first remote) of the git repository holding `cwd`, read
/// from its `.git/config` (no git command is run), with any password in it
/// left out; else the repository's top directory; else `cwd` itself. A
/// session without a cwd has the empty key.
pub fn project_key(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else { return String::new() };
    match repository_of(Path::new(cwd)) {
        Some(top) => remote_url(&top).unwrap_or_else(|| top.to_string_lossy().into_owned()),
        None => cwd.to_owned(),
    }
}

/// Project keys remembered by cwd (a push asks once per directory).
#[derive(Debug, Default)]
pub struct ProjectKeys {
    known: HashMap<Option<String>, String>,
}

impl ProjectKeys {
    /// The [`project_key`] of `cwd`, worked out once.
    pub fn of(&mut self, cwd: Option<&str>) -> String {
        self.known.entry(cwd.map(str::to_owned)).or_insert_with(|| project_key(cwd)).clone()
    }
}

/// The top directory of the git repository holding `dir` (the first
/// directory upwards with a `.git`).
fn repository_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// The git directory of a repository's top: `.git`, or where a `.git`
/// file (a worktree, a submodule) points.
fn git_dir(top: &Path) -> Option<PathBuf> {
    let dot = top.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    let text = std::fs::read_to_string(&dot).ok()?;
    let to = text.trim().strip_prefix("gitdir:")?.trim();
    let to = top.join(to);
    // A worktree's own directory has a `commondir` naming the main one.
    match std::fs::read_to_string(to.join("commondir")) {
        Ok(common) => Some(to.join(common.trim())),
        Err(_) => Some(to),
    }
}

/// The remote's URL in a repository's config: `origin`'s, else the first.
fn remote_url(top: &Path) -> Option<String> {
    let config = std::fs::read_to_string(git_dir(top)?.join("config")).ok()?;
    let mut remote: Option<String> = None;
    let mut urls: Vec<(String, String)> = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            remote = line.strip_prefix("[remote \"").and_then(|r| r.strip_suffix("\"]")).map(str::to_owned);
        } else if let (Some(name), Some((key, value))) = (&remote, line.split_once('=')) {
            if key.trim() == "url" {
                urls.push((name.clone(), value.trim().to_owned()));
            }
        }
    }
    let (_, url) = urls.iter().find(|(n, _)| n == "origin").or(urls.first())?;
    Some(without_password(url))
}

/// A URL with the password of its user information left out.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            let slash = if rest.contains('/') { "/" } else { "" };
            format!("{scheme}://{user}@{host}{slash}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_named_by_its_remote_and_a_plain_directory_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(
            repo.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://example.invalid/up.git\n\
             [remote \"origin\"]\n\turl = https://me:secret@example.invalid/team/app.git\n",
        )
        .unwrap();
        let deep = repo.join("src/deep");
        assert_eq!(project_key(deep.to_str()), "https://me@example.invalid/team/app.git");
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(project_key(plain.to_str()), plain.to_str().unwrap());
        assert_eq!(project_key(None), "");
        std::fs::write(repo.join(".git/config"), "[core]\n").unwrap();
        assert_eq!(project_key(deep.to_str()), repo.to_str().unwrap(), "no remote: the repository's top");
    }
}
