//! The fast path both of Cline's layouts read their messages by: the
//! crate's validating reader ([`Reader`]) filling the same lenient fields
//! serde would, in one pass, and giving up (`None`) wherever serde's
//! answer could differ, for serde to read that part by its own rules.

use crate::json::read::Reader;
use crate::sources::lenient::{LBool, LStr};

/// How deep a value the fast path skips: far under serde_json's limit
/// (128 levels in all), so that nothing it reads is one serde refuses.
pub(super) const FAST_DEPTH: usize = 64;

/// Reads the object at the reader by the fast path: each key among `names`
/// by `read(r, its index)`, any other skipped. `None` when it is not an
/// object, a key cannot be decoded (serde decodes every key of a struct,
/// and refuses one it cannot), a named key comes twice, or `read` fails.
pub(super) fn fast_object<'a>(
    r: &mut Reader<'a>,
    names: &[&[u8]],
    mut read: impl FnMut(&mut Reader<'a>, usize) -> Option<()>,
) -> Option<()> {
    if r.peek() != Some(b'{') || !r.enter_object().ok()? {
        return None;
    }
    let (mut first, mut seen) = (true, 0u32);
    while let Some(key) = r.next_key(&mut first).ok()? {
        if key.escaped && key.decode().is_err() {
            return None;
        }
        let Some(field) = names.iter().position(|n| *n == &*key.name()) else {
            r.skip_within(FAST_DEPTH).ok()?;
            continue;
        };
        if seen & 1 << field != 0 {
            return None;
        }
        seen |= 1 << field;
        read(r, field)?;
    }
    Some(())
}

/// A value that is neither a string nor a number, skipped (`None` for a
/// number: serde checks a number's range where it reads one, which
/// the fast path does not).
pub(super) fn fast_skip(r: &mut Reader<'_>) -> Option<()> {
    match r.peek()? {
        b'-' | b'0'..=b'9' => None,
        _ => r.skip_within(FAST_DEPTH).ok(),
    }
}

/// [`LStr`] by the fast path.
pub(super) fn fast_str<'a>(r: &mut Reader<'a>) -> Option<LStr<'a>> {
    if r.peek()? == b'"' {
        let s = r.maybe_string().ok()??;
        return s.decode().ok().map(|s| LStr(Some(s)));
    }
    fast_skip(r).map(|()| LStr(None))
}

/// [`LBool`] by the fast path.
pub(super) fn fast_bool(r: &mut Reader<'_>) -> Option<LBool> {
    match r.peek()? {
        b't' | b'f' | b'n' => r.bool_or_null("").ok().map(|b| LBool(b == Ok(Some(true)))),
        b'"' => fast_str(r).map(|_| LBool(false)),
        _ => fast_skip(r).map(|()| LBool(false)),
    }
}

/// A value's JSON text as written (`None` for `null`), by the fast path.
pub(super) fn fast_raw<'a>(r: &mut Reader<'a>) -> Option<Option<&'a [u8]>> {
    if r.peek()? == b'n' {
        return r.eat_literal(b"null").then_some(None);
    }
    let start = r.pos();
    r.skip_within(FAST_DEPTH).ok()?;
    Some(Some(&r.input()[start..r.pos()]))
}
