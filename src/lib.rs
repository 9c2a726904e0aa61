//! ebb
