//! The MCP server's standard input and output: newline-delimited JSON-RPC
//! messages, read with a bound and checked before `rmcp` sees them, so that
//! every request gets an answer (docs/mcp.md, "Requests it cannot read").
//!
//! A line longer than [`MAX_MESSAGE_BYTES`] is not held: its excess is
//! read, scanned for the request's id and dropped, and the request gets an
//! invalid request error (-32600). A line that is not UTF-8, not JSON, or
//! nested deeper than [`MAX_PARSE_DEPTH`] gets a parse error (-32700); JSON
//! that is not a JSON-RPC request `rmcp` reads gets an invalid request
//! error. Each error carries the request's id when a cheap scan of the line
//! finds one (a string or a number under the top-level key `id`), else
//! `null`; a notification or a response that cannot be read is dropped (a
//! JSON-RPC server answers neither). Every write to standard output, the
//! server's answers and these errors, goes through one writer task, a line
//! at a time.

use std::io;

use dsh_session_reference::wire::MAX_PARSE_DEPTH;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The longest message the server reads, in bytes (its line without the
/// newline): 1 MiB, far above what any of its requests needs.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// JSON-RPC's code for a message that could not be parsed.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// The longest id recovered from a line that cannot be read (its JSON text).
const MAX_ID_BYTES: usize = 1024;

/// How many bytes standard input is read by at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A line of input.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// A line within the limit, without its line end (`\n` or `\r\n`).
    Message(Vec<u8>),
    /// A line over the limit (not kept): its length and the id found in it.
    TooLong { bytes: u64, id: Option<Value> },
}

/// The lines of a byte stream, each held up to a limit. Cancel safe: a
/// read dropped before it returned keeps what it had read for the next.
pub(crate) struct Lines<R> {
    read: BufReader<R>,
    limit: usize,
    /// The current line, while within the limit.
    line: Vec<u8>,
    /// The current line, once over the limit: its length so far and its scan.
    over: Option<(u64, IdScan)>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// The lines of `read`, each held up to `limit` bytes.
    pub(crate) fn new(read: R, limit: usize) -> Lines<R> {
        Lines { read: BufReader::with_capacity(READ_CHUNK, read), limit, line: Vec::new(), over: None }
    }

    /// The next line (a last one without a newline included), or `None` at
    /// the end of the stream.
    pub(crate) async fn next(&mut self) -> io::Result<Option<Line>> {
        loop {
            let (used, ended) = {
                let available = self.read.fill_buf().await?;
                if available.is_empty() {
                    return Ok(self.take_line());
                }
                let newline = memchr::memchr(b'\n', available);
                let part = &available[..newline.unwrap_or(available.len())];
                match &mut self.over {
                    Some((bytes, scan)) => {
                        *bytes += part.len() as u64;
                        if !scan.found() {
                            scan.feed(part);
                        }
                    }
                    None if self.line.len() + part.len() > self.limit => {
                        let mut scan = IdScan::default();
                        scan.feed(&self.line);
                        scan.feed(part);
                        self.over = Some(((self.line.len() + part.len()) as u64, scan));
                        self.line = Vec::new();
                    }
                    None => self.line.extend_from_slice(part),
                }
                (newline.map_or(available.len(), |at| at + 1), newline.is_some())
            };
            self.read.consume(used);
            if ended {
                if let Some(line) = self.take_line() {
                    return Ok(Some(line));
                }
                // An empty line: nothing to answer.
            }
        }
    }

    /// The line read so far (`None` when empty), and a fresh one begun.
    fn take_line(&mut self) -> Option<Line> {
        if let Some((bytes, mut scan)) = self.over.take() {
            return Some(Line::TooLong { bytes, id: scan.id() });
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (!line.is_empty()).then_some(Line::Message(line))
    }
}

/// Where a scan stands in the top-level object (its keys and values at
/// depth 1), looking for the value of `id`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum At {
    /// Outside the top-level object, or in a value that is not the id.
    #[default]
    Elsewhere,
    /// Where a key comes next.
    Key,
    /// In a key: how many bytes of `id` it matched (`None`: it is not `id`).
    InKey(Option<u8>),
    /// After a key, before its colon (whether the key is `id`).
    Colon(bool),
    /// After the colon, before the value (whether it is the id's).
    Value(bool),
    /// In the id's string.
    IdString,
    /// In the id's number.
    IdNumber,
}

/// A scan of JSON text, fed in pieces, that finds the value of the
/// top-level key `id` (a string or a number) and the deepest nesting,
/// without parsing: linear, holding at most [`MAX_ID_BYTES`]. It reads
/// text that is not JSON too (what it finds there may be nothing).
#[derive(Default)]
pub(crate) struct IdScan {
    depth: usize,
    deepest: usize,
    in_string: bool,
    escaped: bool,
    /// Whether the value at depth 1 is an object.
    top_object: bool,
    at: At,
    /// The id's text being read.
    text: Vec<u8>,
    /// The id, once read.
    id: Option<Value>,
}

impl IdScan {
    /// Reads `bytes`, the next piece of the text.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            // The inside of a string that is not a key or the id: skipped to
            // its next quote or backslash.
            if self.in_string && !self.escaped && matches!(self.at, At::Elsewhere | At::Key | At::Colon(_)) {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    Some(at) => i += at,
                    None => return,
                }
            }
            self.step(bytes[i]);
            i += 1;
        }
    }

    /// Whether the id was found (the rest of the text changes nothing
    /// but the depth).
    pub(crate) fn found(&self) -> bool {
        self.id.is_some()
    }

    /// The deepest nesting of arrays and objects seen.
    pub(crate) fn deepest(&self) -> usize {
        self.deepest
    }

    /// The id, once the whole text was fed.
    pub(crate) fn id(&mut self) -> Option<Value> {
        if self.at == At::IdNumber {
            self.read_id();
        }
        self.id.clone()
    }

    fn step(&mut self, b: u8) {
        let top = self.depth == 1 && self.top_object;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                self.string_ended(top);
                return;
            }
            match &mut self.at {
                At::InKey(matched) => {
                    *matched = matched.filter(|&m| usize::from(m) < 2 && b"id"[usize::from(m)] == b).map(|m| m + 1);
                }
                At::IdString => self.keep(b),
                _ => {}
            }
            return;
        }
        if self.at == At::IdNumber {
            if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                self.keep(b);
                return;
            }
            self.read_id();
        }
        match b {
            b'"' => {
                self.in_string = true;
                if top {
                    self.at = match self.at {
                        At::Key => At::InKey(Some(0)),
                        At::Value(true) if self.id.is_none() => {
                            self.keep(b);
                            At::IdString
                        }
                        _ => At::Elsewhere,
                    };
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.deepest = self.deepest.max(self.depth);
                if self.depth == 1 {
                    self.top_object = b == b'{';
                    self.at = if self.top_object { At::Key } else { At::Elsewhere };
                } else if self.depth == 2 && matches!(self.at, At::Value(_)) {
                    self.at = At::Elsewhere;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if top => self.at = At::Key,
            b':' if top => {
                if let At::Colon(is_id) = self.at {
                    self.at = At::Value(is_id);
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'-' | b'0'..=b'9' if top && self.at == At::Value(true) && self.id.is_none() => {
                self.keep(b);
                self.at = At::IdNumber;
            }
            _ if top && matches!(self.at, At::Value(_)) => self.at = At::Elsewhere,
            _ => {}
        }
    }

    /// A string ended (`top`: at depth 1 of the top-level object).
    fn string_ended(&mut self, top: bool) {
        if !top {
            return;
        }
        match self.at {
            At::InKey(matched) => self.at = At::Colon(matched == Some(2)),
            At::IdString => {
                self.keep(b'"');
                self.read_id();
            }
            _ => {}
        }
    }

    /// Keeps a byte of the id's text (none past [`MAX_ID_BYTES`]: then
    /// there is no id).
    fn keep(&mut self, b: u8) {
        if self.text.len() < MAX_ID_BYTES {
            self.text.push(b);
        } else {
            self.text.clear();
            self.at = At::Elsewhere;
        }
    }

    /// The id's text read: the id, when it is a string or a number.
    fn read_id(&mut self) {
        let text = std::mem::take(&mut self.text);
        self.at = At::Elsewhere;
        self.id = serde_json::from_slice::<Value>(&text).ok().filter(|v| v.is_string() || v.is_number());
    }
}

/// What a line is to the server.
#[derive(Debug)]
pub(crate) enum Judged {
    /// A message for `rmcp`.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error to answer with: its code, message and id.
    Error { code: i64, message: String, id: Option<Value> },
    /// A notification or a response that cannot be read (never answered).
    Dropped,
}

/// What `line` is: a message `rmcp` reads, or the error it is answered
/// with, or nothing to answer.
pub(crate) fn judge(line: Line) -> Judged {
    let line = match line {
        Line::Message(line) => line,
        Line::TooLong { bytes, id } => {
            let message = format!(
                "invalid request: the message is {bytes} bytes long, more than the server reads \
                 ({MAX_MESSAGE_BYTES} bytes)"
            );
            return Judged::Error { code: INVALID_REQUEST, message, id };
        }
    };
    // A byte order mark may start JSON text (RFC 8259, 8.1).
    let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
    let e = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => return Judged::Message(Box::new(message)),
        Err(e) => e,
    };
    let mut scan = IdScan::default();
    scan.feed(text);
    let id = scan.id();
    let error = |code, message: String| Judged::Error { code, message, id: id.clone() };
    if let Err(bad) = std::str::from_utf8(text) {
        let at = bad.valid_up_to();
        return error(PARSE_ERROR, format!("parse error: the message is not UTF-8 text (an invalid byte at {at})"));
    }
    if scan.deepest() > MAX_PARSE_DEPTH {
        return error(
            PARSE_ERROR,
            format!("parse error: the message nests arrays and objects deeper than {MAX_PARSE_DEPTH} levels"),
        );
    }
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            error(PARSE_ERROR, format!("parse error: the message is not JSON ({e})"))
        }
        serde_json::error::Category::Data | serde_json::error::Category::Io => {
            let value: Value = serde_json::from_slice(text).unwrap_or(Value::Null);
            let has = |key: &str| value.get(key).is_some();
            let notification = value.get("method").is_some_and(Value::is_string) && !has("id");
            let response = !has("method") && (has("result") || has("error"));
            if notification || response {
                return Judged::Dropped;
            }
            error(INVALID_REQUEST, format!("invalid request: not a JSON-RPC request the server reads ({e})"))
        }
    }
}

/// The JSON-RPC error response line for `code`, `message` and `id`.
pub(crate) fn error_line(code: i64, message: &str, id: Option<Value>) -> Vec<u8> {
    let response = json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    });
    let mut line = serde_json::to_vec(&response).unwrap_or_default();
    line.push(b'\n');
    line
}

/// A line to write, and who waits for it to be written.
type Write = (Vec<u8>, Option<oneshot::Sender<()>>);

/// How many lines wait for the writer at most.
const QUEUED: usize = 64;

/// The transport `rmcp` serves over: the lines of `R` judged, and one
/// writer task for every line written.
pub(crate) struct LineTransport<R> {
    lines: Lines<R>,
    out: mpsc::Sender<Write>,
    /// An error answer not yet queued.
    pending: Option<Vec<u8>>,
}

/// The transport over standard input and output, and the writer task
/// (which ends once everything queued was written and the transport is
/// gone).
pub(crate) fn stdio() -> (LineTransport<tokio::io::Stdin>, JoinHandle<()>) {
    over(tokio::io::stdin(), tokio::io::stdout(), MAX_MESSAGE_BYTES)
}

/// The transport over `read` and `write`, each message read up to `limit`
/// bytes, and its writer task. Needs a Tokio runtime.
pub(crate) fn over<R, W>(read: R, write: W, limit: usize) -> (LineTransport<R>, JoinHandle<()>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, queue) = mpsc::channel(QUEUED);
    let writer = tokio::spawn(write_lines(write, queue));
    (LineTransport { lines: Lines::new(read, limit), out, pending: None }, writer)
}

/// Writes every queued line, flushing after each batch, and tells each
/// waiting sender its line was written (until a write fails).
async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut queue: mpsc::Receiver<Write>) {
    let mut batch = Vec::new();
    while let Some(first) = queue.recv().await {
        batch.push(first);
        while let Ok(more) = queue.try_recv() {
            batch.push(more);
        }
        for (line, _) in &batch {
            if write.write_all(line).await.is_err() {
                return;
            }
        }
        if write.flush().await.is_err() {
            return;
        }
        for (_, written) in batch.drain(..) {
            if let Some(written) = written {
                let _ = written.send(());
            }
        }
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "standard output is closed")
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), io::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            let (written, wait) = oneshot::channel();
            out.send((line, Some(written))).await.map_err(|_| closed())?;
            wait.await.map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.pending.is_some() {
                // Reserved first: a receive dropped while waiting keeps the answer.
                let permit = self.out.reserve().await.ok()?;
                permit.send((self.pending.take()?, None));
            }
            let line = match self.lines.next().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(e) => {
                    eprintln!("error: reading standard input: {e}");
                    return None;
                }
            };
            match judge(line) {
                Judged::Message(message) => return Some(*message),
                Judged::Error { code, message, id } => self.pending = Some(error_line(code, &message, id)),
                Judged::Dropped => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncReadExt, ReadBuf};

    use super::*;

    /// A reader that gives its bytes `piece` at a time, so that lines and
    /// limits fall across reads.
    struct Pieces {
        bytes: Vec<u8>,
        at: usize,
        piece: usize,
    }

    impl AsyncRead for Pieces {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let end = (self.at + self.piece).min(self.bytes.len());
            let n = (end - self.at).min(buf.remaining());
            buf.put_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    fn lines_of(input: &[u8], limit: usize, piece: usize) -> Vec<Line> {
        runtime().block_on(async {
            let mut lines = Lines::new(Pieces { bytes: input.to_vec(), at: 0, piece }, limit);
            let mut out = Vec::new();
            while let Some(line) = lines.next().await.unwrap() {
                out.push(line);
            }
            out
        })
    }

    fn message(s: &str) -> Line {
        Line::Message(s.as_bytes().to_vec())
    }

    fn id_of(text: &[u8]) -> Option<Value> {
        let mut scan = IdScan::default();
        // Fed a byte at a time and whole: the same answer.
        for b in text {
            scan.feed(std::slice::from_ref(b));
        }
        let one_by_one = scan.id();
        let mut whole = IdScan::default();
        whole.feed(text);
        assert_eq!(whole.id(), one_by_one, "{}", String::from_utf8_lossy(text));
        one_by_one
    }

    #[test]
    fn lines_end_at_newlines_and_empty_ones_are_skipped() {
        for piece in [1, 3, 1000] {
            let got = lines_of(b"one\r\n\n  \ntwo\nlast", 100, piece);
            assert_eq!(got, [message("one"), message("  "), message("two"), message("last")], "{piece}");
        }
        assert_eq!(lines_of(b"", 10, 4), []);
        assert_eq!(lines_of(b"\n\n", 10, 4), []);
    }

    #[test]
    fn a_line_over_the_limit_is_counted_scanned_and_not_kept() {
        let long =
            format!(r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"q":"{}"}}}}"#, "x".repeat(500));
        let at_end = format!(r#"{{"params":{{"q":"{}","id":1}},"id":"late"}}"#, "y".repeat(500));
        let fits = "z".repeat(100);
        let input = format!("{long}\n{fits}\n{at_end}\nnext\n");
        for piece in [1, 7, 64, 100_000] {
            let got = lines_of(input.as_bytes(), 100, piece);
            assert_eq!(
                got,
                [
                    Line::TooLong { bytes: long.len() as u64, id: Some(json!(42)) },
                    message(&fits),
                    Line::TooLong { bytes: at_end.len() as u64, id: Some(json!("late")) },
                    message("next"),
                ],
                "{piece}"
            );
        }
        // One byte more than the limit is too long; the limit itself fits.
        assert_eq!(lines_of(&[b'a'; 101], 100, 8), [Line::TooLong { bytes: 101, id: None }]);
        assert_eq!(lines_of(&[b'a'; 100], 100, 8), [Line::Message(vec![b'a'; 100])]);
    }

    #[test]
    fn the_id_is_found_at_the_top_level_only() {
        assert_eq!(id_of(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), Some(json!(7)));
        assert_eq!(id_of(br#"{ "id" : "a\"b" }"#), Some(json!("a\"b")));
        assert_eq!(id_of(br#"{"method":"x","params":{"id":1,"a":[{"id":2}]},"id":-3.5e2}"#), Some(json!(-350.0)));
        assert_eq!(id_of(br#"{"s":"\"id\":9","id":10}"#), Some(json!(10)), "a key inside a string is not a key");
        assert_eq!(id_of(br#"{"idx":1,"xid":2,"i":3}"#), None);
        assert_eq!(id_of(br#"{"id":null}"#), None);
        assert_eq!(id_of(br#"{"id":{"a":1}}"#), None);
        assert_eq!(id_of(br#"{"id":[1]}"#), None);
        assert_eq!(id_of(br#"{"id":true}"#), None);
        assert_eq!(id_of(br#"[{"id":1}]"#), None, "a batch has no one id");
        assert_eq!(id_of(br#"{"a":"b","id":12"#), Some(json!(12)), "a line cut after the id");
        assert_eq!(id_of(b"{\"method\":\"\xff\xfe\",\"id\":5}"), Some(json!(5)), "bytes that are not UTF-8");
        assert_eq!(id_of(b"not json at all"), None);
        let long_id = format!(r#"{{"id":"{}"}}"#, "i".repeat(MAX_ID_BYTES));
        assert_eq!(id_of(long_id.as_bytes()), None, "an id too long to keep");
        let deep = format!(r#"{{"id":3,"params":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
        let mut scan = IdScan::default();
        scan.feed(deep.as_bytes());
        assert_eq!((scan.id(), scan.deepest()), (Some(json!(3)), 100_001));
    }

    fn judged(line: &[u8]) -> (i64, Option<Value>) {
        match judge(Line::Message(line.to_vec())) {
            Judged::Error { code, id, .. } => (code, id),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(line)),
        }
    }

    #[test]
    fn each_unreadable_request_is_judged_with_its_code_and_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"list_sessions","arguments":{{"q":{}{}}}}},"id":8}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(judged(deep.as_bytes()), (PARSE_ERROR, Some(json!(8))));
        let just_too_deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{}{}}}}}"#,
            "[".repeat(MAX_PARSE_DEPTH),
            "]".repeat(MAX_PARSE_DEPTH)
        );
        assert_eq!(judged(just_too_deep.as_bytes()), (PARSE_ERROR, Some(json!(1))));
        assert_eq!(judged(b"this is not json"), (PARSE_ERROR, None));
        assert_eq!(judged(br#"{"jsonrpc":"2.0","id":4,"method":"tools/list""#), (PARSE_ERROR, Some(json!(4))));
        assert_eq!(
            judged(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/\xc3\x28\"}"),
            (PARSE_ERROR, Some(json!(5)))
        );
        assert_eq!(judged(br#"{"jsonrpc":"2.0","id":6,"method":"\ud800"}"#), (PARSE_ERROR, Some(json!(6))));
        assert_eq!(judged(br#"{"jsonrpc":"2.0","id":"s","method":7}"#), (INVALID_REQUEST, Some(json!("s"))));
        assert_eq!(judged(br#"[1,2]"#), (INVALID_REQUEST, None));
        assert_eq!(judged(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":5}"#).0, INVALID_REQUEST);
        let Judged::Error { code, message, id } = judge(Line::TooLong { bytes: 50_000_000, id: Some(json!(1)) }) else {
            panic!("a line too long is answered")
        };
        assert_eq!((code, id), (INVALID_REQUEST, Some(json!(1))));
        assert!(message.contains("50000000") && message.contains(&MAX_MESSAGE_BYTES.to_string()), "{message}");
    }

    #[test]
    fn requests_pass_and_unreadable_notifications_and_responses_are_dropped() {
        let ok = |line: &[u8]| matches!(judge(Line::Message(line.to_vec())), Judged::Message(_));
        assert!(ok(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
        assert!(ok(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"), "a byte order mark");
        assert!(ok(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
        let dropped = |line: &[u8]| matches!(judge(Line::Message(line.to_vec())), Judged::Dropped);
        assert!(dropped(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#));
        assert!(dropped(br#"{"jsonrpc":"2.0","error":"not an object"}"#));
    }

    #[test]
    fn errors_are_written_by_the_writer_and_the_next_request_still_read() {
        runtime().block_on(async {
            let (mut client, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, mut replies) = tokio::io::duplex(1 << 16);
            let (mut transport, writer) = over(server_in, server_out, 64);
            let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#, "x".repeat(100));
            let input = format!("{big}\nnot json\n{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}}\n");
            client.write_all(input.as_bytes()).await.unwrap();
            drop(client);
            let message = transport.receive().await.expect("the ping after the bad lines");
            assert!(serde_json::to_string(&message).unwrap().contains(r#""id":3"#));
            assert!(transport.receive().await.is_none());
            drop(transport);
            writer.await.unwrap();
            let mut written = String::new();
            replies.read_to_string(&mut written).await.unwrap();
            let answers: Vec<Value> = written.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(answers.len(), 2, "{written}");
            assert_eq!((&answers[0]["id"], &answers[0]["error"]["code"]), (&json!(1), &json!(INVALID_REQUEST)));
            assert_eq!((&answers[1]["id"], &answers[1]["error"]["code"]), (&Value::Null, &json!(PARSE_ERROR)));
        });
    }
}
