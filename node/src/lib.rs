//! placeholder

pub mod wire;
