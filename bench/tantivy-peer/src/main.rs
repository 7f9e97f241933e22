//! tantivy beside the built-in search index, for the discovery benchmark
//! (core/benches/discovery.rs, `DSR_BENCH_TANTIVY=1`). The same protocol
//! and semantics as scripts/fts5_bench.py (SQLite FTS5, trigram):
//!
//! `tantivy-peer <export.jsonl> <index dir>` reads the JSON-lines export the
//! benchmark wrote (one object per session: `sid`, `cwd`, `created`,
//! `body`), builds the index in `<index dir>`, prints one line
//! `{"build_s", "optimize_s", "db_bytes", "text_bytes", "reused"}`, then
//! answers one request per line on stdin with one JSON line on stdout:
//!
//! - `{"q": "...", "cwd": "...", "full": false}`: the query ranked like
//!   ours where a peer can (the target's cwd first, then newer `created`),
//!   cut at 50: `{"ms": time, "n": results}`; with `"text": true` it also
//!   reads each result's stored text and finds the first word in it (what a
//!   snippet needs at least, as the built-in search returns one);
//! - the same with `"full": true`: every matching session, unranked:
//!   `{"ms": time, "ids": [...]}` (checked against the benchmark's
//!   brute-force scan);
//! - `{"q": "...", "rank": "bm25", "tok": "trigram" | "words", "limit": n}`:
//!   the first `n` matching sessions by tantivy's BM25 score, best first
//!   (`{"ms": time, "ids": [...]}`), for the known-item benchmark
//!   (core/benches/known_item.rs): over the 3-grams as above, or over
//!   `words`, the same text through tantivy's default tokenizer (words of
//!   letters and digits, lower-cased; every query word must occur, a word
//!   the tokenizer splits as a phrase).
//!
//! Semantics: case-insensitive substrings, every word of the query
//! somewhere in the session. `body` is indexed as character 3-grams
//! (tantivy's `NgramTokenizer(3, 3)`), each lower-cased by tantivy's
//! `LowerCaser` (`char::to_lowercase`, one character at a time). That
//! tokenizer gives every n-gram position 0, so a filter here numbers them
//! (the n-gram starting at character `i` is at position `i`), which makes a
//! word of three characters or more one phrase query of its consecutive
//! 3-grams. Shorter words, which no 3-gram holds, are answered by a scan of
//! the stored text of the sessions the other words leave (as FTS5 falls back
//! to `LIKE`). A phrase match is exact while every character involved
//! lower-cases to one character; the one that does not (U+0130, to `i` and
//! U+0307) shifts the alignment, so a word holding U+0130 or U+0307 is
//! answered by the scan too. What stays different from the built-in
//! search: a query word ending in `i` (or starting with U+0307) does not
//! find the first half of a U+0130 in the text (the 3-gram holding it
//! lower-cases as a whole), and the brute-force scan's `str::to_lowercase`
//! (a final capital sigma to `ς`) is not followed.
//!
//! With `DSR_FTS5_KEEP_DB` set the index is kept, with the SHA-256 of the
//! export it was built from and its build figures in `<index dir>.built.json`
//! beside it, and a later run over an export of the same hash reuses it;
//! else the index is removed at the end.

use std::collections::HashSet;
use std::error::Error;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::query::{AllQuery, BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value as _, FAST, STRING};
use tantivy::tokenizer::{LowerCaser, NgramTokenizer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer};
use tantivy::{DocAddress, Index, IndexReader, Order, ReloadPolicy, Searcher, TantivyDocument, Term};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Results of a ranked query, as the benchmark's (and FTS5's) `LIMIT 50`.
const LIMIT: usize = 50;
/// The tokenizer's name in the index.
const TRIGRAMS: &str = "trigram";
/// What the index holds, kept with a built index: one built with other
/// fields is not reused.
const SCHEMA: &str = "body-trigrams+words";

/// Numbers the tokens of a stream 0, 1, 2, ... (over `NgramTokenizer(3,
/// 3)`, the n-gram starting at character `i` gets position `i`).
#[derive(Clone)]
struct Numbered;

impl TokenFilter for Numbered {
    type Tokenizer<T: Tokenizer> = NumberedTokenizer<T>;
    fn transform<T: Tokenizer>(self, tokenizer: T) -> NumberedTokenizer<T> {
        NumberedTokenizer(tokenizer)
    }
}

#[derive(Clone)]
struct NumberedTokenizer<T>(T);

impl<T: Tokenizer> Tokenizer for NumberedTokenizer<T> {
    type TokenStream<'a> = NumberedStream<T::TokenStream<'a>>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        NumberedStream { inner: self.0.token_stream(text), next: 0 }
    }
}

struct NumberedStream<S> {
    inner: S,
    next: usize,
}

impl<S: TokenStream> TokenStream for NumberedStream<S> {
    fn advance(&mut self) -> bool {
        if !self.inner.advance() {
            return false;
        }
        self.inner.token_mut().position = self.next;
        self.next += 1;
        true
    }
    fn token(&self) -> &Token {
        self.inner.token()
    }
    fn token_mut(&mut self) -> &mut Token {
        self.inner.token_mut()
    }
}

fn analyzer() -> Result<TextAnalyzer> {
    Ok(TextAnalyzer::builder(NgramTokenizer::new(3, 3, false)?).filter(LowerCaser).filter(Numbered).build())
}

/// The fields: `body` (3-grams with positions, stored for the scans),
/// `words` (the same text through the default tokenizer, for BM25 over
/// words), `cwd` (one term, for the ranking), `created` and `row` (the
/// session's line in the export) as fast fields.
struct Fields {
    body: Field,
    words: Field,
    cwd: Field,
    created: Field,
    row: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let indexing =
        TextFieldIndexing::default().set_tokenizer(TRIGRAMS).set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let body = b.add_text_field("body", TextOptions::default().set_indexing_options(indexing).set_stored());
    let words_indexing = TextFieldIndexing::default()
        .set_tokenizer("default")
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    let words = b.add_text_field("words", TextOptions::default().set_indexing_options(words_indexing));
    let cwd = b.add_text_field("cwd", STRING);
    let created = b.add_f64_field("created", FAST);
    let row = b.add_u64_field("row", FAST);
    (b.build(), Fields { body, words, cwd, created, row })
}

/// Lower-cased as tantivy's `LowerCaser` and the built-in index do: each
/// character by `char::to_lowercase`.
/// ASCII runs are lower-cased a slice at a time (the text is mostly ASCII).
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| !b.is_ascii()).unwrap_or(rest.len());
        let start = out.len();
        out.push_str(&rest[..ascii]);
        out[start..].make_ascii_lowercase();
        rest = &rest[ascii..];
        if let Some(c) = rest.chars().next() {
            out.extend(c.to_lowercase());
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let m = e?.metadata()?;
        if m.is_file() {
            total += m.len();
        }
    }
    Ok(total)
}

/// Every line of the export, parsed, in turn.
fn for_each_row(export: &Path, mut f: impl FnMut(&[u8], Value) -> Result<()>) -> Result<()> {
    let mut lines = std::io::BufReader::new(std::fs::File::open(export)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            f(&line, serde_json::from_slice(&line)?)?;
        }
    }
}

/// The export's SHA-256, its session ids in order and the bytes of text it
/// holds (one pass; the bodies are not kept).
fn read_export(export: &Path) -> Result<(String, Vec<String>, usize)> {
    let (mut hash, mut sids, mut text) = (Sha256::new(), Vec::new(), 0);
    for_each_row(export, |line, row| {
        hash.update(line);
        sids.push(row["sid"].as_str().ok_or("a row without a sid")?.to_owned());
        text += row["body"].as_str().ok_or("a row without a body")?.len();
        Ok(())
    })?;
    Ok((hex(&hash.finalize()), sids, text))
}

/// Builds the index in `dir` from the export, streamed: one indexing thread
/// (as FTS5 builds), then merged into one segment (as FTS5's `optimize`).
fn build(dir: &Path, export: &Path, f: &Fields, schema: Schema) -> Result<(Index, f64, f64)> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    let index = Index::create_in_dir(dir, schema)?;
    index.tokenizers().register(TRIGRAMS, analyzer()?);
    let t = Instant::now();
    let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 256_000_000)?;
    let mut i = 0u64;
    for_each_row(export, |_, r| {
        let mut doc = TantivyDocument::new();
        let body = r["body"].as_str().ok_or("a row without a body")?;
        doc.add_text(f.body, body);
        doc.add_text(f.words, body);
        doc.add_text(f.cwd, r["cwd"].as_str().unwrap_or(""));
        doc.add_f64(f.created, r["created"].as_f64().unwrap_or(0.0));
        doc.add_u64(f.row, i);
        i += 1;
        writer.add_document(doc)?;
        Ok(())
    })?;
    writer.commit()?;
    let build_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let segments = index.searchable_segment_ids()?;
    if segments.len() > 1 {
        writer.merge(&segments).wait()?;
    }
    writer.wait_merging_threads()?;
    Ok((index, build_s, t.elapsed().as_secs_f64()))
}

/// One query's plan: the index part (phrases and terms, all required) and
/// the words only the stored text can answer.
struct Plan {
    indexed: Option<Box<dyn Query>>,
    scan: Vec<String>,
}

fn plan(q: &str, f: &Fields, analyzer: &mut TextAnalyzer) -> Plan {
    plan_with(q, f, analyzer, IndexRecordOption::Basic)
}

/// [`plan`], its one-term words asked `with` (frequencies, for a score).
fn plan_with(q: &str, f: &Fields, analyzer: &mut TextAnalyzer, with: IndexRecordOption) -> Plan {
    let mut seen = HashSet::new();
    let (mut parts, mut scan): (Vec<Box<dyn Query>>, Vec<String>) = (Vec::new(), Vec::new());
    for word in q.split_whitespace() {
        let folded = fold(word);
        if !seen.insert(folded.clone()) {
            continue;
        }
        if folded.chars().count() < 3 || word.contains('\u{130}') || folded.contains('\u{307}') {
            scan.push(folded);
            continue;
        }
        let mut terms = Vec::new();
        let mut stream = analyzer.token_stream(word);
        while stream.advance() {
            let t = stream.token();
            terms.push((t.position, Term::from_field_text(f.body, &t.text)));
        }
        match terms.len() {
            0 => {}
            1 => parts.push(Box::new(TermQuery::new(terms.remove(0).1, with))),
            _ => parts.push(Box::new(PhraseQuery::new_with_offset(terms))),
        }
    }
    Plan { indexed: every(parts), scan }
}

/// The plan of a query over `words`: each query word through the default
/// tokenizer, a term or a phrase of its tokens, all required.
fn word_plan(q: &str, f: &Fields, analyzer: &mut TextAnalyzer) -> Plan {
    let mut seen = HashSet::new();
    let mut parts: Vec<Box<dyn Query>> = Vec::new();
    for word in q.split_whitespace() {
        let mut terms = Vec::new();
        let mut stream = analyzer.token_stream(word);
        while stream.advance() {
            let t = stream.token();
            terms.push((t.position, Term::from_field_text(f.words, &t.text)));
        }
        let key: Vec<String> = terms.iter().map(|(_, t)| format!("{t:?}")).collect();
        if terms.is_empty() || !seen.insert(key) {
            continue;
        }
        if terms.len() == 1 {
            parts.push(Box::new(TermQuery::new(terms.remove(0).1, IndexRecordOption::WithFreqs)));
        } else {
            parts.push(Box::new(PhraseQuery::new_with_offset(terms)));
        }
    }
    Plan { indexed: every(parts), scan: Vec::new() }
}

/// All of `parts` required: none, one, or a boolean query of them.
fn every(mut parts: Vec<Box<dyn Query>>) -> Option<Box<dyn Query>> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Box::new(BooleanQuery::new(parts.into_iter().map(|p| (Occur::Must, p)).collect())) as Box<dyn Query>),
    }
}

struct Peer {
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    words: TextAnalyzer,
    sids: Vec<String>,
}

impl Peer {
    fn row(&self, searcher: &Searcher, a: DocAddress) -> Result<usize> {
        let col = searcher.segment_reader(a.segment_ord).fast_fields().u64("row")?;
        Ok(col.first(a.doc_id).ok_or("a document without its row")? as usize)
    }

    fn created(&self, searcher: &Searcher, a: DocAddress) -> Result<f64> {
        let col = searcher.segment_reader(a.segment_ord).fast_fields().f64("created")?;
        Ok(col.first(a.doc_id).unwrap_or(0.0))
    }

    /// Whether the stored text holds every word to scan for.
    fn holds(&self, searcher: &Searcher, a: DocAddress, words: &[String]) -> Result<bool> {
        let doc: TantivyDocument = searcher.doc(a)?;
        let body = doc.get_first(self.fields.body).and_then(|v| v.as_str()).unwrap_or("");
        let body = fold(body);
        Ok(words.iter().all(|w| body.contains(w.as_str())))
    }

    /// The sessions matching `base`, in the target's cwd (`here`) or not,
    /// best first: with nothing to scan, tantivy's top-k by the `created`
    /// fast field; else every match ordered by it and checked in that order
    /// until `limit` hold.
    fn ranked(
        &self,
        searcher: &Searcher,
        base: &dyn Query,
        plan: &Plan,
        here: bool,
        cwd: &str,
        limit: usize,
    ) -> Result<Vec<DocAddress>> {
        let term: Box<dyn Query> =
            Box::new(TermQuery::new(Term::from_field_text(self.fields.cwd, cwd), IndexRecordOption::Basic));
        let q = BooleanQuery::new(vec![
            (Occur::Must, base.box_clone()),
            (if here { Occur::Must } else { Occur::MustNot }, term),
        ]);
        if plan.scan.is_empty() {
            let top =
                searcher.search(&q, &TopDocs::with_limit(limit).order_by_fast_field::<f64>("created", Order::Desc))?;
            return Ok(top.into_iter().map(|(_, a)| a).collect());
        }
        let mut all = Vec::new();
        for a in searcher.search(&q, &DocSetCollector)? {
            all.push((self.created(searcher, a)?, a));
        }
        all.sort_by(|x, y| y.0.total_cmp(&x.0));
        let mut out = Vec::new();
        for (_, a) in all {
            if out.len() == limit {
                break;
            }
            if self.holds(searcher, a, &plan.scan)? {
                out.push(a);
            }
        }
        Ok(out)
    }

    /// The first `limit` matches by BM25 score, best first (ties in the
    /// index's order); words only the stored text can answer filter them.
    fn bm25(&mut self, q: &str, words: bool, limit: usize) -> Result<Vec<String>> {
        let searcher = self.reader.searcher();
        let plan = if words {
            word_plan(q, &self.fields, &mut self.words)
        } else {
            plan_with(q, &self.fields, &mut self.analyzer, IndexRecordOption::WithFreqs)
        };
        let Some(base) = plan.indexed.as_ref() else {
            return Ok(Vec::new());
        };
        let asked = if plan.scan.is_empty() { limit } else { self.sids.len().max(1) };
        let mut ids = Vec::new();
        for (_, a) in searcher.search(base.as_ref(), &TopDocs::with_limit(asked).order_by_score())? {
            if ids.len() == limit {
                break;
            }
            if plan.scan.is_empty() || self.holds(&searcher, a, &plan.scan)? {
                ids.push(self.sids[self.row(&searcher, a)?].clone());
            }
        }
        Ok(ids)
    }

    fn answer(&mut self, req: &Value) -> Result<Value> {
        let q = req["q"].as_str().ok_or("a request without a query")?;
        if req["rank"].as_str() == Some("bm25") {
            let words = match req["tok"].as_str() {
                Some("words") => true,
                Some("trigram") | None => false,
                Some(other) => return Err(format!("no tokenizer {other:?}").into()),
            };
            let limit = req["limit"].as_u64().unwrap_or(LIMIT as u64) as usize;
            let t = Instant::now();
            let ids = self.bm25(q, words, limit)?;
            return Ok(json!({"ms": t.elapsed().as_secs_f64() * 1e3, "ids": ids}));
        }
        let full = req["full"].as_bool().unwrap_or(false);
        let t = Instant::now();
        let searcher = self.reader.searcher();
        let plan = plan(q, &self.fields, &mut self.analyzer);
        if plan.indexed.is_none() && plan.scan.is_empty() {
            // A blank query finds nothing.
            let ms = t.elapsed().as_secs_f64() * 1e3;
            return Ok(if full { json!({"ms": ms, "ids": []}) } else { json!({"ms": ms, "n": 0}) });
        }
        let base: Box<dyn Query> =
            plan.indexed.as_ref().map_or_else(|| Box::new(AllQuery) as Box<dyn Query>, |q| q.box_clone());
        if full {
            let mut rows = Vec::new();
            for a in searcher.search(base.as_ref(), &DocSetCollector)? {
                if plan.scan.is_empty() || self.holds(&searcher, a, &plan.scan)? {
                    rows.push(self.row(&searcher, a)?);
                }
            }
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let ids: Vec<&str> = rows.iter().map(|&r| self.sids[r].as_str()).collect();
            return Ok(json!({"ms": ms, "ids": ids}));
        }
        let cwd = req["cwd"].as_str().unwrap_or("");
        let mut found = self.ranked(&searcher, base.as_ref(), &plan, true, cwd, LIMIT)?;
        if found.len() < LIMIT {
            let rest = self.ranked(&searcher, base.as_ref(), &plan, false, cwd, LIMIT - found.len())?;
            found.extend(rest);
        }
        if req["text"].as_bool() == Some(true) {
            // What a snippet needs at least: each result's text, and where
            // the first word is in it.
            let first = fold(q.split_whitespace().next().unwrap_or(""));
            for &a in &found {
                let doc: TantivyDocument = searcher.doc(a)?;
                let body = fold(doc.get_first(self.fields.body).and_then(|v| v.as_str()).unwrap_or(""));
                std::hint::black_box(body.find(first.as_str()));
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(json!({"ms": ms, "n": found.len()}))
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, export, dir] = &args[..] else {
        return Err("usage: tantivy-peer <export.jsonl> <index dir>".into());
    };
    let (export, dir) = (PathBuf::from(export), PathBuf::from(dir));
    let keep = std::env::var_os("DSR_FTS5_KEEP_DB").is_some();
    let figures_path = PathBuf::from(format!("{}.built.json", dir.display()));
    let (hash, sids, text) = read_export(&export)?;
    let (schema, fields) = schema();
    let kept: Option<Value> = if keep {
        std::fs::read(&figures_path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(|v| v["sha256"] == hash.as_str() && v["schema"] == SCHEMA && dir.is_dir())
    } else {
        None
    };
    let (index, figures) = match kept {
        Some(v) => {
            let index = Index::open_in_dir(&dir)?;
            index.tokenizers().register(TRIGRAMS, analyzer()?);
            (index, json!({"build_s": v["build_s"], "optimize_s": v["optimize_s"], "reused": true}))
        }
        None => {
            drop(std::fs::remove_file(&figures_path));
            let (index, build_s, optimize_s) = build(&dir, &export, &fields, schema)?;
            if keep {
                let v = json!({"sha256": hash, "schema": SCHEMA, "build_s": build_s, "optimize_s": optimize_s});
                std::fs::write(&figures_path, v.to_string())?;
            }
            (index, json!({"build_s": build_s, "optimize_s": optimize_s, "reused": false}))
        }
    };
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let words = index.tokenizers().get("default").ok_or("no default tokenizer")?;
    let mut peer = Peer { reader, fields, analyzer: analyzer()?, words, sids };
    let mut first = figures;
    first["db_bytes"] = json!(dir_bytes(&dir)?);
    first["text_bytes"] = json!(text);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "{first}")?;
    out.flush()?;
    for line in std::io::stdin().lock().lines() {
        let req: Value = serde_json::from_str(&line?)?;
        writeln!(out, "{}", peer.answer(&req)?)?;
        out.flush()?;
    }
    drop(peer);
    drop(index);
    if !keep {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
