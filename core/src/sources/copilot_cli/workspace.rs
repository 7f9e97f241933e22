//! The session name in a Copilot CLI session directory's `workspace.yaml`.
//!
//! Only one thing is read: the top-level `name:` key (the name Copilot CLI
//! generates for a session, or the one the user gives it), when its value is
//! a scalar on the same line: plain (`name: Fix the build`), single-quoted
//! (`'it''s'`) or double-quoted (`"a \"b\""`, with YAML's usual escapes).
//! Anything else is not read: indented (nested) keys, block scalars
//! (`|`, `>`), flow collections, anchors, aliases and tags, a value
//! continued on the next line, and every other key. A file longer than
//! [`MAX_WORKSPACE_BYTES`] is read up to there; a file that cannot be
//! opened or read, or holds no such name, gives none.

use std::io::Read;

/// The most of a `workspace.yaml` that is read, in bytes.
pub const MAX_WORKSPACE_BYTES: u64 = 64 << 10;

/// The top-level `name:` scalar of a `workspace.yaml` read from `file`
/// (at most [`MAX_WORKSPACE_BYTES`]), whitespace kept as written; `None`
/// when there is none, it is empty, or it is not a one-line scalar.
pub fn read_name(file: impl Read) -> Option<String> {
    let mut bytes = Vec::new();
    file.take(MAX_WORKSPACE_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // The last top-level `name:` wins, as YAML readers that allow a
    // repeated key take it (one whose value is not read here gives none).
    text.lines().rev().find_map(|line| line.strip_prefix("name:")).and_then(scalar)
}

/// The scalar a one-line value is (`None`: empty, or not a scalar read here).
fn scalar(value: &str) -> Option<String> {
    let value = value.trim_start_matches([' ', '\t']);
    let text = match value.chars().next()? {
        '\'' => single_quoted(&value[1..])?,
        '"' => double_quoted(&value[1..])?,
        '|' | '>' | '[' | '{' | '&' | '*' | '!' | '#' | '%' | '@' | '`' => return None,
        _ => plain(value),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// A plain scalar: up to a comment (` #`), trailing blanks dropped.
fn plain(value: &str) -> String {
    let end = value.find(" #").or_else(|| value.find("\t#")).unwrap_or(value.len());
    value[..end].trim_end_matches([' ', '\t', '\r']).to_owned()
}

/// The body of a single-quoted scalar after its opening quote (`''` is one
/// quote); `None` when it is not closed on the line.
fn single_quoted(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                return Some(out);
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// The body of a double-quoted scalar after its opening quote, its escapes
/// applied; `None` when it is not closed on the line or an escape is not
/// YAML's.
fn double_quoted(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => {
                let e = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::Chars<'_>| {
                    let digits: String = chars.by_ref().take(n).collect();
                    (digits.len() == n).then(|| u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32))?
                };
                out.push(match e {
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' | '\t' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    ' ' => ' ',
                    '"' => '"',
                    '/' => '/',
                    '\\' => '\\',
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' => hex(2, &mut chars)?,
                    'u' => hex(4, &mut chars)?,
                    'U' => hex(8, &mut chars)?,
                    _ => return None,
                });
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(yaml: &str) -> Option<String> {
        read_name(yaml.as_bytes())
    }

    #[test]
    fn the_top_level_name_scalar_is_read_plain_or_quoted() {
        assert_eq!(name("id: x\nname: Fix the build  # generated\ncwd: /w\n").as_deref(), Some("Fix the build"));
        assert_eq!(name("name: 'it''s # not a comment'\n").as_deref(), Some("it's # not a comment"));
        assert_eq!(name("name: \"tab\\there \\\"q\\\" \\u00e9\"\r\n").as_deref(), Some("tab\there \"q\" é"));
        assert_eq!(name("\u{feff}name: a\nname: b\n").as_deref(), Some("b"));
    }

    #[test]
    fn what_is_not_a_one_line_top_level_scalar_is_no_name() {
        for yaml in [
            "",
            "summary: s\n",
            "name:\n",
            "name:   \n",
            "name: ''\n",
            "  name: nested\n",
            "names: other key\n",
            "name: |\n  block\n",
            "name: >\n  folded\n",
            "name: [a, b]\n",
            "name: &a anchored\n",
            "name: 'unclosed\n",
            "name: \"bad \\q escape\"\n",
            "name: read\nname: |\n  the last one is not a one-line scalar\n",
        ] {
            assert_eq!(name(yaml), None, "{yaml:?}");
        }
    }

    #[test]
    fn at_most_the_first_bytes_are_read() {
        let far = format!("{}\nname: far\n", "#".repeat(MAX_WORKSPACE_BYTES as usize));
        assert_eq!(name(&far), None);
    }
}
