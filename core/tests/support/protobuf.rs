// Protobuf's wire format, as much as the tests need to write Warp's
// tasks (included by the tests and benchmarks that build them, and by the
// Warp reader's unit tests).

/// The key of field `number` with wire type `wire`.
pub fn key(number: u64, wire: u64) -> Vec<u8> {
    varint((number << 3) | wire)
}

/// `v` as a base-128 varint.
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// Field `number`, length-delimited.
pub fn field(number: u64, bytes: impl AsRef<[u8]>) -> Vec<u8> {
    let bytes = bytes.as_ref();
    [key(number, 2), varint(bytes.len() as u64), bytes.to_vec()].concat()
}

/// A root `Task` (`1 id`, `5 messages`) whose messages are user
/// queries (`2 {1 query}`) and agent outputs (`3 {1 text}`).
pub fn task(id: &str, said: &[(bool, String)]) -> Vec<u8> {
    let mut out = field(1, id);
    for (user, text) in said {
        out.extend(field(5, field(if *user { 2 } else { 3 }, field(1, text))));
    }
    out
}
