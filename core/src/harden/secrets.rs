//! `redactSecrets`: credentials found in two linear passes (the `regex`
//! crate: linear in the text) and replaced by `[redacted <kind>]`.
//!
//! 1. **By structure** (the table `FORMATS`): formats with a fixed prefix that
//!    ordinary prose and code do not hold at a word start (`AKIA`, `ghp_`,
//!    `sk-ant-`, `SG.`, `hf_`, `pypi-AgEI…`, `-----BEGIN … PRIVATE KEY…`,
//!    `eyJ…​.eyJ`), followed by a body of the format's alphabet and length;
//!    hex digests, UUIDs and base64 blobs carry no such prefix and are
//!    never matched.
//! 2. **By context** (the table `CONTEXTS`), on what the first pass left: a value
//!    after a key that names a secret (`password=`, `"client_secret": `,
//!    `X-Api-Key:`), an `Authorization:` header, the password of a URL
//!    (`postgres://user:…@host`) or of `curl -u`, an Azure account key, the
//!    40-character AWS secret key beside its (already redacted) key id.
//!    Only the value is replaced (`password=[redacted password]`), and only
//!    when it looks like one: placeholders (`$TOKEN`, `<your key>`,
//!    `changeme`, `****`), code (`getpass()`, `self.password`) and, for
//!    keys that are not passwords, values without both letters and digits
//!    are left alone.
//!
//! The corpus of `core/tests/harden.rs` (true positives per family,
//! negatives, the repository's own sources and documents) and
//! `core/tests/redaction_corpus.rs` check both.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use regex_automata::{meta, Anchored, Input};

/// A credential format: its kind (as written in the replacement), its
/// pattern (by context: with one capture group, the value replaced), and
/// for a format by context the test its value must pass.
struct Format {
    kind: &'static str,
    pattern: &'static str,
    check: fn(&Found<'_>) -> bool,
}

/// What a pattern by context found: the value, and the character after it.
struct Found<'a> {
    value: &'a str,
    after: Option<char>,
}

/// `(?-u:\b)`: an ASCII word boundary, which the regex crate's DFAs handle
/// on any text (a Unicode one makes them give up on non-ASCII input).
macro_rules! b {
    () => {
        r"(?-u:\b)"
    };
}

/// Where a credential by structure starts: at a word start, or right
/// after a `\n`, `\r` or `\t` escape (a document quoted in a text), which
/// the match then holds and [`Pass::redact`] gives back.
macro_rules! start {
    () => {
        r"(?:\\[nrt]|(?-u:\b))"
    };
}

/// The end of a token of `[A-Za-z0-9_-]`: a word character before a
/// boundary, or a `-` before no word character.
macro_rules! tok_end {
    () => {
        r"(?:[0-9A-Za-z_](?-u:\b)|-(?-u:\B))"
    };
}

fn any(_: &Found<'_>) -> bool {
    true
}

/// A format by structure: any match is a credential.
const fn shaped(kind: &'static str, pattern: &'static str) -> Format {
    Format { kind, pattern, check: any }
}

/// Formats by structure, in priority order (leftmost-first).
const FORMATS: &[Format] = &[
    shaped("aws-access-key-id", concat!(start!(), r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}", b!())),
    shaped(
        "github-token",
        concat!(
            start!(),
            r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})",
            b!()
        ),
    ),
    shaped("anthropic-api-key", concat!(start!(), r"sk-ant-[a-z]{2,8}[0-9]{0,4}-[A-Za-z0-9_\-]{32,}")),
    shaped("openrouter-api-key", concat!(start!(), r"sk-or-v1-[a-f0-9]{64}", b!())),
    shaped(
        "openai-api-key",
        concat!(start!(), r"(?:sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}|sk-[A-Za-z0-9]{48}", b!(), ")"),
    ),
    shaped("deepseek-api-key", concat!(start!(), r"sk-[a-f0-9]{32}", b!())),
    shaped("slack-token", concat!(start!(), r"xox[abprs]-[0-9]{6,}-[A-Za-z0-9\-]{8,}")),
    shaped("slack-webhook", r"https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}"),
    shaped("google-api-key", concat!(start!(), r"AIza[0-9A-Za-z_\-]{34}", tok_end!())),
    shaped("google-oauth-secret", concat!(start!(), r"GOCSPX-[0-9A-Za-z_\-]{27}", tok_end!())),
    shaped(
        "stripe-key",
        concat!(start!(), r"(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{20,}|whsec_[0-9A-Za-z]{32,})", b!()),
    ),
    // The armour line (PEM, OpenSSH, PGP), then the body: base64, white
    // space, `\n`/`\r` escapes (a key quoted inside JSON or code), the
    // header lines of legacy encrypted PEM keys and of PGP armour; then
    // the end line when it is there. An unterminated block is redacted
    // up to the first character that cannot be part of a key.
    shaped(
        "private-key",
        concat!(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
            r"(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\\\r\n]*|[A-Za-z0-9+/=\s]|\\[nr])*",
            r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?"
        ),
    ),
    shaped("jwt", concat!(start!(), r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*")),
    shaped("gitlab-token", concat!(start!(), r"glpat-[A-Za-z0-9_\-]{20,}")),
    shaped("npm-token", concat!(start!(), r"npm_[A-Za-z0-9]{36}", b!())),
    shaped("pypi-token", concat!(start!(), r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}")),
    shaped("sendgrid-api-key", concat!(start!(), r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{42}", tok_end!())),
    shaped("twilio-api-key", concat!(start!(), r"SK[0-9a-fA-F]{32}", b!())),
    shaped("huggingface-token", concat!(start!(), r"(?:hf_[A-Za-z0-9]{34}|api_org_[A-Za-z0-9]{34})", b!())),
    shaped("groq-api-key", concat!(start!(), r"gsk_[A-Za-z0-9]{52}", b!())),
    shaped("digitalocean-token", concat!(start!(), r"do[opr]_v1_[a-f0-9]{64}", b!())),
    shaped("shopify-token", concat!(start!(), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", b!())),
    shaped("docker-token", concat!(start!(), r"dckr_pat_[A-Za-z0-9_\-]{26}", tok_end!())),
    shaped("vault-token", concat!(start!(), r"hv[sb]\.[A-Za-z0-9_\-]{90,}")),
    shaped("databricks-token", concat!(start!(), r"dapi[a-f0-9]{32}(?:-[0-9]+)?", b!())),
    shaped("linear-api-key", concat!(start!(), r"lin_api_[A-Za-z0-9]{40}", b!())),
    shaped("postman-api-key", concat!(start!(), r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", b!())),
    shaped("age-secret-key", concat!(start!(), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", b!())),
    shaped("atlassian-token", concat!(start!(), r"ATATT3[A-Za-z0-9_\-=]{150,}")),
    shaped("rubygems-token", concat!(start!(), r"rubygems_[a-f0-9]{48}", b!())),
    shaped("newrelic-key", concat!(start!(), r"NRAK-[A-Z0-9]{27}", b!())),
    shaped("mailgun-key", concat!(start!(), r"key-[a-f0-9]{32}", b!())),
    // Alone, or in a bot URL (`https://api.telegram.org/bot<token>/`).
    shaped("telegram-bot-token", concat!(r"(?:", start!(), r"|bot)[0-9]{8,10}:AA[A-Za-z0-9_\-]{32}", tok_end!())),
];

/// A key that names a password (its last word), in any case: `password`,
/// `DB_PASSWD`, `passphrase`, `pwd`.
macro_rules! password_key {
    () => {
        r"(?i:pass(?:word|wd|phrase)|pwd)"
    };
}

/// The assignment after a key: its closing quote, `=`, `:`, `:=` or `=>`,
/// then the value's opening quote (a JSON string's may be escaped).
macro_rules! assign {
    () => {
        r#"(?:\\?["'])?[ \t]*(?::=|=>|[:=])[ \t]*(?:\\?["'])?"#
    };
}

/// A value: anything up to white space, a quote, a separator or a bracket.
macro_rules! value {
    () => {
        r#"([^\s"'`,;&<>(){}\[\]\\]{1,512})"#
    };
}

/// Formats by context, on what [`FORMATS`] left, in priority order.
const CONTEXTS: &[Format] = &[
    Format {
        kind: "aws-secret-access-key",
        // After its key id (already redacted), or under its own key.
        pattern: concat!(
            r"(?:\[redacted aws-access-key-id\](?:[\s,;:|=/]|\\[nrt]|\\?[\x22'])+|",
            r"(?i:aws[ _\-.]?secret(?:[ _\-.]?access)?(?:[ _\-.]?key)?|secret[ _\-.]?access[ _\-.]?key)",
            assign!(),
            r")([A-Za-z0-9/+]{40})"
        ),
        check: base64_token_end,
    },
    Format {
        kind: "azure-storage-key",
        pattern: r"(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})",
        check: any,
    },
    Format { kind: "azure-sas-signature", pattern: r"[?&]sig=([A-Za-z0-9%+/]{30,}={0,2})", check: any },
    Format {
        kind: "authorization",
        // `Authorization: Bearer …`, `Basic …`, `token …`, or the value alone.
        pattern: concat!(
            r"(?i:authorization)",
            assign!(),
            r"(?:(?i:bearer|basic|token|bot|digest)[ \t]+)?([A-Za-z0-9._~+/\-]{8,}=*)"
        ),
        check: opaque_token,
    },
    Format {
        kind: "password",
        // The password of a URL: `scheme://user:password@host` (the user
        // may be empty: `redis://:password@host`).
        pattern: concat!(
            b!(),
            r#"[A-Za-z][A-Za-z0-9+.\-]{1,30}:(?:\\?/){2}[^\s:/?#@\[\]"'<>\\]{0,128}:([^\s/?#@\[\]"'<>\\]{1,256})@[A-Za-z0-9\[]"#
        ),
        check: url_password,
    },
    Format {
        kind: "password",
        // `curl -u user:password`, `--user user:password`.
        pattern: r#"(?:\s|^)(?:-u|--user)[ \t=]+\\?["']?[^\s:"'\\]{1,128}:([^\s"'\\]{1,256})"#,
        check: password_value,
    },
    Format { kind: "password", pattern: concat!(password_key!(), assign!(), value!()), check: password_value },
    Format {
        kind: "secret",
        // A key whose last word names a secret: `client_secret`, `apiKey`,
        // `X-Api-Key`, `access_token`, `auth-token`, `private_key`.
        pattern: concat!(
            r"(?i:secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key|signing[_\-]?key)",
            assign!(),
            value!()
        ),
        check: secret_value,
    },
];

/// After an AWS secret key: no more of its alphabet.
fn base64_token_end(f: &Found<'_>) -> bool {
    !f.after.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '+' | '='))
}

/// Whether `value` stands for a credential rather than being one:
/// `$TOKEN`, `${TOKEN}`, `<your key>`, `{{ secret }}`, `%s`, `****`,
/// `xxxxxxxx`, `changeme`, `your_password`, `example`, `…`.
fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let first = value.chars().next().unwrap_or(' ');
    matches!(first, '$' | '%' | '<' | '{' | '*' | '[' | '#' | '@' | '&' | '.' | ':' | '/')
        || value.chars().all(|c| c == first || c == '.')
        || ["xxx", "***", "...", "\u{2026}", "your", "example", "placeholder", "changeme", "dummy", "redacted"]
            .iter()
            .any(|w| lower.contains(w))
        || [
            "password",
            "passwd",
            "secret",
            "token",
            "none",
            "null",
            "nil",
            "true",
            "false",
            "undefined",
            "required",
            "optional",
            "string",
            "str",
            "bytes",
            "empty",
            "test",
            "foo",
            "bar",
            "hidden",
            "mask",
            "env",
            "value",
        ]
        .contains(&lower.as_str())
}

/// Code rather than a value: a call, an index, a template after it, or a
/// dotted name (`self.password`, `config.db.token`).
fn code(f: &Found<'_>) -> bool {
    if matches!(f.after, Some('(' | '[' | '{' | '<')) {
        return true;
    }
    let mut parts = f.value.split('.');
    let ident = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    f.value.contains('.') && parts.all(ident)
}

fn has_digit(v: &str) -> bool {
    v.bytes().any(|b| b.is_ascii_digit())
}

/// A password after a password key or in `curl -u`: at least 6
/// characters, not a placeholder nor code, with a digit or a symbol, or
/// long and of mixed case.
fn password_value(f: &Found<'_>) -> bool {
    let v = f.value;
    let symbol = v.chars().any(|c| !c.is_ascii_alphanumeric() && !matches!(c, '_' | '-' | '.'));
    let mixed = v.bytes().any(|b| b.is_ascii_uppercase()) && v.bytes().any(|b| b.is_ascii_lowercase());
    v.chars().count() >= 6 && !placeholder(v) && !code(f) && (has_digit(v) || symbol || (v.len() >= 12 && mixed))
}

/// The password of a URL: not a placeholder, nor a port (up to 5 digits).
fn url_password(f: &Found<'_>) -> bool {
    let v = f.value;
    let port = v.len() <= 5 && v.bytes().all(|b| b.is_ascii_digit());
    !port && !placeholder(v)
}

/// A value under a key naming a secret: at least 16 characters with both
/// letters and digits, not a placeholder nor code.
fn secret_value(f: &Found<'_>) -> bool {
    let v = f.value;
    v.len() >= 16 && has_digit(v) && v.bytes().any(|b| b.is_ascii_alphabetic()) && !placeholder(v) && !code(f)
}

/// An opaque token after `Authorization:`: at least 8 characters with a
/// digit (or 20 of mixed case), not a placeholder.
fn opaque_token(f: &Found<'_>) -> bool {
    let v = f.value;
    let mixed = v.bytes().any(|b| b.is_ascii_uppercase()) && v.bytes().any(|b| b.is_ascii_lowercase());
    !placeholder(v) && (has_digit(v) || (v.len() >= 20 && mixed))
}

/// One pass: its formats as one alternation, whose matches are found
/// without their groups (the regex crate's DFAs; asking the alternation
/// for its groups ran its slowest engine over every match, with a slot for
/// each of the many groups); then, at each match, the format that took
/// it is the first whose own pattern matches there (leftmost-first: the
/// alternation prefers the first alternative that can match where the
/// match starts, which ends where it ends), and a format by context gives
/// its value's group by its own pattern.
struct Pass {
    /// The alternation, its lazy DFA given [`LAZY_DFA_CACHE`].
    regex: Regex,
    formats: &'static [Format],
    /// Each format's pattern alone (its value is group 1).
    alone: Vec<meta::Regex>,
    /// Whether each format has a value's group.
    valued: Vec<bool>,
}

/// The most cache a pass's lazy DFA holds, per thread searching. The
/// patterns' bounded repeats of large classes (a value of up to 512
/// characters) make many states: with the default 2 MiB the DFA cleared
/// its cache so often that it gave up, and the search ran the regex
/// crate's slowest engine over the whole text (a sixth of the CPU of
/// indexing 10,000 sessions hardened); 16 MiB measured as fast as 64.
const LAZY_DFA_CACHE: usize = 16 << 20;

impl Pass {
    fn new(formats: &'static [Format]) -> Pass {
        // The patterns are constants, checked by the tests below.
        fn invalid(e: &dyn std::fmt::Display) -> ! {
            panic!("invalid secret pattern: {e}")
        }
        let alone: Vec<meta::Regex> =
            formats.iter().map(|f| meta::Regex::new(f.pattern).unwrap_or_else(|e| invalid(&e))).collect();
        let valued = alone.iter().map(|r| r.captures_len() > 1).collect();
        let alternation: Vec<String> = formats.iter().map(|f| format!("(?:{})", f.pattern)).collect();
        let regex = regex::RegexBuilder::new(&alternation.join("|"))
            .dfa_size_limit(LAZY_DFA_CACHE)
            .build()
            .unwrap_or_else(|e| invalid(&e));
        Pass { regex, formats, alone, valued }
    }

    /// The format that took the alternation's match `m` of `text`, and the
    /// span its credential is (the value's group, else the match).
    fn took(&self, text: &str, m: regex::Match<'_>) -> Option<(usize, std::ops::Range<usize>)> {
        // Anchored at the match's start, over its span: look-around still
        // sees the text on either side.
        let input = || Input::new(text).span(m.start()..m.end()).anchored(Anchored::Yes);
        let at = self.alone.iter().position(|r| r.is_match(input()))?;
        if !self.valued[at] {
            return Some((at, m.range()));
        }
        let mut caps = self.alone[at].create_captures();
        self.alone[at].captures(input(), &mut caps);
        Some((at, caps.get_group(1)?.range()))
    }

    /// `text` with every credential this pass finds replaced, and their number.
    fn redact<'t>(&self, text: Cow<'t, str>) -> (Cow<'t, str>, usize) {
        let mut out = String::new();
        let mut copied = 0;
        let mut count = 0;
        for m in self.regex.find_iter(&text) {
            let Some((at, span)) = self.took(&text, m) else { continue };
            let format = &self.formats[at];
            // An escape before the credential stays.
            let escape = if !self.valued[at] && text[span.clone()].starts_with('\\') { 2 } else { 0 };
            let span = span.start + escape..span.end;
            let found = Found { value: &text[span.clone()], after: text[span.end..].chars().next() };
            if !(format.check)(&found) {
                continue;
            }
            if count == 0 {
                out.reserve(text.len());
            }
            out.push_str(&text[copied..span.start]);
            out.push_str("[redacted ");
            out.push_str(format.kind);
            out.push(']');
            copied = span.end;
            count += 1;
        }
        if count == 0 {
            return (text, 0);
        }
        out.push_str(&text[copied..]);
        (Cow::Owned(out), count)
    }
}

static STRUCTURE: LazyLock<Pass> = LazyLock::new(|| Pass::new(FORMATS));
static CONTEXT: LazyLock<Pass> = LazyLock::new(|| Pass::new(CONTEXTS));

/// Fixed strings one of which every credential's JSON string literal
/// holds, however its JSON writer escaped it, unless it spells letters as
/// `\u` escapes (checked apart: backslashes are common, and a needle with
/// one slows the search on every `\"`). A literal without any of them
/// holds no credential and is not decoded ([`may_hold_secret`]). Those of
/// the formats by structure, in their case:
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
    "GOCSPX-",
    "sk_",
    "rk_",
    "whsec_",
    "PRIVATE KEY",
    "eyJ",
    "glpat-",
    "npm_",
    "pypi-",
    "SG.",
    "SK",
    "hf_",
    "api_org_",
    "gsk_",
    "_v1_",
    "shp",
    "dckr_",
    "hvs.",
    "hvb.",
    "dapi",
    "lin_api_",
    "PMAK-",
    "AGE-SECRET",
    "ATATT3",
    "rubygems_",
    "NRAK-",
    "key-",
    ":AA",
];

/// Those of the formats by context, in any case (a text without any is
/// not given to the second pass; the last one is the first pass's mark of
/// an AWS key id).
const CONTEXT_NEEDLES: &[&str] = &[
    "passw",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
    "accountkey",
    "private_key",
    "private-key",
    "privatekey",
    "auth_key",
    "auth-key",
    "authkey",
    "signing_key",
    "signing-key",
    "signingkey",
    "authorization",
    "://",
    ":\\/\\/",
    "-u",
    "--user",
    "sig=",
    "[redacted aws",
];

fn needles(words: &[&str], any_case: bool) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .ascii_case_insensitive(any_case)
        .build(words)
        .unwrap_or_else(|e| panic!("invalid needle: {e}"))
}

/// The needles, searched for directly (a `regex` search costs a cache
/// lookup per call, which counts for the thousands of short texts of a
/// session).
static PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| needles(NEEDLES, false));
static CONTEXT_PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| needles(CONTEXT_NEEDLES, true));
static UNICODE_ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));

/// Whether the JSON string literal `literal` (or a raw text) may hold a
/// credential once decoded: `false` means it certainly does not. Cheaper
/// than decoding a literal with escapes, which most texts of a session are.
pub fn may_hold_secret(literal: &[u8]) -> bool {
    PREFILTER.is_match(literal) || CONTEXT_PREFILTER.is_match(literal) || UNICODE_ESCAPE.find(literal).is_some()
}

/// The kinds of credential [`redact`] recognises, as written in its
/// `[redacted <kind>]` replacements (each once).
pub fn secret_kinds() -> impl Iterator<Item = &'static str> {
    let mut kinds: Vec<&'static str> = FORMATS.iter().chain(CONTEXTS).map(|f| f.kind).collect();
    let mut seen = std::collections::HashSet::new();
    kinds.retain(|k| seen.insert(*k));
    kinds.into_iter()
}

/// `text` with every credential replaced by `[redacted <kind>]`, and the
/// number replaced. Borrows `text` when there is none. Final: a redacted
/// text redacts to itself.
pub fn redact(text: &str) -> (Cow<'_, str>, usize) {
    let (text, structural) = STRUCTURE.redact(Cow::Borrowed(text));
    if !CONTEXT_PREFILTER.is_match(text.as_bytes()) {
        return (text, structural);
    }
    let (text, contextual) = CONTEXT.redact(text);
    (text, structural + contextual)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spans a pass over `formats` replaces as the alternation's own
    /// groups tell them (each format in a group, a value's group right
    /// after): the definition the pass's search must match.
    struct ByGroups {
        regex: Regex,
        groups: Vec<usize>,
        valued: Vec<bool>,
    }

    impl ByGroups {
        fn new(formats: &'static [Format]) -> Self {
            let (mut groups, mut valued, mut next) = (Vec::new(), Vec::new(), 1);
            for f in formats {
                let n = Regex::new(f.pattern).unwrap().captures_len();
                groups.push(next);
                valued.push(n > 1);
                next += n;
            }
            let alternation: Vec<String> = formats.iter().map(|f| format!("({})", f.pattern)).collect();
            ByGroups { regex: Regex::new(&alternation.join("|")).unwrap(), groups, valued }
        }

        fn spans(&self, text: &str) -> Vec<(usize, std::ops::Range<usize>)> {
            let mut out = Vec::new();
            for caps in self.regex.captures_iter(text) {
                let at = self.groups.iter().position(|&g| caps.get(g).is_some()).unwrap();
                if let Some(span) = caps.get(if self.valued[at] { self.groups[at] + 1 } else { self.groups[at] }) {
                    out.push((at, span.range()));
                }
            }
            out
        }
    }

    /// Each pass finds, at each match, the format and span the
    /// alternation's groups give, over texts of credentials of every
    /// format, their look-alikes, keys and separators in random order.
    #[test]
    fn a_match_is_taken_by_the_format_whose_group_took_part() {
        let pieces = [
            "AKIAIOSFODNN7EXAMPLE",
            "AKIA",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "ghp_short",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
            "sk-",
            "xoxb-1234567890-abcdefghij",
            "-----BEGIN RSA PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "eyJ",
            "glpat-abcdefghij0123456789",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            "SG.",
            "npm_",
            "AIza",
            "password=",
            "password: ",
            "\"client_secret\": \"",
            "X-Api-Key: ",
            "Authorization: Bearer ",
            "Authorization: Basic ",
            "token=",
            "api_key=",
            "secret",
            "pwd=",
            "postgres://user:",
            "token://user:pass1234word@db.host",
            "password://",
            "@db.host/x",
            "curl -u admin:",
            "AccountKey=",
            "s3cr3tP4ssw0rdValue99",
            "abcd1234EFGH5678ijkl",
            "changeme",
            "$TOKEN",
            "<your key>",
            "getpass()",
            "self.password",
            "\\n",
            "\\t",
            "\\r",
            "\\",
            "\"",
            "'",
            " ",
            " ",
            "\n",
            "=",
            ":",
            "-",
            "_",
            "/",
            ".",
            ",",
            "x",
            "word",
            "0123456789",
            "é",
            "☃",
            "1a2b3c4d5e6f7g8h9i0j",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let (mut texts, mut found) = (0, 0);
        let passes = [(&*STRUCTURE, ByGroups::new(FORMATS)), (&*CONTEXT, ByGroups::new(CONTEXTS))];
        for _ in 0..2000 {
            let n = 1 + (next(&mut seed) % 12) as usize;
            let text: String = (0..n).map(|_| pieces[(next(&mut seed) % pieces.len() as u64) as usize]).collect();
            for (pass, by_groups) in &passes {
                let expected = by_groups.spans(&text);
                let got: Vec<_> = pass.regex.find_iter(&text).filter_map(|m| pass.took(&text, m)).collect();
                assert_eq!(got, expected, "{text:?}");
                found += expected.len();
            }
            texts += 1;
        }
        assert!(found > texts, "the texts hold credentials: {found} in {texts}");
    }

    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn every_pattern_compiles_alone_and_contexts_have_one_value() {
        for f in FORMATS {
            assert_eq!(Regex::new(f.pattern).unwrap().captures_len(), 1, "{}", f.kind);
        }
        for f in CONTEXTS {
            assert_eq!(Regex::new(f.pattern).unwrap().captures_len(), 2, "{}", f.kind);
        }
        for (pass, n) in [(&*STRUCTURE, FORMATS.len()), (&*CONTEXT, CONTEXTS.len())] {
            assert_eq!(pass.alone.len(), n);
            assert_eq!(pass.valued.iter().filter(|&&v| v).count(), if n == FORMATS.len() { 0 } else { n });
        }
        assert_eq!(redact("none here").1, 0);
        assert!(!may_hold_secret(b"\"plain \\\"quoted\\\" text\\n\""));
        assert!(may_hold_secret(b"\"\\u0041KIA\""));
    }
}
