//! The few fields of Warp's `warp.multi_agent.v1.Task` protobuf a replay
//! needs, read by a bounded walk of the wire format: every length is
//! checked against what remains, a varint is at most ten bytes, and
//! nothing but the known path of fields is descended into, so a damaged
//! payload ends in an error that says why, never a panic or a large
//! allocation.
//!
//! The message layout read (from warpdotdev/warp-proto-apis's
//! `apis/multi_agent/v1/task.proto`; every other field is stepped over):
//!
//! ```text
//! Task          1 id: string, 2 description: string,
//!               3 dependencies: Dependencies, 5 messages: repeated Message
//! Dependencies  1 parent_task_id: string
//! Message       one of 2 user_query: UserQuery, 3 agent_output: AgentOutput,
//!               16 summarization: Summarization (and the other members,
//!               4 to 6, 9, 10, 15, 17 to 28, left out)
//! UserQuery     1 query: string
//! AgentOutput   1 text: string
//! Summarization one of 1 conversation_summary: ConversationSummary (and
//!               3 tool_call_result_summary, left out)
//! ConversationSummary 1 summary: string
//! ```

/// One field's value on the wire.
enum Value<'a> {
    /// Wire type 0.
    Varint,
    /// Wire types 1 and 5 (eight or four bytes).
    Fixed,
    /// Wire type 2: a string, bytes or an embedded message.
    Bytes(&'a [u8]),
}

/// The fields of one encoded message, in order; after an error, nothing.
struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Fields { buf }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for (i, &byte) in self.buf.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.buf = &self.buf[i + 1..];
                return Ok(value);
            }
        }
        Err(if self.buf.len() < 10 { "a varint runs past the end" } else { "a varint is longer than ten bytes" }
            .to_owned())
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.buf.len())
            .ok_or_else(|| format!("a field of {n} bytes runs past the end ({} bytes remain)", self.buf.len()))?;
        let (taken, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(taken)
    }

    fn field(&mut self) -> Result<(u64, Value<'a>), String> {
        let key = self.varint()?;
        let (number, wire) = (key >> 3, key & 7);
        if number == 0 || number > (1 << 29) - 1 {
            return Err(format!("a field number {number} out of protobuf's range"));
        }
        let value = match wire {
            0 => self.varint().map(|_| Value::Varint)?,
            1 => self.take(8).map(|_| Value::Fixed)?,
            2 => {
                let n = self.varint()?;
                Value::Bytes(self.take(n)?)
            }
            5 => self.take(4).map(|_| Value::Fixed)?,
            other => return Err(format!("field {number} has wire type {other}, which Warp does not write")),
        };
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_err() {
            self.buf = &[];
        }
        Some(field)
    }
}

/// The length-delimited field `number` of `buf` (the last one, as protobuf
/// merges a repeated singular field).
fn last_bytes(buf: &[u8], number: u64) -> Result<Option<&[u8]>, String> {
    let mut found = None;
    for field in Fields::new(buf) {
        match field? {
            (n, Value::Bytes(b)) if n == number => found = Some(b),
            (n, _) if n == number => return Err(format!("field {number} is not length-delimited")),
            _ => {}
        }
    }
    Ok(found)
}

fn string(bytes: &[u8], what: &str) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| format!("its {what} is not UTF-8"))
}

/// The string field `number` of `buf`, empty when absent.
fn string_field(buf: &[u8], number: u64, what: &str) -> Result<String, String> {
    last_bytes(buf, number)?.map_or(Ok(String::new()), |b| string(b, what))
}

/// What one message of a task says, as far as the replay cares.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Said {
    /// A user query, as typed.
    User(String),
    /// The agent's text.
    Assistant(String),
    /// A summary of the conversation before it.
    Summary(String),
    /// Anything else: a tool call or its result, reasoning, a system query,
    /// a server event, a message type this reader does not know.
    Other,
}

/// The parts of one task a replay reads.
#[derive(Debug, Default)]
pub(super) struct Task {
    /// `description`: Warp's title for a root task.
    pub(super) description: String,
    /// `dependencies.parent_task_id`, empty for a root task.
    pub(super) parent: String,
    /// Its messages in order: what each says, or why it could not be read.
    pub(super) messages: Vec<Result<Said, String>>,
}

impl Task {
    /// Decodes a task; an error says why its framing is broken (a damaged
    /// message inside it is kept as its error, the others read).
    pub(super) fn decode(buf: &[u8]) -> Result<Task, String> {
        let mut task = Task::default();
        for field in Fields::new(buf) {
            match field? {
                (2, Value::Bytes(b)) => task.description = string(b, "description")?,
                (3, Value::Bytes(b)) => task.parent = string_field(b, 1, "parent task id")?,
                (5, Value::Bytes(b)) => task.messages.push(said(b)),
                (n @ (2 | 3 | 5), _) => return Err(format!("field {n} is not length-delimited")),
                _ => {}
            }
        }
        Ok(task)
    }

    /// Whether it is a root task (no parent).
    pub(super) fn is_root(&self) -> bool {
        self.parent.is_empty()
    }
}

/// What a `Message` says (its `message` oneof; the last member set wins).
fn said(buf: &[u8]) -> Result<Said, String> {
    let mut out = Said::Other;
    for field in Fields::new(buf) {
        out = match field? {
            (2, Value::Bytes(b)) => Said::User(string_field(b, 1, "query")?),
            (3, Value::Bytes(b)) => Said::Assistant(string_field(b, 1, "text")?),
            (16, Value::Bytes(b)) => match last_bytes(b, 1)? {
                Some(summary) => Said::Summary(string_field(summary, 1, "summary")?),
                None => Said::Other,
            },
            (n @ (2 | 3 | 16), _) => return Err(format!("field {n} is not length-delimited")),
            // Another member of the oneof replaces what was read before
            // (fields 1, 7, 8, 11, 13 and 14 are the message's own).
            (4..=6 | 9 | 10 | 15 | 17..=28, _) => Said::Other,
            _ => out,
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    mod pb {
        include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/protobuf.rs"));
    }
    use pb::{field, key, varint};

    #[test]
    fn reads_the_fields_of_a_task_and_steps_over_the_others() {
        let user = field(2, [field(1, b"hi"), field(2, field(1, field(1, b"/w")))].concat());
        let reasoning = field(15, field(1, b"thinking"));
        let tool = field(4, field(1, b"call-1"));
        let summary = field(16, field(1, [field(1, b"so far"), key(2, 0), varint(300)].concat()));
        let tool_summary = field(16, field(3, b""));
        let task = [
            field(1, b"t1"),
            field(2, b"Title"),
            key(9, 1),
            vec![0; 8],
            field(5, [field(1, b"m1"), user].concat()),
            field(5, [field(3, field(1, b"hello")), key(14, 5), vec![0; 4]].concat()),
            field(5, &reasoning),
            field(5, &tool),
            field(5, &summary),
            field(5, &tool_summary),
            field(5, [0xff]),
        ]
        .concat();
        let t = Task::decode(&task).unwrap();
        assert_eq!(t.description, "Title");
        assert!(t.is_root());
        assert_eq!(
            t.messages,
            vec![
                Ok(Said::User("hi".into())),
                Ok(Said::Assistant("hello".into())),
                Ok(Said::Other),
                Ok(Said::Other),
                Ok(Said::Summary("so far".into())),
                Ok(Said::Other),
                Err("a varint runs past the end".into()),
            ]
        );
        let child = Task::decode(&field(3, field(1, b"t1"))).unwrap();
        assert_eq!(child.parent, "t1");
        assert!(!child.is_root());
    }

    #[test]
    fn a_damaged_payload_says_why() {
        let err = |buf: &[u8]| Task::decode(buf).unwrap_err();
        assert_eq!(
            err(&[key(2, 2), varint(50), b"short".to_vec()].concat()),
            "a field of 50 bytes runs past the end (5 bytes remain)"
        );
        assert_eq!(err(&[0x80; 11]), "a varint is longer than ten bytes");
        assert_eq!(err(&[0x80, 0x80]), "a varint runs past the end");
        assert_eq!(err(&key(7, 3)), "field 7 has wire type 3, which Warp does not write");
        assert_eq!(err(&[0]), "a field number 0 out of protobuf's range");
        assert_eq!(err(&[key(2, 0), varint(1)].concat()), "field 2 is not length-delimited");
        assert_eq!(err(&field(2, [0xc3, 0x28])), "its description is not UTF-8");
        // A length past what any buffer holds is refused before anything
        // is allocated.
        assert!(err(&[key(5, 2), varint(u64::MAX >> 1)].concat()).contains("runs past the end"));
    }
}
