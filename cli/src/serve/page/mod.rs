//! The web page `serve` answers at `/` and the files it loads, shipped in
//! the binary. The server asks [`asset`] for every `GET` outside `/api/`
//! and `/mcp`, and puts its own security headers on what it answers.

/// A file of the page.
pub(crate) struct Asset {
    /// Its `Content-Type`.
    pub(crate) content_type: &'static str,
    /// Its bytes.
    pub(crate) bytes: &'static [u8],
}

/// The file served at `path` (`/` is the page itself), if any.
pub(crate) fn asset(path: &str) -> Option<Asset> {
    match path {
        "/" => Some(Asset { content_type: "text/html; charset=utf-8", bytes: PLACEHOLDER.as_bytes() }),
        _ => None,
    }
}

/// The page until the picker and reader are built in: where the API is.
const PLACEHOLDER: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>dsh-session-ref</title></head><body><h1>dsh-session-ref</h1>\
<p>The JSON API is at <code>/api/</code> and MCP at <code>/mcp</code> (docs/serve.md).</p></body></html>\n";
