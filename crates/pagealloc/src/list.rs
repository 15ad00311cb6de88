//! Intrusive doubly-linked lists threaded through the mem_map by frame index: O(1) push and
//! pop at both ends and O(1) unlink of any member, with no pointers and no allocation.
//!
//! A list does not know which lock protects it; the struct that embeds it says so. Every
//! operation takes the frame array the indices refer to, or a lookup into it (the `*_with`
//! forms: a checked index, or on the hit paths an unchecked one, `hot.rs`).

use crate::mem_map::{Frame, NIL};

/// Head of an index-linked list. Invariant: `len` equals the number of members, the head and
/// the tail are `NIL` iff `len == 0`, the head's prev and the tail's next are `NIL`.
///
/// The head and the tail are stored complemented, as the frames' links are
/// ([`Frame`]'s `prev` and `next`), and read through [`first`](Self::first) and
/// [`last`](Self::last): an empty list is all zeros, and a list end's NIL test is a test
/// against 0, which needs no register for a 32-bit all-ones constant in the loops that
/// compare an index they have also widened to address its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListHead {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for ListHead {
    fn default() -> ListHead {
        ListHead::new()
    }
}

impl ListHead {
    /// An empty list.
    pub const fn new() -> ListHead {
        ListHead { head: !NIL, tail: !NIL, len: 0 }
    }

    /// The head's index, or [`NIL`].
    #[inline(always)]
    const fn first(&self) -> u32 {
        !self.head
    }

    /// The tail's index, or [`NIL`].
    #[inline(always)]
    const fn last(&self) -> u32 {
        !self.tail
    }

    /// Make `idx` (or [`NIL`]) the head.
    #[inline(always)]
    fn set_first(&mut self, idx: u32) {
        self.head = !idx;
    }

    /// Make `idx` (or [`NIL`]) the tail.
    #[inline(always)]
    fn set_last(&mut self, idx: u32) {
        self.tail = !idx;
    }

    /// Number of members.
    #[inline]
    pub const fn len(&self) -> u32 {
        self.len
    }

    /// No members?
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// First member (newest for lists pushed at the head).
    #[inline]
    pub fn head(&self) -> Option<u32> {
        (self.first() != NIL).then_some(self.first())
    }

    /// Insert `idx` (not on any list) at the head. Returns the other member whose links
    /// changed (the old head), or [`NIL`]. The frames are looked up by `at`: a checked index
    /// (`|i| &map[i as usize]`) or, on the hit paths, an unchecked one (`hot.rs`).
    #[inline(always)]
    pub(crate) fn push_head_with<'m>(&mut self, at: impl Fn(u32) -> &'m Frame, idx: u32) -> u32 {
        let f = at(idx);
        self.push_head_frame_with(at, idx, f)
    }

    /// [`push_head_with`](Self::push_head_with) of `idx` whose frame `f` the caller already
    /// holds (`at(idx)`): a caller that has stored to other frames since it looked `f` up
    /// would otherwise have the list look it up again, reloading the frame table.
    #[inline(always)]
    pub(crate) fn push_head_frame_with<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
        idx: u32,
        f: &Frame,
    ) -> u32 {
        debug_assert!(core::ptr::eq(f, at(idx)));
        let old = self.first();
        f.set_prev(NIL);
        f.set_next(old);
        if old == NIL {
            self.set_last(idx);
        } else {
            at(old).set_prev(idx);
        }
        self.set_first(idx);
        self.len += 1;
        old
    }

    /// Insert `idx` (not on any list) at the tail. Returns the other member whose links
    /// changed (the old tail), or [`NIL`].
    #[inline]
    pub fn push_tail(&mut self, map: &[Frame], idx: u32) -> u32 {
        self.push_tail_with(|i| &map[i as usize], idx)
    }

    /// [`push_tail`](Self::push_tail) with the frames looked up by `at`.
    #[inline(always)]
    pub(crate) fn push_tail_with<'m>(&mut self, at: impl Fn(u32) -> &'m Frame, idx: u32) -> u32 {
        let f = at(idx);
        let old = self.last();
        f.set_next(NIL);
        f.set_prev(old);
        if old == NIL {
            self.set_first(idx);
        } else {
            at(old).set_next(idx);
        }
        self.set_last(idx);
        self.len += 1;
        old
    }

    /// Remove and return the head, and the other member whose links changed (the new head),
    /// or [`NIL`]. The removed frame's own links are left as they were: a frame on no list
    /// has meaningless links (every insertion writes both). Frames looked up by `at`.
    #[inline(always)]
    pub(crate) fn pop_head_with<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
    ) -> Option<(u32, u32)> {
        if self.is_empty() {
            return None;
        }
        Some(self.pop_head_nonempty_with(at))
    }

    /// [`pop_head_with`](Self::pop_head_with) for a list the caller has seen is not empty
    /// (the pageset hit paths test that before deciding anything), without testing it again.
    #[inline(always)]
    pub(crate) fn pop_head_nonempty_with<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
    ) -> (u32, u32) {
        debug_assert!(!self.is_empty() && self.first() != NIL);
        let idx = self.first();
        // The head's prev is NIL, so only the new head (or the tail) changes.
        let next = at(idx).next();
        self.set_first(next);
        if next == NIL {
            self.set_last(NIL);
        } else {
            at(next).set_prev(NIL);
        }
        self.len -= 1;
        (idx, next)
    }

    /// Remove and return the tail, and the other member whose links changed (the new tail),
    /// or [`NIL`].
    #[inline]
    pub fn pop_tail(&mut self, map: &[Frame]) -> Option<(u32, u32)> {
        if self.is_empty() {
            return None;
        }
        Some(self.pop_tail_nonempty_with(|i| &map[i as usize]))
    }

    /// [`pop_tail`](Self::pop_tail) of a list the caller knows is not empty (a pageset drain
    /// takes at most the blocks a list holds, counted before its first pop), without testing
    /// it again, the frames looked up by `at`. The tail's next is NIL, so only its prev is
    /// read and only the new tail (or the head) changes, as
    /// [`unlink_with`](Self::unlink_with) would leave them; the removed frame's links are
    /// left as they were. One pop per block a pageset drain frees.
    #[inline(always)]
    pub(crate) fn pop_tail_nonempty_with<'m>(
        &mut self,
        at: impl Fn(u32) -> &'m Frame,
    ) -> (u32, u32) {
        debug_assert!(!self.is_empty() && self.last() != NIL);
        let idx = self.last();
        debug_assert_eq!(at(idx).next(), NIL);
        let prev = at(idx).prev();
        self.set_last(prev);
        if prev == NIL {
            self.set_first(NIL);
        } else {
            at(prev).set_next(NIL);
        }
        self.len -= 1;
        (idx, prev)
    }

    /// Remove `idx`, which must be a member of this list. Returns the members whose links
    /// changed, `[prev, next]`, each [`NIL`] if there is none. The removed frame's own links
    /// are left as they were, as [`pop_head_with`](Self::pop_head_with) leaves them. Frames
    /// looked up by `at`.
    #[inline(always)]
    pub(crate) fn unlink_with<'m>(&mut self, at: impl Fn(u32) -> &'m Frame, idx: u32) -> [u32; 2] {
        let f = at(idx);
        let (prev, next) = (f.prev(), f.next());
        if prev == NIL {
            self.set_first(next);
        } else {
            at(prev).set_next(next);
        }
        if next == NIL {
            self.set_last(prev);
        } else {
            at(next).set_prev(prev);
        }
        self.len -= 1;
        [prev, next]
    }

    /// Iterate members from head to tail. The list must not change while iterating.
    pub fn iter<'a>(&self, map: &'a [Frame]) -> ListIter<'a> {
        ListIter { map, cur: self.first(), left: self.len }
    }
}

/// Iterator over a list's members, head first. Stops after `len` members even if the links
/// were corrupted into a cycle, so a validator walking a broken list terminates.
#[derive(Debug)]
pub struct ListIter<'a> {
    map: &'a [Frame],
    cur: u32,
    left: u32,
}

impl Iterator for ListIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.cur == NIL || self.left == 0 {
            return None;
        }
        let idx = self.cur;
        self.cur = self.map.get(idx as usize).map_or(NIL, Frame::next);
        self.left -= 1;
        Some(idx)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn collect(l: &ListHead, map: &[Frame]) -> Vec<u32> {
        l.iter(map).collect()
    }

    #[test]
    fn push_pop_unlink() {
        let map: Vec<Frame> = (0..8).map(|_| Frame::new()).collect();
        let at = |i: u32| &map[i as usize];
        let mut l = ListHead::new();
        // Each operation names the neighbours whose links it rewrote.
        assert_eq!(l.push_head_with(at, 1), NIL);
        assert_eq!(l.push_head_with(at, 2), 1);
        assert_eq!(l.push_tail(&map, 3), 1);
        assert_eq!(collect(&l, &map), [2, 1, 3]);
        assert_eq!(l.unlink_with(at, 1), [2, 3]);
        assert_eq!(collect(&l, &map), [2, 3]);
        assert_eq!(l.pop_tail(&map), Some((3, 2)));
        assert_eq!(l.pop_head_with(at), Some((2, NIL)));
        assert!(l.is_empty());
        assert_eq!(l.pop_head_with(at), None);
        assert_eq!(l, ListHead::new());
    }
}
