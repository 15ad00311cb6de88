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
//!
//! The same structure, one "cache" per L2 domain with the L2's capacity, tells which pages
//! are still in a core's private L2, where the machine prices those (`write_l2_gbps`).

/// Where [`LlcModel::touch_page`] found a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// In the touching cache.
    Hot,
    /// In another cache of the model, the one that touched it last.
    Elsewhere,
    /// In none: never touched, or aged out of the cache that touched it last.
    Cold,
}

/// Every LLC's touch clock and every frame's last touch.
///
/// A frame's stamp is one 32-bit word, `(LLC + 1) << counter_bits | that LLC's clock at the
/// touch`: half the size of a 64-bit stamp, so twice as many of the hot frames' stamps fit the
/// host's own cache (the model is bound by cache misses on these arrays). The clocks are kept
/// small by renormalising: when an LLC's clock reaches the counter's top, every stamp of that
/// LLC is rewritten relative to a lower clock, and a stamp older than the capacity (cold
/// either way) is cleared. A page's age in touches is kept exactly, so the answers are those
/// of an unbounded clock.
#[derive(Debug)]
pub struct LlcModel {
    /// Per frame number: the stamp of its last touch, 0 if never touched. Zeroed memory is
    /// never touched, so the OS maps it lazily: untouched frames cost nothing.
    last: Vec<u32>,
    /// Bits of a stamp that hold the clock; the rest hold the LLC + 1.
    counter_bits: u32,
    /// Per LLC: its clock, in `0..1 << counter_bits`.
    clock: Vec<u32>,
    /// Per LLC: capacity in pages (below half the clock's range).
    capacity: Vec<u32>,
    /// Pages found hot / cold so far.
    hot: u64,
    cold: u64,
}

impl LlcModel {
    /// A model for frames `0..nr_frames` and LLCs of the given capacities (bytes).
    pub fn new(nr_frames: u64, llc_bytes: &[u64]) -> anyhow::Result<LlcModel> {
        let n = llc_bytes.len();
        if n >= 1 << 16 {
            anyhow::bail!("{n} LLCs: the cache model handles at most 65,535");
        }
        // Room for LLC + 1 in the top bits; the rest is the clock.
        let tag_bits = (usize::BITS - n.leading_zeros()).max(1);
        LlcModel::with_counter_bits(nr_frames, llc_bytes, 32 - tag_bits)
    }

    /// [`LlcModel::new`] with a clock of `counter_bits` bits (tests use a small one to make
    /// renormalising frequent).
    fn with_counter_bits(
        nr_frames: u64,
        llc_bytes: &[u64],
        counter_bits: u32,
    ) -> anyhow::Result<LlcModel> {
        let n = llc_bytes.len();
        let mut capacity = Vec::with_capacity(n);
        for &bytes in llc_bytes {
            let pages = bytes / 4096;
            // Renormalising must leave room to count: capacity below half the range.
            if pages >= 1 << (counter_bits - 1) {
                anyhow::bail!(
                    "an LLC of {bytes} bytes is too large for the cache model of {n} LLCs \
                     (at most {} pages each)",
                    (1u64 << (counter_bits - 1)) - 1
                );
            }
            capacity.push(pages as u32);
        }
        Ok(LlcModel {
            last: vec![0; nr_frames as usize],
            counter_bits,
            clock: vec![0; n],
            capacity,
            hot: 0,
            cold: 0,
        })
    }

    /// A hint to the host that frame `frame`'s stamp will be read soon (the model's own
    /// speed; it changes nothing in the run).
    #[inline]
    pub fn prefetch(&self, frame: u64) {
        if let Some(s) = self.last.get(frame as usize) {
            crate::heap::prefetch(s);
        }
    }

    /// LLC `llc` touches frames `first..first + n`; returns how many were cold. Frames past
    /// the model's end count as cold.
    pub fn touch(&mut self, llc: usize, first: u64, n: u64) -> u64 {
        let tag = (llc as u32 + 1) << self.counter_bits;
        let mask = (1u32 << self.counter_bits) - 1;
        let cap = self.capacity[llc];
        let mut cold = 0;
        for f in first..first + n {
            if self.clock[llc] == mask {
                self.renormalise(llc);
            }
            let now = self.clock[llc];
            self.clock[llc] = now + 1;
            let Some(slot) = self.last.get_mut(f as usize) else {
                cold += 1;
                continue;
            };
            let last = *slot;
            // Hot if fewer than `cap` other touches came in between.
            let hot = last & !mask == tag && now - (last & mask) <= cap;
            if !hot {
                cold += 1;
            }
            *slot = tag | now;
        }
        self.cold += cold;
        self.hot += n - cold;
        cold
    }

    /// Cache `llc` touches frame `f` ([`touch`](Self::touch) of one frame), and says where it
    /// was: in this cache, in another one of the model that touched it last and still holds
    /// it (with one "cache" per core's L2, another core's L2), or in none.
    pub fn touch_page(&mut self, llc: usize, f: u64) -> Seen {
        let mask = (1u32 << self.counter_bits) - 1;
        if self.clock[llc] == mask {
            self.renormalise(llc);
        }
        let now = self.clock[llc];
        self.clock[llc] = now + 1;
        let tag = (llc as u32 + 1) << self.counter_bits;
        let Some(slot) = self.last.get_mut(f as usize) else {
            self.cold += 1;
            return Seen::Cold;
        };
        let last = *slot;
        *slot = tag | now;
        let seen = match (last >> self.counter_bits) as usize {
            0 => Seen::Cold,
            owner if owner - 1 == llc => {
                if now - (last & mask) <= self.capacity[llc] {
                    Seen::Hot
                } else {
                    Seen::Cold
                }
            }
            owner => {
                // Its stamp is on the other cache's clock, which renormalising keeps exact.
                let other = owner - 1;
                if self.clock[other] - (last & mask) <= self.capacity[other] {
                    Seen::Elsewhere
                } else {
                    Seen::Cold
                }
            }
        };
        if seen == Seen::Hot {
            self.hot += 1;
        } else {
            self.cold += 1;
        }
        seen
    }

    /// LLC `llc` took `pages` pages' worth of other data (no frame of the model): every
    /// frame's age there grows by `pages`, as if that many other pages were touched.
    pub fn advance(&mut self, llc: usize, pages: u64) {
        let mask = (1u32 << self.counter_bits) - 1;
        let cap = self.capacity[llc];
        // Past the capacity every frame of this LLC is cold whatever the step, so one step
        // of `cap + 1` says it all and keeps the clock in range.
        let k = pages.min(u64::from(cap) + 1) as u32;
        if mask - self.clock[llc] < k {
            // After renormalising the clock is `cap`, and `cap + k <= 2 cap + 1 <= mask`.
            self.renormalise(llc);
        }
        self.clock[llc] += k;
    }

    /// Move LLC `llc`'s clock down to its capacity, keeping the age of every stamp that can
    /// still be hot and clearing the others. Runs once per `range - capacity` touches of the
    /// LLC and walks every frame.
    #[cold]
    #[inline(never)]
    fn renormalise(&mut self, llc: usize) {
        let tag = (llc as u32 + 1) << self.counter_bits;
        let mask = (1u32 << self.counter_bits) - 1;
        let now = self.clock[llc];
        let cap = self.capacity[llc];
        // New clock `cap`: an age of at most `cap` maps to a stamp of at least 0.
        for slot in self.last.iter_mut() {
            if *slot & !mask == tag {
                let age = now - (*slot & mask);
                *slot = if age <= cap { tag | (cap - age) } else { 0 };
            }
        }
        self.clock[llc] = cap;
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
        let mut m = LlcModel::new(100, &[4 * 4096]).unwrap();
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
    fn other_data_ages_the_pages_as_touches_would() {
        let mut m = LlcModel::new(100, &[4 * 4096]).unwrap();
        m.touch(0, 10, 1);
        m.advance(0, 3);
        assert_eq!(m.touch(0, 10, 1), 0, "three pages of other data: still inside 4 pages");
        m.advance(0, 4);
        assert_eq!(m.touch(0, 10, 1), 1, "four push it out");
        // A step far beyond the capacity, near the clock's top: cold, and the clock stays
        // in range (a small clock renormalises on the way).
        let mut m = LlcModel::with_counter_bits(100, &[4 * 4096], 4).unwrap();
        for _ in 0..40 {
            m.touch(0, 10, 1);
            m.advance(0, 1_000);
            assert_eq!(m.touch(0, 10, 1), 1);
            assert_eq!(m.touch(0, 10, 1), 0);
        }
    }

    /// `touch_page` answers as `touch` does for the toucher, and tells a frame that another
    /// cache touched last and still holds from one that cache has aged out.
    #[test]
    fn a_page_another_cache_still_holds_is_seen_there() {
        let mut m = LlcModel::new(64, &[4 * 4096, 4 * 4096]).unwrap();
        assert_eq!(m.touch_page(0, 5), Seen::Cold, "never touched");
        assert_eq!(m.touch_page(0, 5), Seen::Hot);
        assert_eq!(m.touch_page(1, 5), Seen::Elsewhere, "cache 0 wrote it a moment ago");
        assert_eq!(m.touch_page(0, 5), Seen::Elsewhere, "and now cache 1 holds it");
        // Cache 1 moves on by four other pages: page 5 is no longer there.
        m.touch(1, 10, 4);
        assert_eq!(m.touch_page(0, 5), Seen::Hot, "cache 0 wrote it last and still holds it");
        m.touch(0, 20, 4);
        assert_eq!(m.touch_page(1, 5), Seen::Cold, "aged out of cache 0");
        assert_eq!(m.touch_page(1, 100), Seen::Cold, "past the model's frames");
        assert_eq!(m.totals(), (2, 13));
        // Against `touch`: the same clocks and stamps, so the same hot answers.
        let mut a = LlcModel::with_counter_bits(50, &[8 * 4096, 3 * 4096], 6).unwrap();
        let mut b = LlcModel::with_counter_bits(50, &[8 * 4096, 3 * 4096], 6).unwrap();
        let mut rng = pagealloc_testkit::rng::Rng::new(3);
        for _ in 0..5_000 {
            let (c, f) = (rng.below(2) as usize, rng.below(20));
            assert_eq!(a.touch(c, f, 1) == 0, b.touch_page(c, f) == Seen::Hot, "frame {f}");
        }
        assert_eq!(a.totals(), b.totals());
    }

    #[test]
    fn another_llc_takes_the_page_over() {
        let mut m = LlcModel::new(16, &[64 * 4096, 64 * 4096]).unwrap();
        m.touch(0, 5, 1);
        assert_eq!(m.touch(1, 5, 1), 1, "cold for the other socket");
        assert_eq!(m.touch(0, 5, 1), 1, "and now cold for the first");
        assert_eq!(m.touch(0, 5, 1), 0);
    }

    /// The obvious model with unbounded clocks, to check the renormalised one against.
    struct Reference {
        last: Vec<Option<(usize, u64)>>,
        clock: Vec<u64>,
        capacity: Vec<u64>,
    }

    impl Reference {
        fn touch(&mut self, llc: usize, f: usize) -> bool {
            let now = self.clock[llc];
            self.clock[llc] += 1;
            let hot =
                matches!(self.last[f], Some((l, t)) if l == llc && now - t <= self.capacity[llc]);
            self.last[f] = Some((llc, now));
            !hot
        }
    }

    #[test]
    fn renormalising_keeps_every_answer_of_an_unbounded_clock() {
        // A clock of 8 bits (256 touches) renormalises every ≈ 200 touches of an LLC.
        let caps = [40u64, 9, 100];
        let bytes: Vec<u64> = caps.iter().map(|c| c * 4096).collect();
        let mut m = LlcModel::with_counter_bits(300, &bytes, 8).unwrap();
        let mut r = Reference { last: vec![None; 300], clock: vec![0; 3], capacity: caps.to_vec() };
        let mut rng = pagealloc_testkit::rng::Rng::new(7);
        let (mut colds, mut renorms) = (0u64, 0u32);
        for _ in 0..200_000 {
            let llc = rng.below(3) as usize;
            // Mostly a small working set, sometimes anywhere: both hot and cold answers.
            let f = if rng.below(4) == 0 { rng.below(300) } else { rng.below(60) } as usize;
            let before = m.clock[llc];
            let cold = m.touch(llc, f as u64, 1);
            renorms += u32::from(m.clock[llc] <= before);
            assert_eq!(cold == 1, r.touch(llc, f), "touch of frame {f} by LLC {llc}");
            colds += cold;
        }
        assert!(renorms > 100, "the clock wrapped only {renorms} times");
        assert!(colds > 10_000 && colds < 190_000, "{colds} cold: the test should see both");
    }

    #[test]
    fn an_llc_too_large_for_the_clock_is_refused() {
        assert!(LlcModel::with_counter_bits(10, &[128 * 4096], 8).is_err());
        assert!(LlcModel::with_counter_bits(10, &[127 * 4096], 8).is_ok());
        assert!(LlcModel::new(10, &vec![4096; 1 << 16]).is_err());
    }

    #[test]
    fn frames_outside_the_model_are_cold() {
        let mut m = LlcModel::new(4, &[64 * 4096]).unwrap();
        // A prefetch hint, inside the model or past its end, changes nothing.
        for f in 0..8 {
            m.prefetch(f);
        }
        assert_eq!(m.touch(0, 3, 3), 3);
        assert_eq!(m.touch(0, 3, 3), 2, "frame 3 is hot now, 4 and 5 lie outside");
    }
}
