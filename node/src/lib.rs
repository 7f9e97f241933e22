//! Placeholder until the node front lands.
