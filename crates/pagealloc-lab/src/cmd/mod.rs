//! One module per verb of the `pagealloc` command.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod exercise;
pub mod explore;
pub mod machines;
pub mod plot;
pub mod presets;
pub mod replay;
pub mod reproduce;
pub mod run;
pub mod sizing;
pub mod stress;
pub mod validate;
pub mod workloads;
