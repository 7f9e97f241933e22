//! Byte classifiers for JSON text: every table and every block-at-a-time
//! loop the readers and writers of `json/` use, and the core's only
//! `unsafe` code (two SSE2 loops, each bounds-checked before it loads).
//!
//! - [`classify`]: the `"`, `\\`, control and non-ASCII bytes of a 16-byte
//!   block of a string (SSE2 on x86-64, exact word-at-a-time code elsewhere);
//! - [`find2`]: the first of two bytes (a kept text's next `\\` or `<`);
//! - [`next_escape`]: the next byte a JSON string literal must escape;
//! - the escape tables, [`hex4`] and [`unicode_escape`], shared by the
//!   validating reader, `JSON.parse`-compatible parsing and the transcoder.
#![allow(unsafe_code)]

pub(crate) const HEX: &[u8; 16] = b"0123456789abcdef";

/// What one byte of a UTF-8 string becomes inside a JSON string literal.
/// 0 = itself, b'u' = `\u00xx`, anything else = the short escape `\x`.
const fn escape_table(tag_safe: bool) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    if tag_safe {
        t[b'<' as usize] = b'u';
    }
    t
}

static PLAIN: [u8; 256] = escape_table(false);
static TAG_SAFE: [u8; 256] = escape_table(true);

pub(crate) fn table(tag_safe: bool) -> &'static [u8; 256] {
    if tag_safe {
        &TAG_SAFE
    } else {
        &PLAIN
    }
}

/// The index of the first byte at or after `i` that `s` escapes (`"`, `\\`,
/// a control character, and `<` when tag-safe), or `s.len()`. Eight bytes at
/// a time: texts are mostly runs that need no escape.
pub(crate) fn next_escape(s: &[u8], mut i: usize, tag_safe: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of each byte below `n`; exact for the lowest such byte,
    // the only one used (a borrow reaches only bytes above a match).
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGHS;
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let mut hits = below(w ^ (ONES * b'"' as u64), 1) | below(w ^ (ONES * b'\\' as u64), 1) | below(w, 0x20);
        if tag_safe {
            hits |= below(w ^ (ONES * b'<' as u64), 1);
        }
        if hits != 0 {
            return i + hits.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    let t = table(tag_safe);
    while i < s.len() && t[s[i] as usize] == 0 {
        i += 1;
    }
    i
}

/// The length of a backslash escape by the byte after the backslash: 2 for
/// the short escapes, 6 for `\\u` (four hex digits follow), 0 if invalid.
pub(crate) static ESCAPE_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let short = *b"\"\\/bfnrt";
    let mut k = 0;
    while k < short.len() {
        t[short[k] as usize] = 2;
        k += 1;
    }
    t[b'u' as usize] = 6;
    t
};

/// The value of the four hex digits at `b[at..at + 4]`, if they are that.
pub(crate) fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, &h| Some(acc * 16 + (h as char).to_digit(16)?))
}

/// The `\\uXXXX` escape whose backslash is at `b[at]`: the code point it
/// stands for and the bytes it takes. A high surrogate followed by an
/// escaped low surrogate is one character (12 bytes); any other surrogate
/// is returned alone. `None` when the four hex digits are not.
pub(crate) fn unicode_escape(b: &[u8], at: usize) -> Option<(u32, usize)> {
    let cp = hex4(b, at + 2)?;
    if (0xD800..0xDC00).contains(&cp) && b.get(at + 6..at + 8) == Some(b"\\u") {
        if let Some(lo) = hex4(b, at + 8).filter(|lo| (0xDC00..0xE000).contains(lo)) {
            return Some((0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), 12));
        }
    }
    Some((cp, 6))
}

/// The UTF-8 length of the code point `cp`; a lone surrogate counts as
/// U+FFFD (3 bytes), as JavaScript's `TextEncoder` counts it.
pub(crate) fn utf8_len(cp: u32) -> usize {
    match cp {
        0..=0x7f => 1,
        0x80..=0x7ff => 2,
        0x800..=0xffff => 3,
        _ => 4,
    }
}

/// What [`classify`] found in up to 16 bytes of a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// Bit k: byte k is `"`, `\` or a control character.
    pub special: u32,
    /// Bit k: byte k is not ASCII.
    pub high: u32,
    /// How many bytes were classified: 16, fewer at the end of the input.
    pub len: usize,
}

/// Classifies the 16 bytes at `b[i..]` (fewer at the end of `b`), with
/// SSE2, part of every x86-64 CPU.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn classify(b: &[u8], i: usize) -> Block {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    if i + 16 > b.len() {
        return classify_scalar(b, i);
    }
    // SAFETY: SSE2 is enabled on every x86-64 target, and the unaligned load
    // reads the 16 bytes at `i..i + 16`, which are inside `b` (checked above).
    unsafe {
        let v = _mm_loadu_si128(b.as_ptr().add(i).cast::<__m128i>());
        let ctrl_max = _mm_set1_epi8(0x1f);
        // max(v, 0x1f) == 0x1f exactly for the bytes 0x00..=0x1f.
        let ctrl = _mm_cmpeq_epi8(_mm_max_epu8(v, ctrl_max), ctrl_max);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        let special = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), ctrl)) as u32;
        Block { special, high: _mm_movemask_epi8(v) as u32, len: 16 }
    }
}

/// [`classify`] without vector instructions, eight bytes at a time.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn classify(b: &[u8], i: usize) -> Block {
    classify_swar(b, i)
}

/// [`classify`] in portable word-at-a-time code: exact per-byte tests on
/// two 64-bit words, their high bits packed into masks.
#[cfg(any(not(target_arch = "x86_64"), test))]
fn classify_swar(b: &[u8], i: usize) -> Block {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let Some(words) = b.get(i..i + 16) else { return classify_scalar(b, i) };
    // The high bit of each byte equal to zero (exact, no borrows).
    let zero = |x: u64| !(((x & LO7) + LO7) | x | LO7);
    // The high bit of each byte below 0x20 (exact: no carry leaves a byte).
    let below_space = |w: u64| !((w & LO7) + ONES * 0x60) & !w & HIGHS;
    // The high bits of the eight bytes, packed into eight bits.
    let pack = |m: u64| ((m & HIGHS).wrapping_mul(0x0002_0408_1020_4081) >> 56) as u32;
    let (mut special, mut high) = (0u32, 0u32);
    for (k, chunk) in words.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let hits = zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64)) | below_space(w);
        special |= pack(hits) << (8 * k);
        high |= pack(w) << (8 * k);
    }
    Block { special, high, len: 16 }
}

/// [`classify`] one byte at a time (for the last bytes of the input).
fn classify_scalar(b: &[u8], i: usize) -> Block {
    let tail = b.get(i..).unwrap_or_default();
    let len = tail.len().min(16);
    let (mut special, mut high) = (0u32, 0u32);
    for (k, &c) in tail[..len].iter().enumerate() {
        special |= u32::from(c == b'"' || c == b'\\' || c < 0x20) << k;
        high |= u32::from(c >= 0x80) << k;
    }
    Block { special, high, len }
}

/// The offset of the first byte of `s` that is `a` or `b`. For the short
/// gaps between escapes in text, an inline loop over 16-byte blocks (SSE2)
/// beats a call into `memchr::memchr2`.
pub(crate) fn find2(s: &[u8], a: u8, b: u8) -> Option<usize> {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is enabled on every x86-64 target, and each unaligned
        // load reads the 16 bytes at `i..i + 16`, which are inside `s`.
        unsafe {
            let (va, vb) = (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8));
            while i + 16 <= s.len() {
                let v = _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>());
                let mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    s[i..].iter().position(|&c| c == a || c == b).map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find2_finds_the_first_of_either_byte() {
        let mut seed = 11u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 33) as usize % 80;
            let s: Vec<u8> =
                (0..len).map(|k| [b'x', b'x', b'x', b'<', b'\\', 0xe9][(seed >> (k % 60)) as usize % 6]).collect();
            assert_eq!(find2(&s, b'\\', b'<'), s.iter().position(|&c| c == b'\\' || c == b'<'), "{s:?}");
        }
    }

    #[test]
    fn every_classifier_classifies_blocks_alike() {
        let alphabet = [b'a', b'"', b'\\', 0x01, 0x1f, 0x20, 0x7f, 0x80, 0xff, b'<', 0xc3, 0xa9, 0x00, 0x9f];
        let mut seed = 7u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 33) as usize % 40;
            let plain = (seed >> 20) as usize % 4 == 0;
            let s: Vec<u8> = (0..len)
                .map(|k| {
                    let r = (seed >> (k % 50)) as usize ^ k.wrapping_mul(2654435761);
                    if plain && r % 9 != 0 {
                        b'x'
                    } else {
                        alphabet[r % alphabet.len()]
                    }
                })
                .collect();
            for i in 0..=s.len() {
                let want = classify_scalar(&s, i);
                assert_eq!(classify(&s, i), want, "{s:?} at {i}");
                assert_eq!(classify_swar(&s, i), want, "{s:?} at {i}");
            }
        }
    }
}
