//! The names the resolver had before each operation took one options
//! struct and before one blocking facade ([`block_on`]) replaced a
//! `*_blocking` twin per method. Thin wrappers, kept for one release.

use serde_json::Value;

use super::{CandidateOptions, PrepareOptions, Reference, Resolver};
use crate::cancel::CancelToken;
use crate::context::{Prepared, PreparedMessage};
use crate::error::Result;
use crate::host::{Candidate, SearchOptions, SearchResult, Target};
use crate::runtime::block_on;

#[allow(missing_docs)]
impl Resolver {
    #[deprecated(since = "0.2.0", note = "use `block_on(resolver.prepare(…, &PrepareOptions::default(), cancel))`")]
    pub fn prepare_blocking(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        block_on(self.prepare(target, content, references, &PrepareOptions::default(), cancel))
    }

    #[deprecated(since = "0.2.0", note = "use `prepare` with `PrepareOptions::default().with_context_window(…)`")]
    pub async fn prepare_for_context_window(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        context_window: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        let options = PrepareOptions::default().with_context_window(context_window);
        self.prepare(target, content, references, &options, cancel).await
    }

    #[deprecated(since = "0.2.0", note = "use `block_on` and `prepare` with `PrepareOptions::with_context_window`")]
    pub fn prepare_for_context_window_blocking(
        &self,
        target: &Target,
        content: &Value,
        references: &[Value],
        context_window: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        let options = PrepareOptions::default().with_context_window(context_window);
        block_on(self.prepare(target, content, references, &options, cancel))
    }

    #[deprecated(since = "0.2.0", note = "use `prepare_planned` with `PrepareOptions::with_context_window`")]
    pub async fn prepare_planned_for(
        &self,
        content: Value,
        refs: Vec<Reference>,
        context_window: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Prepared> {
        let options = PrepareOptions::default().with_context_window(context_window);
        self.prepare_planned(content, refs, &options, cancel).await
    }

    #[deprecated(
        since = "0.2.0",
        note = "use `block_on(resolver.prepare_messages(…, &PrepareOptions::default(), cancel))`"
    )]
    pub fn prepare_messages_blocking(
        &self,
        target: &Target,
        messages: &[Value],
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<PreparedMessage>> {
        block_on(self.prepare_messages(target, messages, &PrepareOptions::default(), cancel))
    }

    #[deprecated(since = "0.2.0", note = "use `candidates` with `CandidateOptions::default().without_mentions()`")]
    pub async fn list_candidates(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let options = CandidateOptions::default().with_limit(limit).without_mentions();
        self.candidates(target, filter, &options, cancel).await
    }

    #[deprecated(since = "0.2.0", note = "use `block_on` and `candidates` with `CandidateOptions::without_mentions`")]
    pub fn list_candidates_blocking(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        let options = CandidateOptions::default().with_limit(limit).without_mentions();
        block_on(self.candidates(target, filter, &options, cancel))
    }

    #[deprecated(
        since = "0.2.0",
        note = "use `block_on(resolver.candidates(…, &CandidateOptions::default(), cancel))`"
    )]
    pub fn candidates_blocking(
        &self,
        target: &Target,
        filter: &str,
        limit: Option<u64>,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<Candidate>> {
        block_on(self.candidates(target, filter, &CandidateOptions::default().with_limit(limit), cancel))
    }

    #[deprecated(since = "0.2.0", note = "use `block_on(resolver.search(…))`")]
    pub fn search_blocking(
        &self,
        target: &Target,
        query: &str,
        options: &SearchOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<Vec<SearchResult>> {
        block_on(self.search(target, query, options, cancel))
    }
}
