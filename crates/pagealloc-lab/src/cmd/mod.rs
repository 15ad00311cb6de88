//! One module per verb of the `pagealloc` command.

pub mod bench;
pub mod exercise;
pub mod machines;
pub mod presets;
pub mod sizing;
