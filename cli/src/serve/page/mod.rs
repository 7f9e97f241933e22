//! The web page `serve` answers at `/`: a composer whose `@` picker turns a
//! pick into a chip of the canonical mention, "Prepare" with a summary per
//! source, and a reader paged newest first. Plain HTML, CSS and JavaScript,
//! the files beside this one, embedded in the binary as they are: no build
//! step, no Node to install the CLI, nothing fetched from another origin.
//!
//! Every response of the page carries [`HEADERS`]: a Content-Security-Policy
//! that allows scripts, styles and requests from the server itself only (no
//! inline script or style), so that even a session text that got into the
//! markup could not run; the page sets every session text with
//! `textContent` besides.

/// One file of the page.
pub struct Asset {
    /// The path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes, as in the repository.
    pub body: &'static [u8],
}

/// The page's files: `/` (the HTML) and what it loads.
pub const ASSETS: &[Asset] = &[
    Asset { path: "/", content_type: "text/html; charset=utf-8", body: include_bytes!("index.html") },
    Asset { path: "/assets/page.css", content_type: "text/css; charset=utf-8", body: include_bytes!("page.css") },
    Asset {
        path: "/assets/page.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("page.js"),
    },
    Asset { path: "/assets/icon.svg", content_type: "image/svg+xml", body: include_bytes!("icon.svg") },
];

/// The Content-Security-Policy of the page: its own scripts, styles and
/// API only; no inline code, no frames, no forms, no other origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every page response carries besides its `Content-Type`.
pub const HEADERS: &[(&str, &str)] = &[
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
    // (the page is small and changes with the binary: always revalidated)
    ("cache-control", "no-cache"),
];

/// The page's file at `path` (a request's path without its query), if any.
pub fn asset(path: &str) -> Option<&'static Asset> {
    let path = if path == "/index.html" { "/" } else { path };
    ASSETS.iter().find(|a| a.path == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve/page");
        std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn text(path: &str) -> &'static str {
        std::str::from_utf8(asset(path).unwrap().body).unwrap()
    }

    #[test]
    fn the_embedded_files_are_the_ones_in_the_repository() {
        for (path, file) in [
            ("/", "index.html"),
            ("/assets/page.css", "page.css"),
            ("/assets/page.js", "page.js"),
            ("/assets/icon.svg", "icon.svg"),
        ] {
            assert_eq!(asset(path).unwrap().body, source(file).as_slice(), "{path} is not {file} as in the repository");
        }
        let mut files: Vec<_> = std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve/page"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "mod.rs")
            .collect();
        files.sort();
        assert_eq!(files, ["icon.svg", "index.html", "page.css", "page.js"], "a file of the page that is not served");
        assert_eq!(asset("/index.html").unwrap().path, "/");
        assert!(asset("/assets/").is_none() && asset("/assets/../mod.rs").is_none() && asset("/page.js").is_none());
    }

    #[test]
    fn the_html_loads_only_the_served_files_and_holds_no_inline_code() {
        let html = text("/");
        let mut loads = Vec::new();
        for attr in ["src=\"", "href=\""] {
            for (at, _) in html.match_indices(attr) {
                let rest = &html[at + attr.len()..];
                loads.push(&rest[..rest.find('"').unwrap()]);
            }
        }
        loads.sort_unstable();
        assert_eq!(loads, ["/assets/icon.svg", "/assets/page.css", "/assets/page.js"]);
        let lower = html.to_ascii_lowercase();
        assert_eq!(lower.matches("<script").count(), 1, "one script, the external file");
        assert!(lower.contains("<script src=\"/assets/page.js\" defer></script>"));
        assert!(!lower.contains("<style") && !lower.contains(" style="), "inline style");
        let handler = lower.match_indices(" on").any(|(at, _)| {
            let rest = &lower[at + 3..];
            let name = rest.bytes().take_while(u8::is_ascii_lowercase).count();
            name > 0 && rest[name..].starts_with('=')
        });
        assert!(!handler, "an inline event handler");
        assert!(!lower.contains("javascript:"));
    }

    #[test]
    fn the_script_never_parses_a_string_as_markup_or_code() {
        let js = text("/assets/page.js");
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('on", "srcdoc", "DOMParser", "createContextualFragment"] {
            assert!(!js.contains(sink), "page.js uses {sink}");
        }
        // Requests go to the server's own API only.
        for (at, _) in js.match_indices("api('") {
            assert!(js[at + 5..].starts_with("/api/"), "a request elsewhere: {}", &js[at..at + 40]);
        }
        assert!(!js.contains("http://") && !js.contains("https://") && !js.contains("//cdn"));
    }

    #[test]
    fn the_policy_allows_no_inline_code_and_no_other_origin() {
        let csp = CONTENT_SECURITY_POLICY;
        assert!(csp.starts_with("default-src 'none';"));
        for directive in csp.split(';').map(str::trim) {
            let (name, sources) = directive.split_once(' ').unwrap();
            for s in sources.split(' ') {
                assert!(matches!(s, "'self'" | "'none'"), "{name} allows {s}");
            }
        }
        assert!(HEADERS.iter().any(|&(k, v)| k == "content-security-policy" && v == csp));
    }
}
