//! The engine of `pagealloc bench`: the patterns, each run against any [`PageSource`], with
//! the checks that keep a broken allocator from posting a fast number.
//!
//! Every pattern does the same work per block with every allocator: allocate, write an 8-byte
//! tag (unique within the run) into the block's first bytes, later read the tag back and free.
//! A timed run checks, at a cost of a few instructions per block, that every allocation
//! succeeded, every block has the alignment its allocator promises, every tag survived until
//! the free (two live blocks sharing a start would clobber one) and every free was accepted.
//! The untimed warm-up run before the timed ones also checks that all blocks live at the same
//! time are pairwise disjoint.

use std::sync::mpsc::sync_channel;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use pagealloc_testkit::bench_mix::{mix_orders, MIX_LEN};

use crate::heap::{block_bytes, PageBlock, PageSource};

/// How a pattern uses its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Per thread, rounds of: allocate `outstanding` blocks, then free them in allocation
    /// order. With one block outstanding this is a plain alloc+free pair.
    Burst,
    /// One thread allocates batches of `outstanding` blocks and hands each batch to a second
    /// thread, which frees it.
    CrossThread,
}

/// One benchmark pattern.
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    /// Name on the command line and in the output.
    pub name: &'static str,
    /// Threads doing the work.
    pub threads: u32,
    /// Blocks live at once per thread (the batch size for cross-thread).
    pub outstanding: usize,
    /// Order of every block; `None`: uniformly random orders 0..=10, the same sequence for
    /// every allocator.
    pub order: Option<u8>,
    /// What the threads do.
    pub kind: Kind,
    /// Alloc+free pairs per thread in one timed run (before `--quick` scaling).
    pub pairs: u64,
}

/// Every pattern, in output order.
pub const PATTERNS: &[Pattern] = &[
    Pattern {
        name: "pair-1",
        threads: 1,
        outstanding: 1,
        order: Some(0),
        kind: Kind::Burst,
        pairs: 2 << 20,
    },
    Pattern {
        name: "pair-64",
        threads: 1,
        outstanding: 64,
        order: Some(0),
        kind: Kind::Burst,
        pairs: 2 << 20,
    },
    Pattern {
        name: "pair-1024",
        threads: 1,
        outstanding: 1024,
        order: Some(0),
        kind: Kind::Burst,
        pairs: 2 << 20,
    },
    Pattern {
        name: "pair-64-2t",
        threads: 2,
        outstanding: 64,
        order: Some(0),
        kind: Kind::Burst,
        pairs: 1 << 20,
    },
    Pattern {
        name: "order3-64",
        threads: 1,
        outstanding: 64,
        order: Some(3),
        kind: Kind::Burst,
        pairs: 1 << 20,
    },
    Pattern {
        name: "mix-0-10",
        threads: 1,
        outstanding: 16,
        order: None,
        kind: Kind::Burst,
        pairs: 1 << 16,
    },
    Pattern {
        name: "cross-thread",
        threads: 2,
        outstanding: 64,
        order: Some(0),
        kind: Kind::CrossThread,
        pairs: 1 << 20,
    },
];

/// The pattern called `name`.
pub fn pattern(name: &str) -> Option<&'static Pattern> {
    PATTERNS.iter().find(|p| p.name == name)
}

/// What went wrong in a run: the pattern's own answer check failed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Failures {
    /// Allocations that returned nothing.
    pub alloc_failed: u64,
    /// Blocks not aligned as the allocator promises.
    pub misaligned: u64,
    /// Blocks whose tag changed while they were live (shared or overlapping blocks).
    pub clobbered: u64,
    /// Frees the allocator refused.
    pub free_refused: u64,
    /// Live blocks overlapping another (checked run only).
    pub overlapping: u64,
    /// Blocks allocated minus blocks freed.
    pub unfreed: u64,
}

impl Failures {
    fn add(&mut self, o: &Failures) {
        self.alloc_failed += o.alloc_failed;
        self.misaligned += o.misaligned;
        self.clobbered += o.clobbered;
        self.free_refused += o.free_refused;
        self.overlapping += o.overlapping;
        self.unfreed += o.unfreed;
    }

    /// Did the run pass?
    pub fn ok(&self) -> bool {
        *self == Failures::default()
    }
}

impl std::fmt::Display for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failed allocations, {} misaligned blocks, {} clobbered tags, {} refused frees, \
             {} overlapping blocks, {} blocks never freed",
            self.alloc_failed,
            self.misaligned,
            self.clobbered,
            self.free_refused,
            self.overlapping,
            self.unfreed
        )
    }
}

/// One run of one pattern.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Nanoseconds per alloc+free pair (per thread for the multi-threaded burst).
    pub ns_per_pair: f64,
}

/// Run `p` once against `src` with `pairs` alloc+free pairs per thread. `checked` adds the
/// all-pairs overlap check (slow: use it for the untimed warm-up).
pub fn run_pattern<S: PageSource>(
    src: &S,
    p: &Pattern,
    pairs: u64,
    checked: bool,
) -> Result<RunResult, Failures> {
    let mix = mix_orders();
    let rounds = (pairs / p.outstanding as u64).max(1);
    match p.kind {
        Kind::Burst if p.threads == 1 => {
            let r = if checked {
                burst::<S, true>(src, p, rounds, &mix, 0)
            } else {
                burst::<S, false>(src, p, rounds, &mix, 0)
            };
            let (t, f) = r;
            if !f.ok() {
                return Err(f);
            }
            let done = rounds * p.outstanding as u64;
            Ok(RunResult { ns_per_pair: t.as_nanos() as f64 / done as f64 })
        }
        Kind::Burst => {
            let barrier = Barrier::new(p.threads as usize);
            let results: Vec<(Duration, Failures)> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..p.threads)
                    .map(|t| {
                        let (barrier, mix) = (&barrier, &mix);
                        s.spawn(move || {
                            barrier.wait();
                            let salt = u64::from(t) << 56;
                            if checked {
                                burst::<S, true>(src, p, rounds, mix, salt)
                            } else {
                                burst::<S, false>(src, p, rounds, mix, salt)
                            }
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().expect("bench thread panicked")).collect()
            });
            let mut fails = Failures::default();
            for (_, f) in &results {
                fails.add(f);
            }
            if !fails.ok() {
                return Err(fails);
            }
            let done = rounds * p.outstanding as u64;
            let ns = results.iter().map(|(t, _)| t.as_nanos() as f64 / done as f64).sum::<f64>()
                / results.len() as f64;
            Ok(RunResult { ns_per_pair: ns })
        }
        Kind::CrossThread => {
            let (t, f) = cross_thread(src, p, rounds, checked);
            if !f.ok() {
                return Err(f);
            }
            let done = rounds * p.outstanding as u64;
            Ok(RunResult { ns_per_pair: t.as_nanos() as f64 / done as f64 })
        }
    }
}

/// Allocate one block for the pattern, tag it and check its alignment.
#[inline(always)]
fn take<'a, S: PageSource>(
    src: &'a S,
    order: u8,
    tag: u64,
    f: &mut Failures,
) -> Option<PageBlock<'a>> {
    match src.alloc_block(order) {
        Some(mut b) => {
            f.misaligned += u64::from(b.addr() & (src.align(order) - 1) != 0);
            b.touch(tag);
            Some(b)
        }
        None => {
            f.alloc_failed += 1;
            None
        }
    }
}

/// Check a block's tag and free it.
#[inline(always)]
fn give<S: PageSource>(src: &S, b: PageBlock<'_>, tag: u64, f: &mut Failures) {
    f.clobbered += u64::from(std::hint::black_box(b.tag()) != tag);
    f.free_refused += u64::from(src.free_block(b).is_err());
}

/// Blocks live at once must not overlap.
fn overlaps(live: &[PageBlock<'_>]) -> u64 {
    let mut spans: Vec<(usize, usize)> =
        live.iter().map(|b| (b.addr(), b.addr() + block_bytes(b.order()))).collect();
    spans.sort_unstable();
    spans.windows(2).filter(|w| w[1].0 < w[0].1).count() as u64
}

fn burst<S: PageSource, const CHECKED: bool>(
    src: &S,
    p: &Pattern,
    rounds: u64,
    mix: &[u8],
    salt: u64,
) -> (Duration, Failures) {
    let n = p.outstanding;
    let mut f = Failures::default();
    let mut live: Vec<PageBlock<'_>> = Vec::with_capacity(n);
    let mut tag = salt;
    let mut k = 0usize;
    let (mut allocated, mut freed) = (0u64, 0u64);
    let started = Instant::now();
    'rounds: for _ in 0..rounds {
        let first = tag;
        for _ in 0..n {
            let order = match p.order {
                Some(o) => o,
                None => mix[k & (MIX_LEN - 1)],
            };
            k += 1;
            match take(src, std::hint::black_box(order), tag, &mut f) {
                Some(b) => live.push(b),
                None => break,
            }
            tag += 1;
        }
        allocated += live.len() as u64;
        if CHECKED {
            f.overlapping += overlaps(&live);
        }
        for (expect, b) in (first..).zip(live.drain(..)) {
            give(src, b, expect, &mut f);
            freed += 1;
        }
        if f.alloc_failed > 0 {
            break 'rounds;
        }
    }
    let elapsed = started.elapsed();
    f.unfreed = allocated - freed;
    (elapsed, f)
}

fn cross_thread<S: PageSource>(
    src: &S,
    p: &Pattern,
    rounds: u64,
    checked: bool,
) -> (Duration, Failures) {
    let n = p.outstanding;
    let order = p.order.unwrap_or(0);
    // Batches go producer -> consumer and their (emptied) vectors come back, so the hand-off
    // allocates nothing; four batches may be in flight.
    let (to_free, freeing) = sync_channel::<Vec<PageBlock<'_>>>(4);
    let (give_back, returned) = sync_channel::<Vec<PageBlock<'_>>>(8);
    for _ in 0..4 {
        give_back.send(Vec::with_capacity(n)).expect("receiver alive");
    }
    std::thread::scope(|s| {
        let consumer = s.spawn(move || {
            let mut f = Failures::default();
            let mut expect = 0u64;
            let mut freed = 0u64;
            for mut batch in freeing {
                for b in batch.drain(..) {
                    give(src, b, expect, &mut f);
                    expect += 1;
                    freed += 1;
                }
                // The producer may have finished and dropped its receiver.
                let _ = give_back.send(batch);
            }
            (f, freed)
        });
        let mut f = Failures::default();
        let mut tag = 0u64;
        let mut allocated = 0u64;
        let started = Instant::now();
        for _ in 0..rounds {
            let mut batch = returned.recv().expect("consumer alive");
            for _ in 0..n {
                match take(src, order, tag, &mut f) {
                    Some(b) => batch.push(b),
                    None => break,
                }
                tag += 1;
            }
            allocated += batch.len() as u64;
            if checked {
                f.overlapping += overlaps(&batch);
            }
            to_free.send(batch).expect("consumer alive");
            if f.alloc_failed > 0 {
                break;
            }
        }
        drop(to_free);
        let (cf, freed) = consumer.join().expect("consumer panicked");
        let elapsed = started.elapsed();
        f.add(&cf);
        f.unfreed = allocated - freed;
        (elapsed, f)
    })
}

/// Median and sample standard deviation.
pub fn median_stddev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let median = crate::mmtests::median(xs).unwrap_or(f64::NAN);
    if xs.len() < 2 {
        return (median, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (xs.len() - 1) as f64;
    (median, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::{GlobalPages, HeapOptions, PageHeap};

    fn small_heap() -> PageHeap {
        let mut o = HeapOptions::new(128 << 20);
        o.cpus = Some(2);
        PageHeap::new(&o).unwrap()
    }

    #[test]
    fn every_pattern_passes_its_checks_on_the_heap_and_returns_every_page() {
        let h = small_heap();
        for p in PATTERNS {
            run_pattern(&h, p, 2048, true).unwrap_or_else(|f| panic!("{}: {f}", p.name));
        }
        let pa = h.allocator();
        pa.drain_all_pages(pa.cpu(pagealloc::CpuId(0)).unwrap(), None);
        assert_eq!(pa.nr_free_pages(), pa.managed_pages());
    }

    #[test]
    fn a_peer_passes_too() {
        let sys = GlobalPages::new(std::alloc::System);
        for p in PATTERNS {
            run_pattern(&sys, p, 512, true).unwrap_or_else(|f| panic!("{}: {f}", p.name));
        }
    }

    /// Misaligns nothing and frees everything, but claims size alignment it does not give
    /// and reports every other free as refused: the checks must catch it.
    struct Liar(GlobalPages<std::alloc::System>, std::sync::atomic::AtomicU64);

    impl PageSource for Liar {
        fn alloc_block(&self, order: u8) -> Option<PageBlock<'_>> {
            self.0.alloc_block(order)
        }
        fn free_block(&self, b: PageBlock<'_>) -> Result<(), crate::heap::BlockFreeError> {
            let refuse = self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 0;
            self.0.free_block(b)?;
            if refuse {
                Err(crate::heap::BlockFreeError::Foreign)
            } else {
                Ok(())
            }
        }
        fn align(&self, _order: u8) -> usize {
            1 << 20
        }
    }

    #[test]
    fn a_broken_allocator_cannot_post_a_number() {
        let liar = Liar(GlobalPages::new(std::alloc::System), Default::default());
        let f = run_pattern(&liar, pattern("pair-64").unwrap(), 4096, false).unwrap_err();
        assert!(f.misaligned > 0 && f.free_refused > 0, "{f}");
    }

    #[test]
    fn overlap_check_passes_distinct_blocks() {
        let sys = GlobalPages::new(std::alloc::System);
        let v: Vec<PageBlock<'_>> = (0..4).map(|o| sys.alloc_block(o).unwrap()).collect();
        assert_eq!(overlaps(&v), 0);
        for b in v {
            sys.free_block(b).unwrap();
        }
    }

    #[test]
    fn statistics() {
        assert_eq!(median_stddev(&[3.0, 1.0, 2.0]), (2.0, 1.0));
        assert_eq!(median_stddev(&[4.0, 1.0, 2.0, 3.0]).0, 2.5);
        assert_eq!(median_stddev(&[5.0]), (5.0, 0.0));
    }
}
