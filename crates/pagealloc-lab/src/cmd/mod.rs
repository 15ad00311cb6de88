//! One module per verb of the `pagealloc` command.

pub mod exercise;
