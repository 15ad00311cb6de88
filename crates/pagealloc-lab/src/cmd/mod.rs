//! One module per verb of the `pagealloc` command.

pub mod bench;
pub mod calibrate;
pub mod exercise;
pub mod presets;
pub mod sizing;
