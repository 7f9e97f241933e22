//! A surface snapshot as a host delivers it ([`SurfaceData`]) and the one
//! way to project it, whatever its shape ([`with_projection`]).

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use crate::conversation::Conversation;
use crate::error::HostError;
use crate::projection::{project_json, Item, Projection};
use crate::retention::Elided;

/// Bytes of a JSON document owned by someone else (a `Vec<u8>`, a Python
/// `bytes`, a Node `Buffer`, a memory map). Lets a snapshot reach the parser
/// without a copy.
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A surface snapshot (docs/contract.md §1) as a host delivers it: either JSON text
/// (fastest for big sessions; parsed with a typed, borrowing parser that
/// skips what projection drops) or an already-built JSON value.
#[derive(Clone)]
pub enum SurfaceData {
    /// The snapshot as UTF-8 JSON text.
    Json(SharedBytes),
    /// The snapshot as a JSON value.
    Value(Arc<Value>),
    /// A conversation that is already projected (a source that reads
    /// another agent's transcript): rendered as it is, with no JSON in
    /// between.
    Conversation(Arc<Conversation>),
}

impl SurfaceData {
    /// Snapshot JSON text held in any shareable byte container.
    pub fn json(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> Self {
        SurfaceData::Json(Arc::new(bytes))
    }
}

/// What a surface read asks for
/// ([`SessionQuery::read_surface_as`](crate::host::SessionQuery::read_surface_as)).
/// Each kind may leave out what the one before it may not, and must
/// project (or retain) exactly as the whole snapshot does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SurfaceRead {
    /// The surface snapshot as the source gives it.
    Whole,
    /// The snapshot as the library reads it to project it (a page, a
    /// conversation, an excerpt): it may leave out the events projection
    /// drops (`projection::may_project`), which are most of an agent's log
    /// (tool output).
    ForProjection,
    /// The snapshot for a whole-session reference retained under this many
    /// bytes: it may leave out, besides what
    /// [`ForProjection`](Self::ForProjection) may, the oldest messages
    /// retention certainly drops under that budget
    /// (`retention::certainly_dropped`), and say so in
    /// [`SurfaceAnswer::elided`]. A source that reads a long log keeps what
    /// the budget can keep, not the log.
    Within(u64),
    /// The projected items as the search index reads them: the
    /// [`ForProjection`](Self::ForProjection) snapshot, or the items read
    /// one at a time ([`SurfaceItems::Streamed`]), exactly the items that
    /// snapshot projects to. A source that reads a long log indexes it
    /// holding one item at a time, not its surface.
    Items,
}

/// The answer to a surface read
/// ([`SessionQuery::read_surface_as`](crate::host::SessionQuery::read_surface_as)):
/// the snapshot (or, to a [`SurfaceRead::Items`] read only, its items
/// streamed), what a [`SurfaceRead::Within`] read left out, and the
/// session's title when the read learned it on the way (a source whose
/// title is read from the same file as its surface gives it here, so that
/// a page is one read of that file).
#[derive(Debug)]
#[non_exhaustive]
pub struct SurfaceAnswer {
    /// The snapshot, whole or streamed.
    pub surface: SurfaceItems,
    /// The messages left out (none but to a [`SurfaceRead::Within`] read).
    pub elided: Elided,
    /// The session's latest title as [`read_title`](crate::host::SessionQuery::read_title)
    /// would give it now, when the read learned it (`Some(None)`: it has
    /// none); `None` when the read did not learn it.
    pub title: Option<Option<String>>,
}

impl SurfaceAnswer {
    /// A whole snapshot: nothing left out, no title learned.
    pub fn whole(data: SurfaceData) -> Self {
        SurfaceAnswer { surface: SurfaceItems::Whole(data), elided: Elided::default(), title: None }
    }

    /// A snapshot read under a budget, with what it left out.
    pub fn within(read: BudgetedSurface) -> Self {
        SurfaceAnswer { surface: SurfaceItems::Whole(read.data), elided: read.elided, title: None }
    }

    /// Items, whole or streamed.
    pub fn items(items: SurfaceItems) -> Self {
        SurfaceAnswer { surface: items, elided: Elided::default(), title: None }
    }

    /// This answer with the session's title, as the read learned it.
    pub fn with_title(mut self, title: Option<String>) -> Self {
        self.title = Some(title);
        self
    }

    /// The snapshot; an error for streamed items (a source may stream only
    /// to a [`SurfaceRead::Items`] read).
    pub fn into_data(self) -> Result<SurfaceData, HostError> {
        self.into_budgeted().map(|read| read.data)
    }

    /// The snapshot and what it left out; an error for streamed items (a
    /// source may stream only to a [`SurfaceRead::Items`] read).
    pub fn into_budgeted(self) -> Result<BudgetedSurface, HostError> {
        match self.surface {
            SurfaceItems::Whole(data) => Ok(BudgetedSurface { data, elided: self.elided }),
            SurfaceItems::Streamed(_) => {
                Err(HostError::new("the source streamed items where a snapshot was asked for"))
            }
        }
    }
}

/// A surface snapshot read under a byte budget
/// (a [`SurfaceRead::Within`] read): the snapshot, without the oldest messages retention certainly drops
/// under that budget, and what was left out, which still counts as dropped.
#[derive(Clone, Debug)]
pub struct BudgetedSurface {
    /// The snapshot (whole, or without the elided messages).
    pub data: SurfaceData,
    /// The messages left out (none for a whole snapshot).
    pub elided: Elided,
}

impl BudgetedSurface {
    /// A whole snapshot: nothing left out.
    pub fn whole(data: SurfaceData) -> Self {
        BudgetedSurface { data, elided: Elided::default() }
    }
}

/// A session's projected items as the search index reads them to index
/// the session
/// (a [`SurfaceRead::Items`] read): its surface whole, to be projected as any snapshot is, or its item
/// items read one at a time, as often as the index needs to go over them.
pub enum SurfaceItems {
    /// The surface snapshot, projected whole.
    Whole(SurfaceData),
    /// The items, streamed.
    Streamed(Box<dyn StreamedItems>),
}

impl std::fmt::Debug for SurfaceItems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SurfaceItems::Whole(data) => f.debug_tuple("SurfaceItems::Whole").field(data).finish(),
            SurfaceItems::Streamed(_) => f.write_str("SurfaceItems::Streamed"),
        }
    }
}

/// A session's projected items, read one at a time: the items projecting
/// the session's surface gives (the same items, in the same order, with
/// the same texts, as projecting
/// the [`SurfaceRead::ForProjection`] snapshot), never all held at once.
pub trait StreamedItems: Send {
    /// Calls `f` with each item in order until it breaks; every call goes
    /// over them again from the first. An error when they cannot be given
    /// as the read that made this found them (the log changed since, or
    /// its projection fails): the caller then reads the surface whole,
    /// which says what the session holds now.
    fn each_item(&mut self, f: &mut dyn FnMut(&Item<'_>) -> ControlFlow<()>) -> Result<ControlFlow<()>, HostError>;
}

impl std::fmt::Debug for SurfaceData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SurfaceData::Json(b) => write!(f, "SurfaceData::Json({} bytes)", (**b).as_ref().len()),
            SurfaceData::Value(v) => f.debug_tuple("SurfaceData::Value").field(v).finish(),
            SurfaceData::Conversation(c) => {
                write!(f, "SurfaceData::Conversation({:?}, {} items)", c.session_id, c.items.len())
            }
        }
    }
}

impl From<Value> for SurfaceData {
    fn from(v: Value) -> Self {
        SurfaceData::Value(Arc::new(v))
    }
}

impl From<Conversation> for SurfaceData {
    fn from(c: Conversation) -> Self {
        SurfaceData::Conversation(Arc::new(c))
    }
}

impl From<Vec<u8>> for SurfaceData {
    fn from(v: Vec<u8>) -> Self {
        SurfaceData::json(v)
    }
}

impl From<String> for SurfaceData {
    fn from(v: String) -> Self {
        SurfaceData::json(v.into_bytes())
    }
}

/// Runs `f` on the projection of a surface (one projection for every
/// shape: JSON text, a JSON value written out, or a conversation).
pub(crate) fn with_projection<T>(
    data: &SurfaceData,
    f: impl FnOnce(Projection<'_>) -> T,
) -> std::result::Result<T, String> {
    let written;
    let projection = match data {
        SurfaceData::Json(bytes) => project_json((**bytes).as_ref())?,
        SurfaceData::Value(v) => {
            written = crate::json::stringify(v);
            project_json(written.as_bytes())?
        }
        SurfaceData::Conversation(c) => c.projection(),
    };
    Ok(f(projection))
}
