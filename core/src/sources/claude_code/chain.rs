//! The compact pieces a transcript's chain is held in: strings (uuids,
//! `message.id`s) interned exactly and known by number, and timestamps
//! packed into integers that order as their strings do.
//!
//! A 1 GB transcript has about 200k lines; holding each line's uuid,
//! parent and timestamp as strings in maps took about 300 bytes a line.
//! Here a uuid in its canonical form (36 lowercase hex digits and dashes)
//! is held as its 16 bytes, once, in one buffer; a node refers to it by a
//! `u32`; a canonical timestamp is one `u64`.
//!
//! Exactness: the table finds a string by a keyed hash of it, but every
//! lookup compares the held bytes themselves, so two strings whose hashes
//! collide are still two names (a collision costs a probe, never an
//! answer). A string that is not a canonical uuid is held as its bytes,
//! tagged apart from the packed form, so no two strings share a key.

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// No number (no parent, no cwd, no name).
pub(super) const NONE: u32 = u32::MAX;

/// Strings interned exactly: each held once, in one buffer, and known by
/// its number (in the order first met).
pub(super) struct Interner {
    /// Every string's key ([`key_of`]), one after another.
    bytes: Vec<u8>,
    /// Where each string's key ends in `bytes`.
    ends: Vec<u64>,
    /// Open addressing, linear probing: a slot holds a number plus one (0:
    /// empty). At most three quarters full.
    table: Vec<u32>,
    keys: RandomState,
    /// The hash of a key's tag and bytes (a keyed hash; tests force
    /// collisions with another).
    hash: fn(&RandomState, u8, &[u8]) -> u64,
}

fn keyed(keys: &RandomState, tag: u8, bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = keys.build_hasher();
    h.write_u8(tag);
    h.write(bytes);
    h.finish()
}

impl Default for Interner {
    fn default() -> Self {
        Interner { bytes: Vec::new(), ends: Vec::new(), table: Vec::new(), keys: RandomState::new(), hash: keyed }
    }
}

/// The key a string is held as: a canonical uuid as a tag byte 0 and its
/// 16 bytes; anything else as a tag byte 1 and its UTF-8 bytes.
fn key_of<'a>(s: &'a str, buf: &'a mut [u8; 17]) -> KeyRef<'a> {
    match pack_uuid(s) {
        Some(v) => {
            buf[0] = 0;
            buf[1..].copy_from_slice(&v.to_be_bytes());
            KeyRef::Packed(&buf[..])
        }
        None => KeyRef::Raw(s.as_bytes()),
    }
}

/// A key to look up: either a packed uuid (the whole key) or a string's
/// bytes (the key is a tag byte 1 and them).
#[derive(Clone, Copy)]
enum KeyRef<'a> {
    Packed(&'a [u8]),
    Raw(&'a [u8]),
}

impl KeyRef<'_> {
    fn eq(self, held: &[u8]) -> bool {
        match self {
            KeyRef::Packed(k) => held == k,
            KeyRef::Raw(s) => held.first() == Some(&1) && &held[1..] == s,
        }
    }

    fn hash(self, interner: &Interner) -> u64 {
        match self {
            KeyRef::Packed(k) => (interner.hash)(&interner.keys, k[0], &k[1..]),
            KeyRef::Raw(s) => (interner.hash)(&interner.keys, 1, s),
        }
    }
}

/// The hash of a held key (its tag, then its bytes), as [`KeyRef::hash`]
/// gives it for its string.
fn held_hash(interner: &Interner, held: &[u8]) -> u64 {
    let (tag, rest) = held.split_first().map_or((1, &[][..]), |(t, r)| (*t, r));
    (interner.hash)(&interner.keys, tag, rest)
}

/// A canonical uuid (8-4-4-4-12 lowercase hex digits) as its 128 bits.
fn pack_uuid(s: &str) -> Option<u128> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = v << 4 | u128::from(d);
    }
    Some(v)
}

/// The canonical form of a packed uuid.
fn unpack_uuid(v: u128) -> String {
    let hex = format!("{v:032x}");
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

impl Interner {
    /// How many strings are held.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    fn held(&self, n: usize) -> &[u8] {
        let start = if n == 0 { 0 } else { self.ends[n - 1] as usize };
        &self.bytes[start..self.ends[n] as usize]
    }

    /// The slot where `key` is, or the empty slot where it would go.
    fn slot(&self, key: KeyRef<'_>, hash: u64) -> usize {
        let mask = self.table.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            match self.table[at] {
                0 => return at,
                n if key.eq(self.held(n as usize - 1)) => return at,
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// The number of `s`, if it is held.
    pub(super) fn get(&self, s: &str) -> Option<u32> {
        if self.table.is_empty() {
            return None;
        }
        let mut buf = [0u8; 17];
        let key = key_of(s, &mut buf);
        match self.table[self.slot(key, key.hash(self))] {
            0 => None,
            n => Some(n - 1),
        }
    }

    /// The number of `s`, held from now on if it was not; `None` when
    /// `u32::MAX - 1` strings are held already.
    pub(super) fn intern(&mut self, s: &str) -> Option<u32> {
        if (self.len() + 1) * 4 > self.table.len() * 3 {
            self.grow();
        }
        let mut buf = [0u8; 17];
        let key = key_of(s, &mut buf);
        let at = self.slot(key, key.hash(self));
        if self.table[at] != 0 {
            return Some(self.table[at] - 1);
        }
        let n = u32::try_from(self.len()).ok().filter(|&n| n < NONE - 1)?;
        match key {
            KeyRef::Packed(k) => self.bytes.extend_from_slice(k),
            KeyRef::Raw(s) => {
                self.bytes.push(1);
                self.bytes.extend_from_slice(s);
            }
        }
        self.ends.push(self.bytes.len() as u64);
        self.table[at] = n + 1;
        Some(n)
    }

    /// Twice the table, every string placed again (their hashes are not
    /// held: recomputed from the keys, linear in all).
    fn grow(&mut self) {
        let size = (self.table.len() * 2).max(16);
        self.table = vec![0; size];
        let mask = size - 1;
        for n in 0..self.len() {
            let mut at = held_hash(self, self.held(n)) as usize & mask;
            while self.table[at] != 0 {
                at = (at + 1) & mask;
            }
            self.table[at] = n as u32 + 1;
        }
    }

    /// The string numbered `n`.
    pub(super) fn string(&self, n: u32) -> String {
        let held = self.held(n as usize);
        match held.split_first() {
            Some((0, v)) => unpack_uuid(u128::from_be_bytes(v.try_into().expect("a packed uuid is 16 bytes"))),
            Some((_, s)) => String::from_utf8_lossy(s).into_owned(),
            None => String::new(),
        }
    }

    /// An interner whose every key hashes alike (every lookup collides).
    #[cfg(test)]
    fn colliding() -> Self {
        Interner { hash: |_, _, _| 7, ..Interner::default() }
    }
}

/// A line's timestamp as a read keeps it: a canonical ISO 8601 timestamp
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`) as its 17 digits, one number; any other
/// string as its number in [`Stamps`] (high bit set); none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp(u64);

const NO_STAMP: u64 = u64::MAX;
const RAW: u64 = 1 << 63;

/// The timestamps of a read that are not canonical, held as strings.
#[derive(Default)]
pub(super) struct Stamps {
    raw: Vec<Box<str>>,
}

impl Stamps {
    /// `s` as a [`Stamp`] (`None`: no stamp).
    pub(super) fn stamp(&mut self, s: Option<&str>) -> Stamp {
        match s.map(Ts::of) {
            None => Stamp(NO_STAMP),
            Some(Ts::Packed(v)) => Stamp(v),
            Some(Ts::Raw(s)) => {
                self.raw.push(s.into());
                Stamp(RAW | (self.raw.len() - 1) as u64)
            }
        }
    }

    /// The timestamp `s` stands for, to compare.
    pub(super) fn get(&self, s: Stamp) -> Option<Ts<'_>> {
        match s.0 {
            NO_STAMP => None,
            v if v & RAW != 0 => Some(Ts::Raw(&self.raw[(v & !RAW) as usize])),
            v => Some(Ts::Packed(v)),
        }
    }
}

/// A timestamp to compare: ordered exactly as its string (packed ones as
/// numbers between themselves: the same digits at the same places).
#[derive(Clone, Copy, Debug)]
pub(super) enum Ts<'a> {
    /// A canonical one's 17 digits.
    Packed(u64),
    /// Any other string.
    Raw(&'a str),
}

/// Where the digits of a canonical timestamp are, and its other bytes.
const SHAPE: &[u8; 24] = b"dddd-dd-ddTdd:dd:dd.dddZ";

impl<'a> Ts<'a> {
    /// `s` packed when it is canonical.
    pub(super) fn of(s: &'a str) -> Ts<'a> {
        let b = s.as_bytes();
        if b.len() != SHAPE.len() {
            return Ts::Raw(s);
        }
        let mut v: u64 = 0;
        for (&c, &want) in b.iter().zip(SHAPE) {
            match want {
                b'd' if c.is_ascii_digit() => v = v * 10 + u64::from(c - b'0'),
                b'd' => return Ts::Raw(s),
                _ if c != want => return Ts::Raw(s),
                _ => {}
            }
        }
        Ts::Packed(v)
    }

    /// The bytes of the string it stands for.
    fn render<'b>(self, buf: &'b mut [u8; 24]) -> &'b [u8]
    where
        'a: 'b,
    {
        match self {
            Ts::Raw(s) => s.as_bytes(),
            Ts::Packed(mut v) => {
                for (at, &want) in SHAPE.iter().enumerate().rev() {
                    buf[at] = if want == b'd' {
                        let d = (v % 10) as u8;
                        v /= 10;
                        b'0' + d
                    } else {
                        want
                    };
                }
                &buf[..]
            }
        }
    }
}

impl Ord for Ts<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        match (*self, *other) {
            (Ts::Packed(a), Ts::Packed(b)) => a.cmp(&b),
            (a, b) => {
                let (mut x, mut y) = ([0u8; 24], [0u8; 24]);
                a.render(&mut x).cmp(b.render(&mut y))
            }
        }
    }
}

impl PartialOrd for Ts<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ts<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ts<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings() -> Vec<String> {
        let mut v: Vec<String> = (0..300u32).map(|i| format!("00000000-0000-4000-8000-{i:012x}")).collect();
        // Upper case: held raw, apart from the lower-case packed ones.
        v.extend((0..50u32).map(|i| format!("00000000-0000-4000-8000-{:012X}", 0xabc000 + i)));
        v.extend((0..50u32).map(|i| format!("00000000-0000-4000-8000-{:012x}", 0xabc000 + i)));
        v.extend((0..50u32).map(|i| format!("msg_{i}")));
        v.push(String::new());
        v.push("x".repeat(200));
        v.push("y".repeat(200));
        // 17 bytes, as a packed uuid's key is.
        v.push("\0abcdefghijklmnop".to_owned());
        v
    }

    /// Every string has its own number, found again, and its string back,
    /// with a keyed hash and when every hash collides.
    #[test]
    fn interned_strings_are_exact_even_when_hashes_collide() {
        for mut names in [Interner::default(), Interner::colliding()] {
            let all = strings();
            let numbers: Vec<u32> = all.iter().map(|s| names.intern(s).unwrap()).collect();
            assert_eq!(numbers, (0..all.len() as u32).collect::<Vec<_>>());
            for (s, &n) in all.iter().zip(&numbers) {
                assert_eq!(names.intern(s), Some(n), "{s}");
                assert_eq!(names.get(s), Some(n), "{s}");
                assert_eq!(names.string(n), *s);
            }
            assert_eq!(names.get("00000000-0000-4000-8000-ffffffffffff"), None);
            assert_eq!(names.get("msg_x"), None);
            assert_eq!(names.len(), all.len());
        }
    }

    /// Packed timestamps order as their strings, beside raw ones.
    #[test]
    fn packed_timestamps_order_as_their_strings() {
        let all = [
            "2026-11-01T10:00:00.000Z",
            "2026-11-01T10:00:00.001Z",
            "2026-11-01T09:59:59.999Z",
            "2025-12-31T23:59:59.999Z",
            "2026-11-01T10:00:00Z",
            "2026-11-01T10:00:00.000+00:00",
            "2026-11-01T10:00:00.0000Z",
            "2026-11-01",
            "",
            "z",
            "9999-99-99T99:99:99.999Z",
            "0000-00-00T00:00:00.000Z",
        ];
        let mut stamps = Stamps::default();
        let held: Vec<Stamp> = all.iter().map(|s| stamps.stamp(Some(s))).collect();
        assert!(matches!(Ts::of(all[0]), Ts::Packed(_)));
        assert!(matches!(Ts::of(all[4]), Ts::Raw(_)));
        for (a, &x) in all.iter().zip(&held) {
            for (b, &y) in all.iter().zip(&held) {
                let (x, y) = (stamps.get(x).unwrap(), stamps.get(y).unwrap());
                assert_eq!(x.cmp(&y), a.cmp(b), "{a} vs {b}");
                assert_eq!(Ts::of(a).cmp(&Ts::of(b)), a.cmp(b), "{a} vs {b}");
            }
        }
        let none = stamps.stamp(None);
        assert!(stamps.get(none).is_none());
    }
}
