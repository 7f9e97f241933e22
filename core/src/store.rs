//! The embedded DSH session store under its first name: the same items as
//! [`crate::sources::dsh`], re-exported unchanged, so that
//! `dsh_session_reference::store::DshStore`, `store::layout::…` and every
//! other path keep working. New code names [`crate::sources::dsh`].

pub use crate::sources::dsh::*;
