//! Placeholder until the python front lands.
