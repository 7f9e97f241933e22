//! `redactSecrets`: high-confidence credential formats, found in one pass by
//! one compiled regular expression (the `regex` crate: linear in the text)
//! and replaced by `[redacted <kind>]`.
//!
//! Every pattern starts with a fixed prefix that ordinary prose and code do
//! not contain at a word start (`AKIA`, `ghp_`, `sk-ant-`, `xoxb-`, `AIza`,
//! `-----BEGIN … PRIVATE KEY-----`, `eyJ…​.eyJ`), followed by a body of the
//! format's alphabet and length; hex digests, UUIDs and base64 blobs carry
//! no such prefix and are never matched (see the corpus in
//! `core/tests/harden.rs`).

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

/// A credential format: its kind (as written in the replacement), the
/// prefixes that tell a match of it from the others (first match wins, in
/// table order), and its pattern.
struct Format {
    kind: &'static str,
    prefixes: &'static [&'static str],
    pattern: &'static str,
}

/// `(?-u:\b)`: an ASCII word boundary, which the regex crate's DFAs handle
/// on any text (a Unicode one makes them give up on non-ASCII input).
macro_rules! b {
    () => {
        r"(?-u:\b)"
    };
}

const FORMATS: &[Format] = &[
    Format {
        kind: "aws-access-key-id",
        prefixes: &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        pattern: concat!(b!(), r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}", b!()),
    },
    Format {
        kind: "github-token",
        prefixes: &["gh", "github_pat_"],
        pattern: concat!(
            b!(),
            r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})",
            b!()
        ),
    },
    Format {
        kind: "anthropic-api-key",
        prefixes: &["sk-ant-"],
        pattern: concat!(b!(), r"sk-ant-[a-z]{2,8}[0-9]{0,4}-[A-Za-z0-9_\-]{32,}"),
    },
    Format {
        kind: "openai-api-key",
        prefixes: &["sk-"],
        pattern: concat!(b!(), r"(?:sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|sk-[A-Za-z0-9]{48}", b!(), ")"),
    },
    Format {
        kind: "slack-token",
        prefixes: &["xox"],
        pattern: concat!(b!(), r"xox[abprs]-[0-9]{6,}-[A-Za-z0-9\-]{8,}"),
    },
    Format {
        kind: "slack-webhook",
        prefixes: &["https://hooks.slack.com/"],
        pattern: r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}",
    },
    Format {
        kind: "google-api-key",
        prefixes: &["AIza"],
        // 35 characters, the last one ending the token (a word character
        // before a boundary, or a `-` before no word character).
        pattern: concat!(b!(), r"AIza[0-9A-Za-z_\-]{34}(?:[0-9A-Za-z_]", b!(), r"|-(?-u:\B))"),
    },
    Format {
        kind: "stripe-key",
        prefixes: &["sk_", "rk_"],
        pattern: concat!(b!(), r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}", b!()),
    },
    Format {
        kind: "private-key",
        prefixes: &["-----"],
        // The armour line, then the body: base64, white space, `\n`/`\r`
        // escapes (a key quoted inside JSON or code), the two header lines
        // of legacy encrypted keys; then the end line when it is there. An
        // unterminated block is redacted up to the first character that
        // cannot be part of a key.
        pattern: concat!(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY-----",
            r"(?:(?:Proc-Type|DEK-Info):[ A-Za-z0-9,\-]*|[A-Za-z0-9+/=\s]|\\[nr])*",
            r"(?:-----END[ A-Z0-9]*PRIVATE KEY-----)?"
        ),
    },
    Format {
        kind: "jwt",
        prefixes: &["eyJ"],
        pattern: concat!(b!(), r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*"),
    },
    Format { kind: "gitlab-token", prefixes: &["glpat-"], pattern: concat!(b!(), r"glpat-[A-Za-z0-9_\-]{20,}") },
    Format { kind: "npm-token", prefixes: &["npm_"], pattern: concat!(b!(), r"npm_[A-Za-z0-9]{36}", b!()) },
];

/// Every format as one alternation, in table order (leftmost-first).
static SECRETS: LazyLock<Regex> = LazyLock::new(|| {
    let alternation: Vec<String> = FORMATS.iter().map(|f| format!("(?:{})", f.pattern)).collect();
    // The patterns are constants, checked by the tests below.
    Regex::new(&alternation.join("|")).unwrap_or_else(|e| panic!("invalid secret pattern: {e}"))
});

/// Fixed strings one of which every credential's JSON string literal holds,
/// however its JSON writer escaped it, unless it spells letters as `\u`
/// escapes (checked apart: backslashes are common, and a needle with one
/// slows the search on every `\"`). A literal without any of them holds no
/// credential and is not decoded ([`may_hold_secret`]).
const NEEDLES: &[&str] = &[
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "A3T",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "_pat_",
    "sk-",
    "xox",
    ".slack.com",
    "AIza",
    "sk_",
    "rk_",
    "PRIVATE KEY",
    "eyJ",
    "glpat-",
    "npm_",
];

/// The needles, searched for directly (a `regex` search costs a cache
/// lookup per call, which counts for the thousands of short texts of a
/// session).
static PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(NEEDLES)
        .unwrap_or_else(|e| panic!("invalid needle: {e}"))
});
static UNICODE_ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));

/// Whether the JSON string literal `literal` (or a raw text) may hold a
/// credential once decoded: `false` means it certainly does not. Cheaper
/// than decoding a literal with escapes, which most texts of a session are.
pub fn may_hold_secret(literal: &[u8]) -> bool {
    PREFILTER.is_match(literal) || UNICODE_ESCAPE.find(literal).is_some()
}

/// The kinds of credential [`redact`] recognises, as written in its
/// `[redacted <kind>]` replacements.
pub fn secret_kinds() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|f| f.kind)
}

fn kind_of(secret: &str) -> &'static str {
    FORMATS.iter().find(|f| f.prefixes.iter().any(|p| secret.starts_with(p))).map_or("secret", |f| f.kind)
}

/// `text` with every credential replaced by `[redacted <kind>]`, and the
/// number replaced. Borrows `text` when there is none.
pub fn redact(text: &str) -> (Cow<'_, str>, usize) {
    let mut found = SECRETS.find_iter(text).peekable();
    if found.peek().is_none() {
        return (Cow::Borrowed(text), 0);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut count = 0;
    for m in found {
        out.push_str(&text[copied..m.start()]);
        out.push_str("[redacted ");
        out.push_str(kind_of(m.as_str()));
        out.push(']');
        copied = m.end();
        count += 1;
    }
    out.push_str(&text[copied..]);
    (Cow::Owned(out), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles_alone_and_its_prefixes_name_it() {
        for f in FORMATS {
            Regex::new(f.pattern).unwrap();
            for p in f.prefixes {
                // No earlier format claims this format's prefix.
                let earlier = FORMATS.iter().take_while(|g| g.kind != f.kind);
                assert!(!earlier.flat_map(|g| g.prefixes).any(|q| p.starts_with(q)), "{p}");
            }
        }
        assert_eq!(redact("none here").1, 0);
        assert!(!may_hold_secret(b"\"plain \\\"quoted\\\" text\\n\""));
        assert!(may_hold_secret(b"\"\\u0041KIA\""));
    }
}
