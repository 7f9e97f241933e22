//! The web page `serve` answers at `/` and the files it loads: a composer
//! whose `@` picker turns a pick into a chip of the canonical mention,
//! "Prepare" with a summary per source, and a reader paged newest first.
//! Plain HTML, CSS and JavaScript, the files beside this one, embedded in
//! the binary as they are: no build step, no Node to install the CLI,
//! nothing loaded from another origin. The server asks [`asset`] for every
//! `GET` outside `/api/` and `/mcp`, and puts its own security headers
//! (the Content-Security-Policy among them) on what it answers; the page
//! sets every text from a session with `textContent`, never as markup.

/// A file of the page.
pub(crate) struct Asset {
    /// Its `Content-Type`.
    pub(crate) content_type: &'static str,
    /// Its bytes, as in the repository.
    pub(crate) bytes: &'static [u8],
}

/// The page's files by the path each is served at: `/` (the HTML) and
/// what it loads.
const FILES: &[(&str, &str, &[u8])] = &[
    ("/", "text/html; charset=utf-8", include_bytes!("index.html")),
    ("/assets/page.css", "text/css; charset=utf-8", include_bytes!("page.css")),
    ("/assets/page.js", "text/javascript; charset=utf-8", include_bytes!("page.js")),
    ("/assets/icon.svg", "image/svg+xml", include_bytes!("icon.svg")),
];

/// The file served at `path` (`/` is the page itself), if any.
pub(crate) fn asset(path: &str) -> Option<Asset> {
    FILES.iter().find(|(p, _, _)| *p == path).map(|&(_, content_type, bytes)| Asset { content_type, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve/page");
        std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn text(path: &str) -> &'static str {
        std::str::from_utf8(asset(path).unwrap().bytes).unwrap()
    }

    #[test]
    fn the_embedded_files_are_the_ones_in_the_repository() {
        for (path, file) in [
            ("/", "index.html"),
            ("/assets/page.css", "page.css"),
            ("/assets/page.js", "page.js"),
            ("/assets/icon.svg", "icon.svg"),
        ] {
            assert_eq!(
                asset(path).unwrap().bytes,
                source(file).as_slice(),
                "{path} is not {file} as in the repository"
            );
        }
        let mut files: Vec<_> =
            std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/serve/page"))
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n != "mod.rs")
                .collect();
        files.sort();
        assert_eq!(files, ["icon.svg", "index.html", "page.css", "page.js"], "a file of the page that is not served");
        for path in ["/index.html", "/assets/", "/assets/../mod.rs", "/page.js", "/assets/mod.rs", "/assets/page.js/"] {
            assert!(asset(path).is_none(), "{path}");
        }
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
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "setAttribute('on",
            "srcdoc",
            "DOMParser",
            "createContextualFragment",
        ] {
            assert!(!js.contains(sink), "page.js uses {sink}");
        }
        // Requests go to the server's own API only.
        for (at, _) in js.match_indices("api('") {
            assert!(js[at + 5..].starts_with("/api/"), "a request elsewhere: {}", &js[at..at + 40]);
        }
        for (at, _) in js.match_indices("fetch(") {
            let arg = &js[at + 6..];
            assert!(
                arg.starts_with("path, ") || arg.starts_with("'/api/"),
                "a request elsewhere: {}",
                &js[at..at + 40]
            );
        }
        assert!(!js.contains("http://") && !js.contains("https://") && !js.contains("//cdn"));
    }
}
