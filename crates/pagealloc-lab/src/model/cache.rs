//! The last-level-cache model: which pages a CPU finds hot when it touches them.
//!
//! One model per LLC (the CPUs that share a cache): a page is hot for an LLC if that LLC
//! touched it last and fewer than the LLC's capacity in pages were touched there since. That
//! is LRU measured in touches rather than distinct pages (a page touched twice counts twice
//! against the capacity), so it errs towards "cold"; with pages touched once or twice per
//! lifetime, as the seeds' workloads do, the two agree closely. A touch from another LLC
//! takes the page over (a write invalidates the other socket's copy).
//!
//! This is the lab's "cache miss rate%" — a proxy for the seeds' perf figure, counting pages
//! rather than cache lines, and only the pages the workload touches (no instructions, no
//! kernel metadata).

/// Bits of a stamp word that hold the touch counter; the top byte holds the LLC + 1 (0 =
/// never touched).
const STAMP_BITS: u32 = 56;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

/// Every LLC's touch clock and every frame's last touch.
#[derive(Debug)]
pub struct LlcModel {
    /// Per frame number: (LLC + 1) << 56 | that LLC's touch counter at the last touch. Zeroed
    /// memory is never touched, so the OS maps it lazily: untouched frames cost nothing.
    last: Vec<u64>,
    /// Per LLC: pages touched so far.
    clock: Vec<u64>,
    /// Per LLC: capacity in pages.
    capacity: Vec<u64>,
    /// Pages found hot / cold so far.
    hot: u64,
    cold: u64,
}

impl LlcModel {
    /// A model for frames `0..nr_frames` and LLCs of the given capacities (bytes).
    pub fn new(nr_frames: u64, llc_bytes: &[u64]) -> LlcModel {
        assert!(llc_bytes.len() < 255, "at most 254 LLCs fit the stamp's top byte");
        LlcModel {
            last: vec![0; nr_frames as usize],
            clock: vec![0; llc_bytes.len()],
            capacity: llc_bytes.iter().map(|b| b / 4096).collect(),
            hot: 0,
            cold: 0,
        }
    }

    /// LLC `llc` touches frames `first..first + n`; returns how many were cold. Frames past
    /// the model's end count as cold.
    pub fn touch(&mut self, llc: usize, first: u64, n: u64) -> u64 {
        let tag = (llc as u64 + 1) << STAMP_BITS;
        let cap = self.capacity[llc];
        let mut cold = 0;
        for f in first..first + n {
            let now = self.clock[llc];
            self.clock[llc] = now + 1;
            let Some(slot) = self.last.get_mut(f as usize) else {
                cold += 1;
                continue;
            };
            let last = *slot;
            // Hot if fewer than `cap` other touches came in between.
            let hot = last & !STAMP_MASK == tag && now - (last & STAMP_MASK) <= cap;
            if !hot {
                cold += 1;
            }
            *slot = tag | (now & STAMP_MASK);
        }
        self.cold += cold;
        self.hot += n - cold;
        cold
    }

    /// Pages found hot and cold so far.
    pub fn totals(&self) -> (u64, u64) {
        (self.hot, self.cold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_stays_hot_until_capacity_pages_were_touched_since() {
        // One LLC of 4 pages.
        let mut m = LlcModel::new(100, &[4 * 4096]);
        assert_eq!(m.touch(0, 10, 1), 1, "first touch is cold");
        assert_eq!(m.touch(0, 10, 1), 0, "immediately again: hot");
        // Three other pages: page 10 is then the 4th most recent, still inside 4 pages.
        assert_eq!(m.touch(0, 20, 3), 3);
        assert_eq!(m.touch(0, 10, 1), 0);
        // Four others push it out.
        m.touch(0, 30, 4);
        assert_eq!(m.touch(0, 10, 1), 1);
        assert_eq!(m.totals(), (2, 9));
    }

    #[test]
    fn another_llc_takes_the_page_over() {
        let mut m = LlcModel::new(16, &[64 * 4096, 64 * 4096]);
        m.touch(0, 5, 1);
        assert_eq!(m.touch(1, 5, 1), 1, "cold for the other socket");
        assert_eq!(m.touch(0, 5, 1), 1, "and now cold for the first");
        assert_eq!(m.touch(0, 5, 1), 0);
    }

    #[test]
    fn frames_outside_the_model_are_cold() {
        let mut m = LlcModel::new(4, &[64 * 4096]);
        assert_eq!(m.touch(0, 3, 3), 3);
        assert_eq!(m.touch(0, 3, 3), 2, "frame 3 is hot now, 4 and 5 lie outside");
    }
}
