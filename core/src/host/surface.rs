//! A surface snapshot as a host delivers it ([`SurfaceData`]) and the one
//! way to project it, whatever its shape ([`with_projection`]).

use std::sync::Arc;

use serde_json::Value;

use crate::conversation::Conversation;
use crate::projection::{project_json, Projection};
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
