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

/// A surface snapshot read under a byte budget
/// ([`SessionQuery::read_surface_within`](crate::host::SessionQuery::read_surface_within)):
/// the snapshot, without the oldest messages retention certainly drops
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
/// ([`SessionQuery::read_surface_items`](crate::host::SessionQuery::read_surface_items)):
/// its surface whole, to be projected as any snapshot is, or its item
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
/// [`SessionQuery::read_surface_for_projection`](crate::host::SessionQuery::read_surface_for_projection)'s
/// snapshot), never all held at once.
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
