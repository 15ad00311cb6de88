//! `pagealloc-slab`: a SLUB-like slab layer over [`pagealloc::PageAllocator`]. This first
//! part holds SLUB's sizing rules ([`order`]) and the errors ([`error`]).

#![no_std]
#![warn(missing_docs)]

extern crate alloc;

pub mod error;
pub mod order;

pub use crate::error::SlabError;
pub use crate::order::{OrderObjects, OrderRule, SlubConfig};
