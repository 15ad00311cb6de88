//! `thpfioscale`: mmtests' `config-global-dhp__workload_thpfioscale` as it stood in November
//! 2018 (seed 002, ALLOC_NOFRAGMENT).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates (docs/workloads.md §7): four fio jobs write 64 KiB files "inefficiently"
//! (`create_on_open=1`, `fallocate=none`) until 150% of memory has been written, which
//! interleaves page-cache pages with the slab objects of each new file and forces reclaim;
//! then four fio jobs read the same files at random, 4 KiB at a time, refaulting evicted pages
//! while reclaim evicts others; after a warm-up as long as the write phase, a program faults
//! half of ¾ of node 0's memory in 2 MiB steps with ((CPUs per node) − 4) / 4 threads, trying a
//! transparent huge page for each step. The seed's primary metric is the number of
//! `mm_page_alloc_extfrag` events with fallback order < 9 (the runner counts them:
//! `extfrag_lt9`, by requested migratetype); the secondary metrics are the THP program's
//! latency per 2 MiB step, split by whether the step got a huge page, and the share of huge
//! steps. A diagnostic, `nonmovable_free_pages`, is the mean number of free pages on the
//! unmovable and reclaimable lists of the THP node's zones as each THP step starts: the memory
//! movable requests reach only by fragmenting fallbacks (docs/reproduction.md, 002). Another,
//! `huge_remote_pct`, is the share of the huge pages that came from a node other than the
//! faulting CPU's (only a madvised fault may take one, docs/workloads.md §7.2).
//!
//! The model. CPUs: the fio jobs, the THP threads and one kswapd per node each get a CPU of
//! their own, drawn from the run's seed (the THP threads all on one node, drawn too — the seed
//! notes "a certain degree of luck on whether processes start on node 0 or not").
//! - Writers: per file, a dentry and an XFS inode (reclaimable slab), an inode log item
//!   (unmovable slab), a share of an inode cluster buffer (an unmovable page per 8 inodes) and
//!   of a directory block (an unmovable page per 100 entries, kept to the end), then one
//!   order-0 movable page-cache page per 4 KiB written and a radix-tree node (reclaimable slab)
//!   with the first page. A writer is paced by the device's write bandwidth (dirty throttling).
//! - Slab: SLUB-like caches with the slab order of SLUB's `calculate_order` (docs/workloads.md
//!   §0) for the machine's CPU count; one current slab per (cache, CPU), a partial list per
//!   (cache, node) that takes slabs an object was freed from; a slab page is freed when its
//!   last object goes. High-order slab pages are tried without reclaim, then order 0 with it,
//!   as SLUB's `allocate_slab` does.
//! - Readers: pick a file at random (`file_service_type=random:16` with 16 blocks of 4 KiB per
//!   file: every visit reads the whole file), look it up again if its inode was reclaimed
//!   (new dentry, inode and cluster-buffer share), and read each block: a cached block costs
//!   CPU only, a missing one allocates a page-cache page and waits for the device. One page:
//!   fio advises a random job's files `POSIX_FADV_RANDOM` by default (`fadvise_hint=1`), and
//!   4.20's `page_cache_sync_readahead` reads only the pages asked for from such a file, so
//!   there is no readahead to model.
//! - Reclaim (the workload's own; the allocator has none): the page cache is on two lists per
//!   node, inactive and active, as 4.20 keeps the file LRU (`workload::workingset` has the
//!   rules). A write (`FGP_ACCESSED`) or a read that misses brings a page in referenced on the
//!   inactive list; a read hit on an inactive referenced page moves it to the active list
//!   (`mark_page_accessed`'s two steps; fio's `ioengine=sync` readers re-read what they hit,
//!   its writers write each page once). Reclaim evicts from the inactive list's tail — every
//!   page there is clean and unmapped, so `page_check_references` frees it whatever its
//!   PG_referenced — leaving a shadow in the file's slot, and after each batch moves a batch
//!   of the active list's tail to the inactive list while the inactive list is low
//!   (`inactive_list_is_low`: ratio ⌊√(10 × GiB)⌋, 0 after refault activations since the
//!   node's last reclaim run). A read that misses where a shadow is stored refaults: within
//!   the refault distance (evictions and activations on the node since, at most the active
//!   list's size) the page starts active. Before an allocation that may reclaim, the workload
//!   checks what the kernel's zonelist walk would find: if no zone of the zonelist is above its
//!   LOW watermark (+ lowmem reserve) the fast path would fail, so the kswapd of every node of
//!   the zonelist that is not balanced is woken; if none is above MIN either, the allocating
//!   CPU reclaims `SWAP_CLUSTER_MAX` pages itself (direct reclaim, charged to it) until one
//!   is. kswapd, on its own CPU, follows 4.20's rules
//!   (`workload::kswapd`): passes from priority 12 down, each scanning `size >> priority` of
//!   each of the node's lists in batches of 32 of each and stopping at the sum of the node's
//!   high watermarks reclaimed (`kswapd_shrink_node`), with the balance check
//!   (`pgdat_balanced`: some zone above HIGH + reserve at the woken order) before each pass;
//!   balanced, it clears the skip hints, naps 100 ms and sleeps if still balanced. A direct
//!   reclaim evicts its batches of 32 from the inactive list with a batch of deactivation
//!   after each while the inactive list is low, until it has its pages (4.20's priority loop
//!   and proportional cut are not modelled for direct reclaim). Each batch of evictions also
//!   scans the node's file LRU (dentry + inode as one unit, in instantiation order, second
//!   chance for referenced files): 4.20's `do_shrink_slab` scans `freeable >> priority × 4 /
//!   seeks` objects while the LRU scans `lru >> priority` pages, so with DEFAULT_SEEKS = 2 the
//!   model scans 2 × (pages evicted / pages cached) × (files with slab on the node) files per
//!   batch. A scanned file is freed (slab objects, the last cached page) only if it is not
//!   open, not referenced since the last scan, and has at most one cached page (4.19/4.20's
//!   "mm: don't reclaim inodes with many attached pages" rotated the others; reverted for
//!   5.0).
//! - THP threads: per 2 MiB step, one order-9 request (`TRANSHUGE_LIGHT | THISNODE`: the
//!   default `defrag=madvise` without madvise, no reclaim, no compaction, the faulting CPU's
//!   node only; `TRANSHUGE` with `madv_hugepage=1`, which, if the request fails, follows 4.20's
//!   slow path for a costly request: an async direct compaction and a try, then direct reclaim
//!   of `compact_gap` = 1024 pages from each node with a zone that is not `compaction_ready`
//!   (above HIGH + `compact_gap`, or able to serve the order: 4.20 `shrink_zones`), going on
//!   until compaction could run in some zone (4.20 `should_continue_reclaim`), a try, and a
//!   sync-light compaction (the default priority) and try, after which a costly request gives
//!   up (with `compaction=0`: the reclaim and one try)) plus a page-table page; on failure
//!   512 order-0 movable faults, one per step of the runner. Each step is zeroed and then
//!   written by `memset`. Latency = virtual time from the step's start to its end. All of it is
//!   freed at munmap when the thread ends; when the last thread ends fio is killed.
//! - Compaction (`compaction=1`): the workload is the owner of its movable pages (the page
//!   cache and the THP program's blocks): a frame → slot index, checked against the slot on
//!   every migration, points the file's block or the thread's held entry at the new frame;
//!   the LRU queue names (file, block), so a moved page keeps its place. The copy is charged
//!   to the compacting CPU (`Ctx::compact_and_alloc`). kcompactd runs on kswapd's CPU when
//!   kswapd goes back to sleep and an allocation asked for it (4.20 `kswapd_try_to_sleep` →
//!   `wakeup_kcompactd`); nothing here asks (no request above order 0 may wake kswapd), so it
//!   never runs, as in 4.20, which had no proactive compaction.
//!
//! Volume: as the benchmark, 150% of memory is written, so the page cache passes memory size
//! and reclaim runs all along. `--scale` shortens the two later phases: the readers' warm-up
//! before the THP program starts is `warmup` × the write phase's virtual duration, and the
//! THP program faults `thp_fraction` of its regions.
//!
//! Threads: each CPU's task (a fio job, a THP thread, a kswapd) is its own (`model::PerCpu`).
//! Shared, each behind its own lock held for bookkeeping only: the page cache with its LRU
//! queues, the file LRUs and the slab (one cache lock); each THP thread's held blocks (which
//! compaction on another CPU moves); each node's kswapd state (any CPU's allocation may wake
//! it or end its nap, any CPU's reclaim makes it hopeful again); the phase (writers done, the
//! THP program's start). In the model, which runs the workload alone, a step takes the cache
//! out of its lock instead (`Shared`). Counters, the stop flag and compaction's owner index
//! are atomic. No lock but a CPU's own task is held across an allocator call: reclaim, direct
//! or kswapd's, takes its pages (and the slab pages emptied by inode eviction) out of the
//! cache under the lock and frees them after it, in the same order with the same work
//! between; a new slab's pages are allocated with the lock let go; kswapd going to sleep runs kcompactd after its
//! lock is let go; a compaction's moves take the slot's lock inside the allocator's call,
//! which holds no allocator lock then. Lock order: a CPU's task → a node's kswapd → the
//! cache; a THP thread's held blocks and the phase are locked alone. Waits: readers wait for
//! the last writer, the THP threads for it and the warm-up, kswapd for a wakeup or the stop;
//! each reads the phase or its state under its lock when it steps, the waker publishes the
//! change before it wakes, and a wake sent to a CPU still running is kept by the runner, so
//! none is lost. The model steps one CPU at a time, so its decisions are those of one object;
//! it steps through `step_alone`, which takes no task lock. A node's kswapd keeps the end of
//! its nap readable without its lock, so an allocation takes the lock only once the nap may
//! be over (on the real runner a reader may see an older value; the nap's end is then
//! noticed by a later allocation).
//! On real threads a reader may touch a page that reclaim on another CPU has just evicted (the
//! kernel would hold a reference over the copy); the runner's touches are plain writes into
//! the arena, so this changes no count.
//!
//! Known biases: the slow path's own steps between the passes (the library's drain of every
//! pageset and highatomic unreserve) run inside the first try, before the first compaction
//! rather than after it; compaction's copy of a page is priced as two page writes (assumed,
//! docs/hardware.md); the file lists leave out what an unmapped clean page cache never
//! meets (`page_referenced`'s mapped-page rules, `PageWorkingset`'s psi and restore
//! accounting) and charge no CPU time for a deactivation; no dirty/writeback state (all
//! evicted pages are clean, so every page-cache page can move), no shadow-entry shrinker (radix nodes live as long as their inode, so do shadows);
//! dentry and inode are reclaimed together; XFS's short-lived allocations (transactions, log
//! items and the CIL's kmalloc'd log vectors, bios) are left out, so the unmovable churn is
//! only the long-lived metadata above; the device is a fixed latency and bandwidth; the
//! kernel's watermark check is approximated by the order-0 check of every zone of the
//! zonelist.

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
use std::sync::{Mutex, MutexGuard, OnceLock};

use anyhow::{bail, Context, Result};
use pagealloc::migratetype::MIGRATE_TYPES;
use pagealloc::types::NR_PAGE_ORDERS;
use pagealloc::{AllocFlags, CompactMode, Gfp, Migrate, NodeId, Order, Pfn, Target, ZoneType};
use pagealloc::{MigrateType, Zone};
use pagealloc::{WMARK_HIGH, WMARK_LOW, WMARK_MIN};
use pagealloc_testkit::rng::Rng;

use super::kswapd::SWAP_CLUSTER_MAX;
use super::kswapd::{compact_gap, compaction_ready, Kswapd, KswapdNext, KswapdNode};
use super::workingset::{self, Workingset};
use super::{ns, Fit, Fitted, ParamSpec, Params, WorkloadInfo, PREFETCH_AHEAD};
use crate::model::{lock, part, Ctx, Latest, ModelInfo, Next, PerCpu, Workload, PS_PER_S};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "thpfioscale",
    summary: "mmtests thpfioscale: fio fills 150% of memory with 64 KiB files (page cache + \
              slab, with reclaim), random readers refault them, THP threads fault 2 MiB steps",
    params: PARAMS,
    default_machine: "skylake-1s",
    build: |p| Box::new(ThpFioScale::new(p)),
    fit,
};

/// The fio jobs, the THP threads and one kswapd per node each need a CPU: on a machine too
/// small for them, fewer fio jobs, then fewer THP threads (at least one of each).
fn fit(p: &Params, m: Fit) -> Vec<Fitted> {
    let (cpus, nodes) = (u64::from(m.nr_cpus), u64::from(m.nr_nodes.max(1)));
    let fio = p.count("fio_threads");
    let thp_param = p.get("thp_threads").round() as u64;
    let thp =
        if thp_param > 0 { thp_param } else { ((cpus / nodes).saturating_sub(fio) / 4).max(1) };
    if fio + thp + nodes <= cpus || cpus < nodes + 2 {
        // Fits, or cannot: one fio job and one THP thread beside the kswapds need nodes + 2.
        return Vec::new();
    }
    let why = format!(
        "{fio} fio jobs, {thp} THP threads and {nodes} kswapd(s) need more than the machine's \
         {cpus} CPUs"
    );
    let room = cpus - nodes;
    // Keep the THP threads asked for (one when automatic), give the fio jobs the rest.
    let keep_thp = if thp_param > 0 { thp_param.min(room - 1) } else { 1 };
    let fio_fits = (room - keep_thp).max(1);
    if fio_fits < fio {
        return vec![Fitted { name: "fio_threads", value: fio_fits as f64, why }];
    }
    vec![Fitted { name: "thp_threads", value: (room - fio.min(room - 1)) as f64, why }]
}

/// Reclaim's work per clean page-cache page (also vm-scalability's file case: the same
/// eviction path).
pub(crate) const RECLAIM_PAGE_NS: ParamSpec = ParamSpec {
    name: "reclaim_page_ns",
    default: 1000.0,
    min: 0.0,
    max: 1e6,
    unit: "ns",
    doc: "reclaim CPU work per evicted clean page-cache page besides the free (LRU \
          isolation, rmap/mapping checks, deletion from the page cache)",
    source: "assumed: kswapd reclaims clean page cache at roughly 1 GB/s per thread",
    scaled: false,
    whole: false,
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "fio_threads",
        default: 4.0,
        min: 1.0,
        max: 64.0,
        unit: "jobs",
        doc: "fio writer jobs, then as many reader jobs (each job has its own files)",
        source: "mmtests config FIO_THREADS=4, bench script numjobs (docs/workloads.md §7.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "file_kib",
        default: 64.0,
        min: 4.0,
        max: 64.0,
        unit: "KiB",
        doc: "size of each file",
        source: "thpfioscale-bench: file size 65536 B (docs/workloads.md §7.1)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "fio_size_pct",
        default: 150.0,
        min: 1.0,
        max: 1000.0,
        unit: "% of memory",
        doc: "total size of the files, as a share of the machine's memory",
        source: "mmtests config FIO_SIZE = 1.5 × MemTotal (docs/workloads.md §7.1)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "thp_threads",
        default: 0.0,
        min: 0.0,
        max: 1024.0,
        unit: "threads",
        doc: "THP faulting threads; 0 = ((CPUs per node) − fio_threads) / 4, at least 1",
        source: "mmtests config MIN=MAX threads = ((NUMCPUS/NUMNODES) − 4)/4 (docs/workloads.md \
                 §7.1)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "thp_size_pct",
        default: 75.0,
        min: 1.0,
        max: 100.0,
        unit: "% of node 0",
        doc: "THP_SIZE; the program faults half of it (nr_hpages = total/threads/2 MiB/2)",
        source: "mmtests config THP_SIZE = ¾ of MMTESTS_NODE_SIZE[0]; thpfioscale.c halves it \
                 (docs/workloads.md §7.1, inferred)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "madv_hugepage",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "bool",
        doc: "1 = madvise(MADV_HUGEPAGE): order-9 requests with direct reclaim (GFP_TRANSHUGE)",
        source: "config variant -madvhugepage (THPFIOSCALE_MADV_HUGEPAGE=yes); 4.20 \
                 alloc_hugepage_direct_gfpmask with defrag=madvise (docs/workloads.md §7.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "compaction",
        default: 1.0,
        min: 0.0,
        max: 1.0,
        unit: "bool",
        doc: "1 = compaction as the kernel does it: a madvised THP fault (GFP_TRANSHUGE) \
              compacts in its slow path, moving page-cache pages and the THP program's base \
              pages, and kcompactd runs after kswapd when an allocation asked for it; 0 = none \
              (only free order-9 blocks make huge pages)",
        source: "Linux 4.20 mm/page_alloc.c __alloc_pages_slowpath (direct compaction of a \
                 costly order that may reclaim), mm/vmscan.c kswapd_try_to_sleep → \
                 wakeup_kcompactd; CONFIG_COMPACTION, which THP selects (docs/workloads.md \
                 §7.2)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "warmup",
        default: 1.0,
        min: 0.0,
        max: 10.0,
        unit: "× write time",
        doc: "readers' warm-up before the THP program starts, in units of the write phase's \
              duration",
        source: "thpfioscale-bench: sleep INIT_TIME (the write phase's duration) before the \
                 THP program (docs/workloads.md §7.1)",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "thp_fraction",
        default: 1.0,
        min: 0.0,
        max: 1.0,
        unit: "fraction",
        doc: "share of the THP program's 2 MiB regions that are faulted",
        source: "the whole program (thpfioscale.c); lower only to shorten a run",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "write_mbps",
        default: 500.0,
        min: 1.0,
        max: 100_000.0,
        unit: "MB/s",
        doc: "device write bandwidth the writers are throttled to (all jobs together)",
        source: "assumed: a 2018 SATA SSD (~500 MB/s sequential write); the seed does not name \
                 the device. balance_dirty_pages paces buffered writers to writeback once \
                 dirty pages pass the threshold, which 150% of memory reaches early",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "read_latency_us",
        default: 100.0,
        min: 0.0,
        max: 100_000.0,
        unit: "us",
        doc: "device latency of a 4 KiB read that misses the page cache",
        source: "assumed: random 4 KiB read of a 2018 SATA SSD at queue depth 1 (~100 µs); \
                 the seed does not name the device",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "write_page_ns",
        default: 1000.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "writer CPU work per 4 KiB besides allocating and copying the page: write() \
              syscall, XFS delalloc mapping, page-cache insertion",
        source: "assumed: a buffered 4 KiB write through XFS costs ~1-2 µs of CPU on a \
                 2018 server core; only its sum with the bandwidth limit matters",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "create_us",
        default: 20.0,
        min: 0.0,
        max: 100_000.0,
        unit: "us",
        doc: "CPU work of creating a file (open O_CREAT on XFS: transaction, inode allocation, \
              directory insert)",
        source: "assumed: XFS file creates run at tens of thousands per second per thread",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "lookup_us",
        default: 5.0,
        min: 0.0,
        max: 100_000.0,
        unit: "us",
        doc: "CPU work of looking up a file whose inode was reclaimed (dentry + inode read, \
              the cluster buffer read waits on the device on top)",
        source: "assumed: path walk, XFS inode read and VFS inode setup, a few µs",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "read_ns",
        default: 1000.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "reader CPU work per 4 KiB read besides the page copy (syscall, lookup in the \
              page cache)",
        source: "assumed: a cached 4 KiB pread costs ~1 µs of CPU",
        scaled: false,
        whole: false,
    },
    RECLAIM_PAGE_NS,
    ParamSpec {
        name: "fault_ns",
        default: 600.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "base-page fault overhead per 4 KiB besides the allocation and the zeroing \
              (trap, page-table update, LRU add, memcg charge)",
        source: "assumed: a 4.x anonymous fault costs ~1-2 µs with zeroing on a 2018 core \
                 (will-it-scale page_fault1 rates of that era)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "thp_fault_ns",
        default: 2000.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "huge-page fault overhead besides the allocation and the zeroing (trap, PMD \
              install, page-table deposit, LRU add, memcg charge of 512 pages)",
        source: "assumed: a few µs, the per-fault part of a THP fault",
        scaled: false,
        whole: false,
    },
];

/// Pages per file at most (64 KiB).
const MAX_FILE_PAGES: usize = 16;
/// No frame / no slab / no file.
const NONE: u32 = u32::MAX;
/// Pages direct reclaim frees for a failed order-9 request before compaction would run
/// (kernel 4.20 `compact_gap(order)` = 2 << order, the target of `should_continue_reclaim`).
const COMPACT_GAP_ORDER9: u64 = compact_gap(HPAGE_ORDER);
/// Slab objects scanned per page-cache page scanned, relative to their population (4.20
/// `do_shrink_slab`: `freeable >> priority × 4 / seeks` with DEFAULT_SEEKS = 2).
const SLAB_SCAN_RATIO: f64 = 4.0 / 2.0;
/// Inodes per inode-cluster buffer page: v5 XFS with 512-byte inodes uses 16 KiB cluster
/// buffers (8 KiB × inodesize/256) of 32 inodes, i.e. 8 inodes per page.
const INODES_PER_CLUSTER_PAGE: u16 = 8;
/// Directory entries per directory block (assumed: XFS dir2 data entries of fio's ~20-character
/// file names take 32 bytes, so a 4 KiB block holds ~128; leaf/hash blocks add ~20%).
const DIR_ENTRIES_PER_BLOCK: u32 = 100;
/// A 2 MiB step in base pages.
const HPAGE_PAGES: u16 = 512;
/// The huge page order (x86-64 `HPAGE_PMD_ORDER`).
const HPAGE_ORDER: Order = Order(9);
/// An `owner` entry with this bit names a THP thread's `held` slot (`index <<
/// thread_bits | thread`, `thread_bits` as few as the run's threads need); without it, a
/// page-cache slot (`file × MAX_FILE_PAGES + block`).
const THP_LOC: u32 = 1 << 31;

/// A SLUB cache the writers and readers fill.
#[derive(Clone, Copy, Debug)]
struct CacheSpec {
    /// As /proc/slabinfo names it (for readers of this table).
    #[allow(dead_code)]
    name: &'static str,
    /// Object size in bytes, or 0 for a page shared by a fixed number of objects.
    size: u32,
    gfp: Gfp,
}

/// The caches, by index. Object sizes: x86-64 4.x `slabinfo` (assumed: 192-byte dentries,
/// 960-byte xfs_inode, 576-byte radix_tree_node, ~176-byte xfs_ili). dentry, xfs_inode and
/// radix_tree_node are SLAB_RECLAIM_ACCOUNT caches (reclaimable pages); xfs_ili is not
/// (unmovable); XFS buffers take pages with GFP_NOFS (unmovable).
const CACHES: [CacheSpec; NR_CACHES] = [
    CacheSpec { name: "dentry", size: 192, gfp: Gfp::KERNEL_RECLAIMABLE },
    CacheSpec { name: "xfs_inode", size: 960, gfp: Gfp::KERNEL_RECLAIMABLE },
    CacheSpec { name: "radix_tree_node", size: 576, gfp: Gfp::KERNEL_RECLAIMABLE },
    CacheSpec { name: "xfs_ili", size: 176, gfp: Gfp::KERNEL },
    CacheSpec { name: "xfs_buf inode cluster", size: 0, gfp: Gfp::KERNEL },
];
const NR_CACHES: usize = 5;
const DENTRY: usize = 0;
const XFS_INODE: usize = 1;
const RADIX: usize = 2;
const XFS_ILI: usize = 3;
const CLUSTER: usize = 4;

/// SLUB's slab order for objects of `size` bytes on a machine of `nr_cpus` CPUs (4.20
/// `calculate_order` / `slab_order`: min_objects = 4 × (fls(nr_cpu_ids) + 1), leftover at most
/// 1/16, 1/8, 1/4 of the slab, slub_max_order = 3). Returns (order, objects per slab).
fn slub_order(size: u32, nr_cpus: u32) -> (u8, u16) {
    const MAX_ORDER: u32 = 3;
    let size = size.max(8);
    let objs = |order: u32| (4096u32 << order) / size;
    let slab_order = |min_objects: u32, fract: u32| -> u32 {
        let bytes = min_objects * size;
        let mut order = 0;
        while (4096u32 << order) < bytes {
            order += 1;
        }
        while order <= MAX_ORDER {
            let slab = 4096u32 << order;
            if slab % size <= slab / fract {
                break;
            }
            order += 1;
        }
        order
    };
    let mut min_objects =
        (4 * (pagealloc::types::fls(u64::from(nr_cpus)) + 1)).min(objs(MAX_ORDER));
    while min_objects > 1 {
        let mut fraction = 16;
        while fraction >= 4 {
            let order = slab_order(min_objects, fraction);
            if order <= MAX_ORDER {
                return (order as u8, objs(order) as u16);
            }
            fraction /= 2;
        }
        min_objects -= 1;
    }
    let order = slab_order(1, 1).min(MAX_ORDER);
    (order as u8, objs(order).max(1) as u16)
}

/// One slab page.
#[derive(Clone, Copy, Debug)]
struct Slab {
    pfn: u32,
    live: u16,
    cap: u16,
    cache: u8,
    order: u8,
    node: u8,
    alive: bool,
    /// On its (cache, node) partial list (entries there may be stale; this says which count).
    in_partial: bool,
    /// Some CPU's current slab: never freed while it is.
    current: bool,
}

/// One file: its cached pages and its slab objects.
#[derive(Clone, Copy, Debug)]
struct File {
    /// Frame of each cached page, or NONE.
    pages: [u32; MAX_FILE_PAGES],
    /// Bumped each time a page is put on a list, so that list entries of its earlier places
    /// are stale.
    gen: [u8; MAX_FILE_PAGES],
    /// PG_referenced of each page (bit = block).
    accessed: u16,
    /// PG_active of each page: on its node's active list rather than the inactive one.
    active: u16,
    /// The shadow an evicted page left in its slot (`workload::workingset`), where `shadowed`
    /// has the block's bit; the inode's eviction (truncation) drops them.
    shadow: [u32; MAX_FILE_PAGES],
    shadowed: u16,
    /// Slab ids of its objects (NONE when not allocated).
    objs: [u32; NR_CACHES],
    /// Instantiation count, so that file-LRU entries of an earlier instance are stale.
    inst: u16,
    cached: u8,
    /// Node whose file LRU holds it.
    node: u8,
    has_slab: bool,
    referenced: bool,
    open: bool,
}

impl File {
    const EMPTY: File = File {
        pages: [NONE; MAX_FILE_PAGES],
        gen: [0; MAX_FILE_PAGES],
        accessed: 0,
        active: 0,
        shadow: [0; MAX_FILE_PAGES],
        shadowed: 0,
        objs: [NONE; NR_CACHES],
        inst: 0,
        cached: 0,
        node: 0,
        has_slab: false,
        referenced: false,
        open: false,
    };
}

/// What a fio job is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobState {
    Write,
    /// Done writing, waiting for the last writer (then it reads).
    WaitRead,
    Read,
    Done,
}

/// One fio job: writer, then reader, of its own files. Its CPU's alone.
#[derive(Clone, Debug)]
struct Job {
    /// Its index among the jobs.
    index: usize,
    first_file: u32,
    state: JobState,
    /// Writer: next file and page; reader: current file and next block.
    file: u32,
    page: u8,
    written: u64,
    dir_block_fill: u32,
}

/// What a THP thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThpState {
    /// Waiting for the warm-up to end.
    Wait,
    /// Next step: try a huge page.
    Huge,
    /// Faulting base pages of the current step; so many done.
    Base(u16),
    /// munmap: freeing what it holds.
    Unmap,
    Done,
}

/// One THP thread, its CPU's alone; the blocks it holds are in [`ThpFioScale::held`], where
/// compaction on another CPU can move them.
#[derive(Clone, Debug)]
struct ThpThread {
    /// Its index among the THP threads (its `held` list and `owner` entries).
    index: usize,
    steps_left: u64,
    state: ThpState,
    step_start: u64,
}

/// What each CPU runs, and that task's own state.
#[derive(Clone, Debug)]
enum Task {
    Idle,
    Fio(Job),
    Thp(ThpThread),
    Kswapd(usize),
}

/// The zones as the workload reads them, and compaction's owner index: read from the
/// allocator on the first step of any CPU.
#[derive(Debug)]
struct Zones {
    /// Per node: zone indices of its zonelist (own zones high to low, then other nodes').
    zonelist: Vec<Vec<usize>>,
    /// Per node: its own zones.
    node_zones: Vec<Vec<usize>>,
    /// The lowest frame of any zone: frames are kept as 32-bit offsets from it (the real
    /// runner's arena starts far above frame 0).
    base: u64,
    /// Frame − `base` → where the workload holds it as a movable page (page-cache or THP location,
    /// see [`THP_LOC`]), or NONE; kept only with compaction. An entry may be stale (the
    /// frame was freed and reused by a non-movable holder): [`Migrate::migrate`] checks,
    /// under the slot's lock, that the location still holds the frame, and a holder that
    /// takes a frame writes its entry. Atomic, so that no lock orders it against the slots'.
    owner: Vec<AtomicU32>,
}

impl Zones {
    /// Zonelists and per-node zones of `nodes` nodes, and an empty owner index for every
    /// frame when the run compacts.
    fn read(ctx: &Ctx<'_>, nodes: usize, compaction: bool) -> Zones {
        let zones = ctx.allocator().zones();
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); nodes];
        for (i, z) in zones.iter().enumerate() {
            if z.is_populated() && z.node().index() < nodes {
                by_node[z.node().index()].push(i);
            }
        }
        for list in &mut by_node {
            list.sort_by_key(|&i| std::cmp::Reverse(zones[i].zone_type()));
        }
        let zonelist = (0..nodes)
            .map(|n| {
                let mut others: Vec<usize> = (0..nodes).filter(|&m| m != n).collect();
                others.sort_by_key(|&m| (m.abs_diff(n), m));
                let mut l = by_node[n].clone();
                for m in others {
                    l.extend_from_slice(&by_node[m]);
                }
                l
            })
            .collect();
        let populated = zones.iter().filter(|z| z.is_populated());
        let base = populated.clone().map(|z| z.start_pfn().0).min().unwrap_or(0);
        let end = populated.map(|z| z.start_pfn().0 + z.spanned_pages().0).max().unwrap_or(0);
        let frames = if compaction { end.saturating_sub(base) as usize } else { 0 };
        Zones {
            zonelist,
            node_zones: by_node,
            base,
            owner: (0..frames).map(|_| AtomicU32::new(NONE)).collect(),
        }
    }

    /// Note that the movable page `pfn` is held at `loc` (kept only with compaction).
    fn own(&self, pfn: Pfn, loc: u32) {
        if let Some(slot) = self.owner_of(pfn) {
            slot.store(loc, Relaxed);
        }
    }

    /// The owner entry of frame `pfn`, if the index has one.
    fn owner_of(&self, pfn: Pfn) -> Option<&AtomicU32> {
        let i = pfn.0.checked_sub(self.base)?;
        self.owner.get(usize::try_from(i).ok()?)
    }
}

/// A node's kswapd behind its lock, with the end of its nap readable without the lock.
#[derive(Debug)]
struct KswapdSlot {
    kswapd: Mutex<Kswapd>,
    /// [`Kswapd::nap_end`] as the lock was last let go: every allocation that may reclaim
    /// asks whether the nap is over ([`Kswapd::nap_over`]), and almost always it is not.
    nap_end: AtomicU64,
}

impl Default for KswapdSlot {
    fn default() -> KswapdSlot {
        let kswapd = Kswapd::default();
        let nap_end = AtomicU64::new(kswapd.nap_end());
        KswapdSlot { kswapd: Mutex::new(kswapd), nap_end }
    }
}

impl KswapdSlot {
    /// `f` on the kswapd under its lock; `nap_end` follows what `f` changed. Every change
    /// of the kswapd goes through here.
    fn with<R>(&self, f: impl FnOnce(&mut Kswapd) -> R) -> R {
        let mut k = lock(&self.kswapd);
        let r = f(&mut k);
        self.nap_end.store(k.nap_end(), Relaxed);
        r
    }
}

/// A block a step took out of the page cache or the slab under the cache lock, freed after
/// it, then `work` ps of reclaim work (0 for a slab page).
type Free = (Pfn, Order, u64);

/// The page cache, its LRUs and the slab: shared by every CPU (writers and readers fill it,
/// reclaim on any CPU and kswapd empty it), behind one lock held for bookkeeping only.
#[derive(Debug, Default)]
struct Cache {
    /// [`Zones::base`], set with the zones: `pages` and `Slab::pfn` are offsets from it.
    base: u64,
    nr_nodes: usize,
    nr_cpus: usize,
    file_pages: usize,
    reclaim_page: u64,
    files: Vec<File>,
    /// Per node: the inactive and the active file list, entries (file << 16 | block << 8 |
    /// gen) oldest first (see [`lru_entry`]).
    inactive: Vec<VecDeque<u64>>,
    active: Vec<VecDeque<u64>>,
    /// Per node: pages on both lists, and on the active one.
    cached_pages: Vec<u64>,
    active_pages: Vec<u64>,
    /// Refault detection and the lists' balance rule (4.20 `mm/workingset.c`).
    workingset: Workingset,
    /// Pages activated by a second access, and moved from the active list to the inactive.
    activations: u64,
    deactivations: u64,
    /// Per node: (file, inst), oldest instantiation first.
    file_lru: Vec<VecDeque<(u32, u16)>>,
    files_with_slab: Vec<u64>,
    shrink_credit: Vec<f64>,
    dir_blocks: Vec<Pfn>,
    inode_evictions: u64,

    // Slab.
    slab_spec: [(u8, u16); NR_CACHES],
    slabs: Vec<Slab>,
    free_slab_ids: Vec<u32>,
    /// [cache × nr_cpus + cpu]: current slab id.
    current: Vec<u32>,
    /// [cache × nr_nodes + node]: partial slab ids (stack; may hold stale ids).
    partial: Vec<Vec<u32>>,
    slab_pages: u64,
    slab_pages_peak: u64,
}

/// How a step reaches the [`Cache`] and the [`Stats`]: behind the cache's lock and with
/// atomic additions on real threads ([`Locked`]), or without either when the model runs the
/// workload alone ([`Alone`]). A step visits the cache several times and counts a few
/// things, and each uncontended lock, unlock or atomic addition is a read-modify-write that
/// waits for the step's earlier stores.
trait Shared {
    fn cache(&self) -> impl DerefMut<Target = Cache> + '_;

    /// Add `n` to one of the workload's counters.
    fn count(&self, c: &AtomicU64, n: u64);
}

/// The cache between steps: boxed, so that the model's step takes it out of its lock and
/// puts it back by moving a pointer; never empty outside such a step.
type CacheSlot = Mutex<Option<Box<Cache>>>;

/// Why a slot is never found empty.
const IN_SLOT: &str = "the cache is in its slot outside a model step";

/// The cache in its slot (outside a step, or in a step of the real runner).
fn in_slot(slot: &mut Option<Box<Cache>>) -> &mut Cache {
    slot.as_deref_mut().expect(IN_SLOT)
}

/// [`Shared`] behind the cache's lock.
struct Locked<'a>(&'a CacheSlot);

/// The cache, locked.
struct CacheGuard<'a>(MutexGuard<'a, Option<Box<Cache>>>);

impl Deref for CacheGuard<'_> {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        self.0.as_deref().expect(IN_SLOT)
    }
}

impl DerefMut for CacheGuard<'_> {
    fn deref_mut(&mut self) -> &mut Cache {
        in_slot(&mut self.0)
    }
}

impl Shared for Locked<'_> {
    fn cache(&self) -> impl DerefMut<Target = Cache> + '_ {
        CacheGuard(lock(self.0))
    }

    fn count(&self, c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }
}

/// [`Shared`] of a step that has the run to itself: the cache taken out of its slot for
/// the step. A `RefCell`, so that a visit made while another is open fails, as it would
/// deadlock on the lock.
struct Alone(RefCell<Box<Cache>>);

impl Shared for Alone {
    fn cache(&self) -> impl DerefMut<Target = Cache> + '_ {
        RefMut::map(self.0.borrow_mut(), |c| &mut **c)
    }

    /// A load and a store: no other step runs meanwhile.
    fn count(&self, c: &AtomicU64, n: u64) {
        c.store(c.load(Relaxed) + n, Relaxed);
    }
}

/// The workload's counters, atomic: every CPU adds to them (through [`Shared::count`]).
#[derive(Debug, Default)]
struct Stats {
    base_ps: AtomicU64,
    base_steps: AtomicU64,
    huge_ps: AtomicU64,
    huge_steps: AtomicU64,
    /// Huge pages from a node other than the faulting CPU's.
    huge_remote: AtomicU64,
    reads: AtomicU64,
    read_misses: AtomicU64,
    lookups: AtomicU64,
    direct_pages: AtomicU64,
    kswapd_wakes: AtomicU64,
    /// Madvised THP faults whose direct reclaim found a zone `compaction_ready`, and those
    /// that found every zone ready and reclaimed nothing.
    reclaim_compaction_ready: AtomicU64,
    reclaim_skipped: AtomicU64,
    pagecache_failures: AtomicU64,
    pages_written: AtomicU64,
    /// Free pages on the unmovable and reclaimable lists of the THP node's zones, summed
    /// over the THP steps' starts, and the number of steps summed.
    nonmovable_free_sum: AtomicU64,
    nonmovable_free_samples: AtomicU64,
    /// Pages on the THP node's inactive file list, summed over the THP steps' starts.
    inactive_sum: AtomicU64,
}

/// A counter's value.
fn get(c: &AtomicU64) -> u64 {
    c.load(Relaxed)
}

/// Where the benchmark is: the write phase's end, decided by its last writer.
#[derive(Debug, Default)]
struct Phase {
    writers_done: usize,
    init_time: u64,
    thp_start: u64,
    /// Every writer is done: the jobs read, the THP threads start at `thp_start`.
    reading: bool,
}

/// One run. Its state is split so that the real runner's CPUs step at the same time (lock
/// order in the module doc, "Threads").
#[derive(Debug)]
pub struct ThpFioScale {
    // Parameters.
    fio_threads: usize,
    file_pages: usize,
    fio_size_pct: f64,
    thp_threads_param: u64,
    thp_size_pct: f64,
    madv: bool,
    warmup: f64,
    thp_fraction: f64,
    page_interval: u64,
    read_latency: u64,
    write_page: u64,
    create: u64,
    lookup: u64,
    read_cost: u64,
    reclaim_page: u64,
    fault: u64,
    thp_fault: u64,
    compaction: bool,

    // Machine and placement, fixed at start.
    nr_nodes: usize,
    cpu_node: Vec<u32>,
    files_per_job: u32,
    job_cpus: Vec<u32>,
    thp_cpus: Vec<u32>,
    kswapd_cpu: Vec<u32>,
    /// Low bits of a THP `owner` entry that name the thread.
    thread_bits: u32,
    /// The THP program's 2 MiB steps, all threads.
    thp_total: u64,

    /// Read on the first step.
    zones: OnceLock<Zones>,
    /// Each CPU's task.
    tasks: PerCpu<Task>,
    cache: CacheSlot,
    /// Per THP thread: the blocks it holds, in `owner`'s slot order.
    held: Vec<Mutex<Vec<(Pfn, Order)>>>,
    /// Per node: its kswapd (4.20's rules, `workload::kswapd`).
    kswapd: Vec<KswapdSlot>,
    phase: Mutex<Phase>,
    thp_done: AtomicUsize,
    /// The THP program is done: fio is killed, kswapd has nothing left to do.
    stop: AtomicBool,
    /// The latest step's time, for progress (per CPU: [`Latest`]).
    last_now: Latest,
    stats: Stats,
}

impl ThpFioScale {
    /// A run with these parameters.
    pub fn new(p: &Params) -> ThpFioScale {
        let fio_threads = p.count("fio_threads") as usize;
        let bytes_per_s = p.get("write_mbps") * 1e6;
        // Each job writes one page per interval so that all jobs together match the bandwidth.
        let page_interval = (fio_threads as f64 * 4096.0 / bytes_per_s * PS_PER_S as f64) as u64;
        ThpFioScale {
            fio_threads,
            file_pages: ((p.get("file_kib") / 4.0).round() as usize).clamp(1, MAX_FILE_PAGES),
            fio_size_pct: p.get("fio_size_pct"),
            thp_threads_param: p.get("thp_threads").round() as u64,
            thp_size_pct: p.get("thp_size_pct"),
            madv: p.get("madv_hugepage") >= 0.5,
            warmup: p.get("warmup"),
            thp_fraction: p.get("thp_fraction").min(1.0),
            page_interval,
            read_latency: ns(p.get("read_latency_us") * 1000.0),
            write_page: ns(p.get("write_page_ns")),
            create: ns(p.get("create_us") * 1000.0),
            lookup: ns(p.get("lookup_us") * 1000.0),
            read_cost: ns(p.get("read_ns")),
            reclaim_page: ns(p.get("reclaim_page_ns")),
            fault: ns(p.get("fault_ns")),
            thp_fault: ns(p.get("thp_fault_ns")),
            compaction: p.get("compaction") >= 0.5,
            nr_nodes: 0,
            cpu_node: Vec::new(),
            files_per_job: 0,
            job_cpus: Vec::new(),
            thp_cpus: Vec::new(),
            kswapd_cpu: Vec::new(),
            thread_bits: 0,
            thp_total: 0,
            zones: OnceLock::new(),
            tasks: PerCpu::new(Vec::new()),
            cache: Mutex::new(Some(Box::default())),
            held: Vec::new(),
            kswapd: Vec::new(),
            phase: Mutex::default(),
            thp_done: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            last_now: Latest::default(),
            stats: Stats::default(),
        }
    }

    fn total_files(&self) -> u64 {
        self.files_per_job as u64 * self.fio_threads as u64
    }

    /// The zones, read from the allocator by the first caller, which also gives the cache
    /// their base frame. Every step calls this before it takes any lock, so the cache lock
    /// taken here is never held by a thread waiting for the zones.
    fn zones(&self, ctx: &Ctx<'_>) -> &Zones {
        self.zones.get_or_init(|| {
            let zones = Zones::read(ctx, self.nr_nodes, self.compaction);
            CacheGuard(lock(&self.cache)).base = zones.base;
            zones
        })
    }

    /// THP thread `t` holds the block `p` (its next `held` slot).
    /// The owner index is there from the first step on, which comes before any block.
    fn hold(&self, t: usize, p: Pfn, o: Order) -> Result<()> {
        let slots = self.held.get(t).with_context(|| format!("thpfioscale: no THP thread {t}"))?;
        let mut held = lock(slots);
        let i = held.len();
        if let Some(zones) = self.zones.get().filter(|z| !z.owner.is_empty()) {
            let loc = u32::try_from(i)
                .ok()
                .filter(|&i| i < THP_LOC >> self.thread_bits)
                .with_context(|| format!("thpfioscale: THP thread {t} holds too many blocks"))?;
            zones.own(p, THP_LOC | loc << self.thread_bits | t as u32);
        }
        held.push((p, o));
        Ok(())
    }

    /// Is some zone of `list` above watermark `w` (+ the lowmem reserve of a request that may
    /// use every zone) for an order-0 request?
    fn any_above(ctx: &Ctx<'_>, list: &[usize], w: usize) -> bool {
        let zones = ctx.allocator().zones();
        list.iter().any(|&i| {
            let z = &zones[i];
            z.watermark_ok(Order(0), z.wmark_pages(w), ZoneType::Movable, AllocFlags::default())
        })
    }

    /// What the kernel does before (and in the slow path of) a request that may reclaim:
    /// wake the kswapds if the fast path would fail (4.20 `wakeup_kswapd` with the request's
    /// order and highest zone), reclaim directly while no zone is above MIN. A kswapd whose
    /// nap has ended is looked at first (see [`Kswapd::nap_over`]).
    fn prepare<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, gfp: Gfp, order: Order) -> Result<()> {
        let node = self.cpu_node[ctx.cpu() as usize] as usize;
        for m in 0..self.nr_nodes {
            let now = ctx.now();
            let k = &self.kswapd[m];
            // Before the nap's end `nap_over` does nothing: most requests skip its lock.
            if now < k.nap_end.load(Relaxed) {
                continue;
            }
            let wake = k.with(|k| k.nap_over(&NodeReclaim::new(self, s, ctx, m), now));
            if wake {
                ctx.wake(self.kswapd_cpu[m], now);
            }
        }
        if Self::any_above(ctx, &self.zones(ctx).zonelist[node], WMARK_LOW) {
            return Ok(());
        }
        for m in 0..self.nr_nodes {
            let r = NodeReclaim::new(self, s, ctx, m);
            let wake = self.kswapd[m].with(|k| k.wake(&r, order, gfp.zone()));
            if wake {
                s.count(&self.stats.kswapd_wakes, 1);
                let now = ctx.now();
                ctx.wake(self.kswapd_cpu[m], now);
            }
        }
        // Bounded: each pass frees up to 32 pages or gives up.
        for _ in 0..64 {
            if Self::any_above(ctx, &self.zones(ctx).zonelist[node], WMARK_MIN) {
                break;
            }
            if self.direct_reclaim(ctx, s, node, SWAP_CLUSTER_MAX)? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Direct reclaim of `want` pages on this CPU (one `try_to_free_pages`): the local node
    /// first, then the others.
    fn direct_reclaim<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        node: usize,
        want: u64,
    ) -> Result<u64> {
        let got = self.direct_reclaim_from(ctx, s, node, want, u64::MAX)?;
        self.snapshot_refaults(s);
        Ok(got)
    }

    /// The end of a direct reclaim (4.20 `do_try_to_free_pages`): every node of the
    /// zonelist, which here is every node, notes its refault activations.
    fn snapshot_refaults<S: Shared>(&self, s: &S) {
        let mut cache = s.cache();
        for m in 0..self.nr_nodes {
            cache.workingset.snapshot(m);
        }
    }

    /// Direct reclaim of `want` pages on this CPU from the nodes in the mask `nodes` (bit
    /// `m` for node `m`): the local node first, then the others. Part of a reclaim whose
    /// caller ends it ([`Self::snapshot_refaults`]).
    fn direct_reclaim_from<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        node: usize,
        want: u64,
        nodes: u64,
    ) -> Result<u64> {
        let mut got = 0;
        for k in 0..self.nr_nodes {
            let m = (node + k) % self.nr_nodes;
            if nodes & 1 << m == 0 {
                continue;
            }
            got += self.reclaim(ctx, s, m, want - got)?;
            if got >= want {
                break;
            }
        }
        s.count(&self.stats.direct_pages, got);
        Ok(got)
    }

    /// Allocate with reclaim as the kernel would do it: prepare, allocate, and after a failure
    /// reclaim a batch and retry a few times.
    fn alloc_reclaiming<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        gfp: Gfp,
        order: Order,
    ) -> Result<Option<Pfn>> {
        self.prepare(ctx, s, gfp, order)?;
        for _ in 0..8 {
            if let Some(p) = ctx.alloc(gfp, order) {
                return Ok(Some(p));
            }
            let node = self.cpu_node[ctx.cpu() as usize] as usize;
            if self.direct_reclaim(ctx, s, node, SWAP_CLUSTER_MAX)? == 0 {
                break;
            }
        }
        Ok(None)
    }

    /// Direct reclaim on this CPU: evict up to `want` of node `node`'s oldest page-cache
    /// pages and scan the node's files in proportion, under the cache lock; free what that
    /// took out after letting it go; tell the node's kswapd. Returns the pages evicted.
    fn reclaim<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, node: usize, want: u64) -> Result<u64> {
        let mut frees = Vec::new();
        let got = s.cache().reclaim_scan(ctx, node, want, &mut frees);
        free_all(ctx, frees)?;
        self.kswapd[node].with(|k| k.reclaimed(got));
        Ok(got)
    }

    /// Allocate one object of cache `c` on this CPU; returns its slab id or NONE. The
    /// cache lock is let go while a new slab's pages are allocated (a slab replaced on the
    /// CPU meanwhile goes partial, as SLUB's does).
    fn slab_alloc<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, c: usize) -> Result<u32> {
        let cpu = ctx.cpu() as usize;
        let node = self.cpu_node[cpu] as usize;
        let (order, cap) = {
            let mut cache = s.cache();
            if let Some(id) = cache.slab_from_cpu_or_partial(c, cpu, node) {
                return Ok(id);
            }
            cache.slab_spec[c]
        };
        // A new slab: the preferred order without reclaim, then order 0 with it (4.20
        // allocate_slab).
        let spec = CACHES[c];
        let mut got = None;
        if order > 0 {
            let gfp =
                Gfp((spec.gfp | Gfp::NOWARN | Gfp::NOMEMALLOC | Gfp::COMP).0 & !Gfp::RECLAIM.0);
            got = ctx.alloc(gfp, Order(order)).map(|p| (p, order, cap));
        }
        if got.is_none() {
            let cap0 = 4096u32.checked_div(spec.size).map_or(cap, |n| n as u16);
            got = self.alloc_reclaiming(ctx, s, spec.gfp, Order(0))?.map(|p| (p, 0, cap0));
        }
        let Some((pfn, order, cap)) = got else { return Ok(NONE) };
        let mut cache = s.cache();
        let slab = Slab {
            pfn: frame_of(cache.base, pfn)?,
            live: 1,
            cap,
            cache: c as u8,
            order,
            node: node as u8,
            alive: true,
            in_partial: false,
            current: true,
        };
        Ok(cache.new_slab(slab, cpu))
    }

    /// Give a file its dentry, inode and cluster-buffer share (and an inode log item when it is
    /// created), and put it on its node's file LRU.
    fn instantiate<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        f: usize,
        create: bool,
    ) -> Result<()> {
        let node = self.cpu_node[ctx.cpu() as usize] as usize;
        let caches: &[usize] = if create {
            &[DENTRY, XFS_INODE, CLUSTER, XFS_ILI]
        } else {
            &[DENTRY, XFS_INODE, CLUSTER]
        };
        for &c in caches {
            let id = self.slab_alloc(ctx, s, c)?;
            s.cache().files[f].objs[c] = id;
        }
        let mut cache = s.cache();
        let file = &mut cache.files[f];
        file.has_slab = true;
        file.referenced = true;
        file.node = node as u8;
        file.inst = file.inst.wrapping_add(1);
        let inst = file.inst;
        cache.files_with_slab[node] += 1;
        cache.file_lru[node].push_back((f as u32, inst));
        Ok(())
    }

    /// Put a new page-cache page of block `b` of file `f` in the cache (with the radix-tree
    /// node if the file has none), brought in by a write or (`read`) a read that missed. The
    /// file is open on this CPU, so reclaim leaves its slab objects alone meanwhile. A page of
    /// a file that has its radix-tree node (all but the first) takes the cache lock once.
    fn add_page<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        f: usize,
        b: usize,
        pfn: Pfn,
        read: bool,
    ) -> Result<()> {
        let node = pfn_node(ctx, pfn);
        let mut cache = s.cache();
        if cache.files[f].objs[RADIX] == NONE && cache.files[f].has_slab {
            // The slab may reclaim: the lock is let go meanwhile.
            drop(cache);
            let id = self.slab_alloc(ctx, s, RADIX)?;
            cache = s.cache();
            cache.files[f].objs[RADIX] = id;
        }
        let frame = frame_of(cache.base, pfn)?;
        self.zones(ctx).own(pfn, (f * MAX_FILE_PAGES + b) as u32);
        cache.insert_page(f, b, frame, node, read);
        Ok(())
    }

    /// Open or close file `f`.
    fn set_open<S: Shared>(&self, s: &S, f: usize, open: bool) {
        s.cache().files[f].open = open;
    }

    fn step_writer<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, job: &mut Job) -> Result<Next> {
        let f = job.file as usize;
        let b = job.page as usize;
        if b == 0 {
            self.set_open(s, f, true);
            self.instantiate(ctx, s, f, true)?;
            // A new directory block every DIR_ENTRIES_PER_BLOCK entries of this job's
            // directory.
            if job.dir_block_fill == 0 {
                if let Some(p) = self.alloc_reclaiming(ctx, s, Gfp::KERNEL, Order(0))? {
                    s.cache().dir_blocks.push(p);
                }
            }
            job.dir_block_fill = (job.dir_block_fill + 1) % DIR_ENTRIES_PER_BLOCK;
            ctx.work(self.create);
        }
        match self.alloc_reclaiming(ctx, s, Gfp::HIGHUSER_MOVABLE, Order(0))? {
            Some(p) => {
                ctx.touch(p, 4096);
                self.add_page(ctx, s, f, b, p, false)?;
            }
            None => s.count(&self.stats.pagecache_failures, 1),
        }
        ctx.work(self.write_page);
        s.count(&self.stats.pages_written, 1);
        job.written += 1;
        job.page += 1;
        if job.page as usize == self.file_pages {
            job.page = 0;
            self.set_open(s, f, false);
            job.file += 1;
            if job.file == job.first_file + self.files_per_job {
                return self.writer_finished(ctx, job);
            }
        }
        // Throttled to the device: this job's share of the bandwidth.
        let due = job.written * self.page_interval;
        Ok(sleep_until(ctx, due))
    }

    /// A writer is done. The last one ends fio's write job (INIT_TIME): the readers start,
    /// and the THP program after the warm-up. The others wait for it; each task turns
    /// itself to the next phase when it next steps (`step_waiting`), so the wakes come after
    /// the phase is published and none is lost.
    fn writer_finished(&self, ctx: &mut Ctx<'_>, job: &mut Job) -> Result<Next> {
        let (now, thp_start) = {
            let mut phase = lock(&self.phase);
            phase.writers_done += 1;
            phase.init_time = phase.init_time.max(ctx.now());
            if phase.writers_done < self.fio_threads {
                job.state = JobState::WaitRead;
                return Ok(Next::Block);
            }
            let now = phase.init_time;
            phase.thp_start = now + (self.warmup * phase.init_time as f64) as u64;
            phase.reading = true;
            (now, phase.thp_start)
        };
        job.state = JobState::Read;
        job.file = NONE;
        for (k, &cpu) in self.job_cpus.iter().enumerate() {
            if k != job.index {
                ctx.wake(cpu, now);
            }
        }
        for &cpu in &self.thp_cpus {
            ctx.wake(cpu, thp_start);
        }
        if self.thp_cpus.is_empty() {
            self.finish(ctx);
        }
        Ok(Next::Continue)
    }

    /// The write phase over (told by the last writer's wake), a waiting reader starts
    /// reading; until then it waits.
    fn step_waiting<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, job: &mut Job) -> Result<Next> {
        if !lock(&self.phase).reading {
            return Ok(Next::Block);
        }
        job.state = JobState::Read;
        job.file = NONE;
        self.step_reader(ctx, s, job)
    }

    fn step_reader<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, job: &mut Job) -> Result<Next> {
        if self.stop.load(SeqCst) {
            job.state = JobState::Done;
            if job.file != NONE {
                self.set_open(s, job.file as usize, false);
            }
            return Ok(Next::Done);
        }
        if job.file == NONE {
            let f = job.first_file + ctx.rng().below(u64::from(self.files_per_job)) as u32;
            job.file = f;
            job.page = 0;
            let has_slab = {
                let mut cache = s.cache();
                let file = &mut cache.files[f as usize];
                file.open = true;
                file.referenced = true;
                file.has_slab
            };
            if !has_slab {
                // The inode was reclaimed: look it up again, reading its cluster buffer.
                s.count(&self.stats.lookups, 1);
                self.instantiate(ctx, s, f as usize, false)?;
                ctx.work(self.lookup);
                let due = ctx.now() + self.read_latency;
                return Ok(sleep_until(ctx, due));
            }
        }
        let f = job.file as usize;
        let b = job.page as usize;
        s.count(&self.stats.reads, 1);
        let mut wait = 0;
        // A hit is marked accessed under the lock (mark_page_accessed: a second access
        // activates an inactive page), then read.
        let hit = {
            let mut cache = s.cache();
            let frame = cache.files[f].pages[b];
            (frame != NONE).then(|| {
                let p = pfn_of(cache.base, frame);
                cache.mark_accessed(f, b, pfn_node(ctx, p));
                p
            })
        };
        match hit {
            Some(p) => {
                ctx.touch(p, 4096);
            }
            None => {
                s.count(&self.stats.read_misses, 1);
                match self.alloc_reclaiming(ctx, s, Gfp::HIGHUSER_MOVABLE, Order(0))? {
                    Some(p) => {
                        ctx.touch(p, 4096);
                        self.add_page(ctx, s, f, b, p, true)?;
                    }
                    None => s.count(&self.stats.pagecache_failures, 1),
                }
                wait = self.read_latency;
            }
        }
        ctx.work(self.read_cost);
        job.page += 1;
        if job.page as usize == self.file_pages {
            self.set_open(s, f, false);
            job.file = NONE;
        }
        let due = ctx.now() + wait;
        Ok(sleep_until(ctx, due))
    }

    /// One step of `task`, this CPU's.
    fn step_task<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, task: &mut Task) -> Result<Next> {
        match task {
            Task::Fio(job) => match job.state {
                JobState::Write => self.step_writer(ctx, s, job),
                JobState::WaitRead => self.step_waiting(ctx, s, job),
                JobState::Read => self.step_reader(ctx, s, job),
                JobState::Done => Ok(Next::Done),
            },
            Task::Thp(th) => self.step_thp(ctx, s, th),
            Task::Kswapd(n) => self.step_kswapd(ctx, s, *n),
            Task::Idle => Ok(Next::Done),
        }
    }

    fn step_thp<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, th: &mut ThpThread) -> Result<Next> {
        let t = th.index;
        match th.state {
            ThpState::Wait => {
                let (reading, start) = {
                    let phase = lock(&self.phase);
                    (phase.reading, phase.thp_start)
                };
                if !reading {
                    return Ok(Next::Block);
                }
                if ctx.now() < start {
                    return Ok(Next::SleepUntil(start));
                }
                th.state = ThpState::Huge;
                self.step_thp(ctx, s, th)
            }
            ThpState::Huge => {
                if th.steps_left == 0 {
                    th.state = ThpState::Unmap;
                    return Ok(Next::Continue);
                }
                th.step_start = ctx.now();
                self.sample_nonmovable_free(ctx, s);
                let Some(p) = self.thp_alloc(ctx, s)? else {
                    th.state = ThpState::Base(0);
                    return Ok(Next::Continue);
                };
                self.hold(t, p, HPAGE_ORDER)?;
                let home = ctx.allocator().zone_of(p).map(|z| z.node().index());
                if home != Some(self.cpu_node[ctx.cpu() as usize] as usize) {
                    s.count(&self.stats.huge_remote, 1);
                }
                self.page_table_page(ctx, s, t)?;
                // clear_huge_page, then the program's memset.
                ctx.touch(p, 2 << 20);
                ctx.touch(p, 2 << 20);
                ctx.work(self.thp_fault);
                s.count(&self.stats.huge_ps, ctx.now() - th.step_start);
                s.count(&self.stats.huge_steps, 1);
                th.steps_left -= 1;
                Ok(Next::Continue)
            }
            ThpState::Base(done) => {
                if done == 0 {
                    self.page_table_page(ctx, s, t)?;
                }
                match self.alloc_reclaiming(ctx, s, Gfp::HIGHUSER_MOVABLE, Order(0))? {
                    Some(p) => {
                        self.hold(t, p, Order(0))?;
                        ctx.touch(p, 4096);
                        ctx.touch(p, 4096);
                    }
                    None => s.count(&self.stats.pagecache_failures, 1),
                }
                ctx.work(self.fault);
                if done + 1 == HPAGE_PAGES {
                    s.count(&self.stats.base_ps, ctx.now() - th.step_start);
                    s.count(&self.stats.base_steps, 1);
                    th.steps_left -= 1;
                    th.state = ThpState::Huge;
                } else {
                    th.state = ThpState::Base(done + 1);
                }
                Ok(Next::Continue)
            }
            ThpState::Unmap => {
                // The last HPAGE_PAGES blocks, taken out under the lock and freed last first.
                let (batch, empty) = {
                    let mut held = lock(&self.held[t]);
                    let keep = held.len().saturating_sub(HPAGE_PAGES.into());
                    let mut batch = held.split_off(keep);
                    batch.reverse();
                    (batch, held.is_empty())
                };
                for (p, o) in batch {
                    ctx.free(p, o)?;
                }
                if empty {
                    th.state = ThpState::Done;
                    if self.thp_done.fetch_add(1, SeqCst) + 1 == self.thp_cpus.len() {
                        self.finish(ctx);
                    }
                    return Ok(Next::Done);
                }
                Ok(Next::Continue)
            }
            ThpState::Done => Ok(Next::Done),
        }
    }

    /// Note the free pages on the unmovable and reclaimable lists of this CPU's node as a THP
    /// step starts (metric `nonmovable_free_pages`, the mean over the steps): memory that
    /// movable requests reach only by a fallback once their own lists are empty, so the
    /// fragmenting fallbacks are bounded by how far it exceeds the zone's LOW watermark
    /// (docs/reproduction.md, 002-thpfioscale). With it, the pages on the node's inactive file
    /// list (`inactive_file_pages`, the mean): how soon a page brought in now is evicted.
    /// Reading the lists decides nothing.
    fn sample_nonmovable_free<S: Shared>(&self, ctx: &Ctx<'_>, s: &S) {
        let node = self.cpu_node[ctx.cpu() as usize] as usize;
        let zones = ctx.allocator().zones();
        let free: u64 = self.zones(ctx).node_zones[node]
            .iter()
            .map(|&i| nonmovable_free(&zones[i].free_list_counts()))
            .sum();
        s.count(&self.stats.nonmovable_free_sum, free);
        s.count(&self.stats.nonmovable_free_samples, 1);
        let cache = s.cache();
        s.count(&self.stats.inactive_sum, cache.cached_pages[node] - cache.active_pages[node]);
    }

    /// The PTE page of a 2 MiB region (base faults), or the page table deposited with a huge
    /// page: order-0 unmovable (GFP_KERNEL).
    fn page_table_page<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, t: usize) -> Result<()> {
        if let Some(p) = self.alloc_reclaiming(ctx, s, Gfp::KERNEL, Order(0))? {
            self.hold(t, p, Order(0))?;
        }
        Ok(())
    }

    /// A THP fault's huge page (4.20 `alloc_hugepage_direct_gfpmask` with the default
    /// `defrag=madvise`): not madvised, `GFP_TRANSHUGE_LIGHT | __GFP_THISNODE`, one try on
    /// the faulting CPU's node without reclaim or compaction (every kernel from 4.0's
    /// 077fcf116c8c to 5.2 keeps such a request on the local node: by `alloc_pages_vma`'s
    /// rule for huge pages, or, in the 4.20-rc kernels with 89c83fb539f9, by the mask, which
    /// adds `__GFP_THISNODE` to a request without direct reclaim). Madvised, `GFP_TRANSHUGE`
    /// as 89c83fb539f9 left it, any node: after the first try fails, direct reclaim of
    /// `compact_gap` pages, then a retry that (with compaction) compacts directly in the slow
    /// path. 4.20's `__alloc_pages_slowpath` runs an async compaction before that reclaim; the
    /// library's compacting call runs its async and its sync-light compaction together, so
    /// here both follow the reclaim (see docs/workloads.md §7.2). Neither GFP wakes kswapd.
    fn thp_alloc<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S) -> Result<Option<Pfn>> {
        let gfp = if self.madv { Gfp::TRANSHUGE } else { Gfp::TRANSHUGE_LIGHT | Gfp::THISNODE };
        let p = ctx.alloc(gfp, HPAGE_ORDER);
        if p.is_some() || !self.madv {
            return Ok(p);
        }
        let node = self.cpu_node[ctx.cpu() as usize] as usize;
        if !self.compaction {
            self.direct_reclaim(ctx, s, node, COMPACT_GAP_ORDER9)?;
            return Ok(ctx.alloc(gfp, HPAGE_ORDER));
        }
        // 4.20's slow path for a costly request: an async compaction first, then direct
        // reclaim and a try, then a compaction at the default priority (sync-light); a costly
        // request without __GFP_RETRY_MAYFAIL gives up there.
        let mut mover = Mover(self, s);
        if let Some(p) = ctx.compact_and_alloc(gfp, HPAGE_ORDER, CompactMode::Async, &mut mover) {
            return Ok(Some(p));
        }
        self.costly_direct_reclaim(ctx, s, node, gfp)?;
        if let Some(p) = ctx.alloc(gfp, HPAGE_ORDER) {
            return Ok(Some(p));
        }
        Ok(ctx.compact_and_alloc(gfp, HPAGE_ORDER, CompactMode::SyncLight, &mut mover))
    }

    /// 4.20 `try_to_free_pages` for a THP fault that may compact: `shrink_zones` leaves a
    /// zone that is `compaction_ready` alone and shrinks each node of the zonelist that has a
    /// zone that is not (a node with a zone not ready is shrunk whole: its LRU is the node's);
    /// a shrunk node gives `compact_gap` pages and more until compaction could run (4.20
    /// `should_continue_reclaim`). With every zone ready nothing is reclaimed. (Once a zone
    /// was ready, 4.20's `do_try_to_free_pages` makes no second round at a higher priority;
    /// the model's direct reclaim makes one round anyway.)
    fn costly_direct_reclaim<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        node: usize,
        gfp: Gfp,
    ) -> Result<()> {
        let zones = ctx.allocator().zones();
        let (mut shrink, mut ready) = (0u64, false);
        for &i in &self.zones(ctx).zonelist[node] {
            if compaction_ready(&zones[i], HPAGE_ORDER, gfp.zone()) {
                ready = true;
            } else {
                shrink |= 1 << zones[i].node().index();
            }
        }
        s.count(&self.stats.reclaim_compaction_ready, u64::from(ready));
        if shrink == 0 {
            s.count(&self.stats.reclaim_skipped, 1);
        } else {
            self.direct_reclaim_from(ctx, s, node, COMPACT_GAP_ORDER9, shrink)?;
            self.reclaim_for_compaction(ctx, s, node, gfp, shrink)?;
        }
        self.snapshot_refaults(s);
        Ok(())
    }

    /// 4.20 `should_continue_reclaim` for a costly order with compaction: reclaim of the
    /// nodes in the mask `nodes` goes on past `compact_gap` until compaction could run in
    /// some zone of the node's zonelist (`compaction_suitable`), or reclaim finds nothing
    /// more to evict.
    fn reclaim_for_compaction<S: Shared>(
        &self,
        ctx: &mut Ctx<'_>,
        s: &S,
        node: usize,
        gfp: Gfp,
        nodes: u64,
    ) -> Result<()> {
        let threshold = ctx.allocator().tunables().extfrag_threshold;
        let suitable = |ctx: &Ctx<'_>| {
            let zones = ctx.allocator().zones();
            self.zones(ctx).zonelist[node]
                .iter()
                .any(|&i| zones[i].compaction_suitable(HPAGE_ORDER, gfp.zone(), threshold))
        };
        while !suitable(ctx) {
            if self.direct_reclaim_from(ctx, s, node, SWAP_CLUSTER_MAX, nodes)? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// The THP program is done: fio is killed, kswapd has nothing left to do (the flag is
    /// set before the wakes, so a kswapd woken sees it).
    fn finish(&self, ctx: &mut Ctx<'_>) {
        self.stop.store(true, SeqCst);
        let now = ctx.now();
        for &cpu in &self.kswapd_cpu {
            ctx.wake(cpu, now);
        }
    }

    /// One step of node `node`'s kswapd (`workload::kswapd`): a batch of reclaim, the balance
    /// check between passes, or sleep. The step's decisions are made under the kswapd's
    /// lock (and the cache lock for the batch); the pages the batch took out are freed, and
    /// kcompactd runs on going to sleep, after both are let go.
    fn step_kswapd<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, node: usize) -> Result<Next> {
        if self.stop.load(SeqCst) {
            return Ok(Next::Done);
        }
        let now = ctx.now();
        let mut r = NodeReclaim::new(self, s, ctx, node);
        let next = self.kswapd[node].with(|k| k.step(&mut r, now));
        let (frees, to_sleep) = (r.frees, r.going_to_sleep);
        free_all(ctx, frees)?;
        if to_sleep {
            self.wake_kcompactd(ctx, s, node)?;
        }
        Ok(match next? {
            KswapdNext::Continue => Next::Continue,
            KswapdNext::Block => Next::Block,
        })
    }

    /// As kswapd goes to sleep it clears the skip hints of zones where a direct compaction's
    /// scanners met (4.20 `kswapd_try_to_sleep` → `reset_isolation_suitable`: the memory it
    /// freed may make compaction succeed again), then wakes kcompactd for the order it was
    /// woken with (`wakeup_kcompactd`, which ignores order 0); here kcompactd runs on
    /// kswapd's CPU when the library says an allocation asked for it. Never without a
    /// request: proactive compaction came with 5.9.
    fn wake_kcompactd<S: Shared>(&self, ctx: &mut Ctx<'_>, s: &S, node: usize) -> Result<()> {
        if !self.compaction {
            return Ok(());
        }
        ctx.allocator().reset_isolation_suitable(NodeId(node as u32))?;
        if ctx.allocator().kcompactd_pending(NodeId(node as u32)).is_none() {
            return Ok(());
        }
        ctx.kcompactd(node as u32, &mut Mover(self, s))?;
        Ok(())
    }

    /// Point the slot that holds the block `from` at `to`; false if no slot holds it. The
    /// slot is checked and moved under its lock (the cache's, or the THP thread's `held`).
    fn move_page<S: Shared>(&self, s: &S, from: Pfn, to: Pfn, order: Order) -> bool {
        let Some(zones) = self.zones.get() else { return false };
        let (Some(entry), Ok(to_u32)) = (zones.owner_of(from), frame_of(zones.base, to)) else {
            return false;
        };
        let loc = entry.load(Relaxed);
        if loc == NONE {
            return false;
        }
        let moved = |zones: &Zones| {
            zones.own(from, NONE);
            zones.own(to, loc);
            true
        };
        if loc & THP_LOC == 0 {
            let (f, b) = (loc as usize / MAX_FILE_PAGES, loc as usize % MAX_FILE_PAGES);
            let mut cache = s.cache();
            match cache.files.get_mut(f).map(|file| &mut file.pages[b]) {
                Some(p) if pfn_of(zones.base, *p) == from && order.0 == 0 => {
                    *p = to_u32;
                    moved(zones)
                }
                _ => false,
            }
        } else {
            let t = (loc & ((1 << self.thread_bits) - 1)) as usize;
            let i = ((loc & !THP_LOC) >> self.thread_bits) as usize;
            let Some(slots) = self.held.get(t) else { return false };
            let mut held = lock(slots);
            match held.get_mut(i) {
                Some(h) if *h == (from, order) => {
                    h.0 = to;
                    moved(zones)
                }
                _ => false,
            }
        }
    }
}

impl Cache {
    /// An object of cache `c` from this CPU's current slab or the node's partial list, or
    /// None when a new slab is needed (a full current slab leaves the CPU first, on no list
    /// until an object is freed).
    fn slab_from_cpu_or_partial(&mut self, c: usize, cpu: usize, node: usize) -> Option<u32> {
        let cur = self.current[c * self.nr_cpus + cpu];
        if cur != NONE && self.slabs[cur as usize].live < self.slabs[cur as usize].cap {
            self.slabs[cur as usize].live += 1;
            return Some(cur);
        }
        if cur != NONE {
            self.slabs[cur as usize].current = false;
            self.current[c * self.nr_cpus + cpu] = NONE;
        }
        let list = c * self.nr_nodes + node;
        while let Some(id) = self.partial[list].pop() {
            let s = &mut self.slabs[id as usize];
            if s.alive && s.in_partial && !s.current && s.live < s.cap {
                s.in_partial = false;
                s.current = true;
                s.live += 1;
                self.current[c * self.nr_cpus + cpu] = id;
                return Some(id);
            }
        }
        None
    }

    /// A new slab becomes `cpu`'s current one; returns its id.
    fn new_slab(&mut self, slab: Slab, cpu: usize) -> u32 {
        let c = slab.cache as usize;
        let order = slab.order;
        let id = match self.free_slab_ids.pop() {
            Some(id) => {
                self.slabs[id as usize] = slab;
                id
            }
            None => {
                self.slabs.push(slab);
                (self.slabs.len() - 1) as u32
            }
        };
        // The CPU may have got a new current slab while reclaim ran: the older one stays
        // partial-less until its objects go, as a slab replaced on a CPU does.
        let old = std::mem::replace(&mut self.current[c * self.nr_cpus + cpu], id);
        if old != NONE {
            self.slabs[old as usize].current = false;
            self.make_partial(old);
        }
        self.slab_pages += 1 << order;
        self.slab_pages_peak = self.slab_pages_peak.max(self.slab_pages);
        id
    }

    fn make_partial(&mut self, id: u32) {
        let s = &mut self.slabs[id as usize];
        if s.alive && !s.in_partial && !s.current && s.live < s.cap && s.live > 0 {
            s.in_partial = true;
            let list = s.cache as usize * self.nr_nodes + s.node as usize;
            self.partial[list].push(id);
        }
    }

    /// Free one object of slab `id`; the slab page goes (into `frees`) when its last object
    /// does.
    fn slab_free(&mut self, id: u32, frees: &mut Vec<Free>) {
        let base = self.base;
        let s = &mut self.slabs[id as usize];
        let was_full = s.live == s.cap;
        s.live -= 1;
        if s.live == 0 && !s.current {
            s.alive = false;
            s.in_partial = false;
            let (pfn, order) = (pfn_of(base, s.pfn), Order(s.order));
            self.slab_pages -= 1 << s.order;
            self.free_slab_ids.push(id);
            frees.push((pfn, order, 0));
        } else if was_full {
            self.make_partial(id);
        }
    }

    /// Put page `frame` of node `node`, block `b` of file `f`, on the node's lists,
    /// referenced (`mark_page_accessed` after the read that brought it in, or the write's
    /// `FGP_ACCESSED`). A read that finds the shadow of the block's eviction is a refault
    /// (4.20 `add_to_page_cache_lru` → `workingset_refault`; a write, `__GFP_WRITE`, does not
    /// look): within the refault distance the page starts on the active list.
    fn insert_page(&mut self, f: usize, b: usize, frame: u32, node: usize, read: bool) {
        let bit = 1u16 << b;
        let file = &mut self.files[f];
        let shadow = (file.shadowed & bit != 0).then_some(file.shadow[b]);
        file.shadowed &= !bit;
        file.pages[b] = frame;
        file.cached += 1;
        file.accessed |= bit;
        let active = match shadow {
            Some(shadow) if read => {
                let sizes = &self.active_pages;
                self.workingset.refault(shadow, |n| sizes.get(n).copied().unwrap_or(0))
            }
            _ => false,
        };
        self.cached_pages[node] += 1;
        self.enqueue(f, b, node, active);
    }

    /// Put the cached block `b` of file `f` at the head of node `node`'s active or inactive
    /// list, counting it there; its entries elsewhere become stale.
    fn enqueue(&mut self, f: usize, b: usize, node: usize, active: bool) {
        let (file, bit) = (&mut self.files[f], 1u16 << b);
        let was_active = file.active & bit != 0;
        file.gen[b] = file.gen[b].wrapping_add(1);
        let e = lru_entry(f, b, file.gen[b]);
        if active {
            file.active |= bit;
            self.active[node].push_back(e);
        } else {
            file.active &= !bit;
            self.inactive[node].push_back(e);
        }
        match (was_active, active) {
            (false, true) => self.active_pages[node] += 1,
            (true, false) => self.active_pages[node] -= 1,
            _ => {}
        }
    }

    /// 4.20 `mark_page_accessed` on a read hit of cached block `b` of file `f` (node
    /// `node`): an inactive page already referenced goes to the head of the active list
    /// (`workingset_activation` ages the node); any other becomes referenced.
    fn mark_accessed(&mut self, f: usize, b: usize, node: usize) {
        let (file, bit) = (&mut self.files[f], 1u16 << b);
        if file.active & bit == 0 && file.accessed & bit != 0 {
            file.accessed &= !bit;
            self.enqueue(f, b, node, true);
            self.workingset.activation(node);
            self.activations += 1;
        } else {
            file.accessed |= bit;
        }
    }

    /// The oldest page on node `node`'s active or inactive list, taken off it: (file,
    /// block). Entries of a page since evicted, put on a list again or moved to the other
    /// list are stale and skipped (the generation is 8 bits; the list check keeps an entry
    /// whose generation came round again from counting a page on the wrong list).
    fn pop_oldest(&mut self, node: usize, active: bool) -> Option<(usize, usize)> {
        let list = if active { &mut self.active[node] } else { &mut self.inactive[node] };
        while let Some(e) = list.pop_front() {
            let (f, b, g) = ((e >> 16) as usize, ((e >> 8) & 0xff) as usize, (e & 0xff) as u8);
            let file = &self.files[f];
            let on_active = file.active & (1 << b) != 0;
            if file.pages[b] != NONE && file.gen[b] == g && on_active == active {
                return Some((f, b));
            }
        }
        None
    }

    /// 4.20 `shrink_inactive_list` on clean, unmapped page cache: the oldest `scan` pages of
    /// the inactive list are evicted (`page_check_references` reclaims a clean page whatever
    /// its PG_referenced), each leaving a shadow (`workingset_eviction`). Returns the pages
    /// evicted, which are the pages scanned.
    fn shrink_inactive(&mut self, node: usize, scan: u64, frees: &mut Vec<Free>) -> u64 {
        let mut got = 0;
        while got < scan {
            let Some((f, b)) = self.pop_oldest(node, false) else { break };
            let shadow = self.workingset.evict(node);
            let (file, bit) = (&mut self.files[f], 1u16 << b);
            file.accessed &= !bit;
            file.shadow[b] = shadow;
            file.shadowed |= bit;
            let pfn = pfn_of(self.base, file.pages[b]);
            file.pages[b] = NONE;
            file.cached -= 1;
            self.cached_pages[node] -= 1;
            frees.push((pfn, Order(0), self.reclaim_page));
            got += 1;
        }
        got
    }

    /// 4.20 `shrink_active_list` on unmapped page cache: the oldest `scan` pages of the
    /// active list go to the head of the inactive list (`page_referenced` finds no mapping
    /// to keep one active; PG_referenced stays). Returns the pages moved.
    fn shrink_active(&mut self, node: usize, scan: u64) -> u64 {
        let mut moved = 0;
        while moved < scan {
            let Some((f, b)) = self.pop_oldest(node, true) else { break };
            self.enqueue(f, b, node, false);
            moved += 1;
        }
        self.deactivations += moved;
        moved
    }

    /// 4.20 `inactive_list_is_low` for node `node`'s file lists in actual reclaim.
    fn inactive_is_low(&self, node: usize) -> bool {
        let active = self.active_pages[node];
        let inactive = self.cached_pages[node] - active;
        workingset::inactive_is_low(inactive, active, self.workingset.refaulting(node))
    }

    /// One round of 4.20 `shrink_node_memcg`'s loop on node `node`: [`Self::shrink_lists`],
    /// then the node's files scanned in proportion to the evictions. What it evicts goes into
    /// `frees`. Returns (pages evicted, pages deactivated).
    fn shrink_round(
        &mut self,
        ctx: &Ctx<'_>,
        node: usize,
        inactive: u64,
        active: u64,
        frees: &mut Vec<Free>,
    ) -> (u64, u64) {
        let lru_before = self.cached_pages[node];
        let (got, moved) = self.shrink_lists(node, inactive, active, frees);
        self.shrink_slab(ctx, node, got, lru_before, frees);
        (got, moved)
    }

    /// The page-cache part of a round (`shrink_list` for each file list, inactive first): up
    /// to `inactive` pages of the inactive list are reclaimed, then up to `active` pages of
    /// the active list are deactivated if the inactive list is low. Returns (pages evicted —
    /// the inactive pages scanned, every page being clean —, pages deactivated).
    fn shrink_lists(
        &mut self,
        node: usize,
        inactive: u64,
        active: u64,
        frees: &mut Vec<Free>,
    ) -> (u64, u64) {
        let got = self.shrink_inactive(node, inactive, frees);
        let moved = if self.inactive_is_low(node) { self.shrink_active(node, active) } else { 0 };
        (got, moved)
    }

    /// Direct reclaim of node `node`: rounds of `SWAP_CLUSTER_MAX` pages of each list (the
    /// inactive share cut to what is still wanted) until `want` pages are evicted or a round
    /// finds nothing to evict or deactivate. Returns the pages evicted.
    fn reclaim_scan(
        &mut self,
        ctx: &Ctx<'_>,
        node: usize,
        want: u64,
        frees: &mut Vec<Free>,
    ) -> u64 {
        let mut got = 0;
        while got < want {
            let batch = (want - got).min(SWAP_CLUSTER_MAX);
            let (evicted, moved) = self.shrink_round(ctx, node, batch, SWAP_CLUSTER_MAX, frees);
            got += evicted;
            if evicted == 0 && moved == 0 {
                break;
            }
        }
        got
    }

    /// The node's file LRU (dentries and inodes) scanned in proportion to `got` page-cache
    /// pages evicted from an LRU of `lru_before` pages (4.20 `shrink_slab`, see
    /// [`SLAB_SCAN_RATIO`]).
    fn shrink_slab(
        &mut self,
        ctx: &Ctx<'_>,
        node: usize,
        got: u64,
        lru_before: u64,
        frees: &mut Vec<Free>,
    ) {
        if got == 0 || lru_before == 0 {
            return;
        }
        self.shrink_credit[node] +=
            SLAB_SCAN_RATIO * got as f64 * self.files_with_slab[node] as f64 / lru_before as f64;
        let mut scans = self.file_lru[node].len();
        while self.shrink_credit[node] >= 1.0 && scans > 0 {
            self.shrink_credit[node] -= 1.0;
            scans -= 1;
            self.shrink_one_file(ctx, node, frees);
        }
        // Credit that found nothing to scan is not carried forward.
        if scans == 0 {
            self.shrink_credit[node] = self.shrink_credit[node].min(1.0);
        }
    }

    /// Scan the oldest file of the node's file LRU: rotate it if it is in use, referenced or
    /// holds more than one cached page; free its slab objects (and its last page) otherwise.
    fn shrink_one_file(&mut self, ctx: &Ctx<'_>, node: usize, frees: &mut Vec<Free>) {
        while let Some((f, inst)) = self.file_lru[node].pop_front() {
            let file = &mut self.files[f as usize];
            if !file.has_slab || file.inst != inst || file.node as usize != node {
                continue; // stale: scanning it costs nothing
            }
            if file.open || file.referenced || file.cached > 1 {
                file.referenced = false;
                self.file_lru[node].push_back((f, inst));
                return;
            }
            self.evict_file(ctx, f as usize, frees);
            return;
        }
    }

    /// Inode eviction: truncate the remaining page cache, free the slab objects.
    fn evict_file(&mut self, ctx: &Ctx<'_>, f: usize, frees: &mut Vec<Free>) {
        let base = self.base;
        for b in 0..self.file_pages {
            let file = &mut self.files[f];
            if file.pages[b] != NONE {
                let pfn = pfn_of(base, file.pages[b]);
                let bit = 1u16 << b;
                let node = pfn_node(ctx, pfn);
                if file.active & bit != 0 {
                    self.active_pages[node] -= 1;
                }
                file.pages[b] = NONE;
                file.cached -= 1;
                file.accessed &= !bit;
                file.active &= !bit;
                self.cached_pages[node] -= 1;
                frees.push((pfn, Order(0), self.reclaim_page));
            }
        }
        // Truncation drops the shadows with the pages.
        self.files[f].shadowed = 0;
        for c in 0..NR_CACHES {
            let id = std::mem::replace(&mut self.files[f].objs[c], NONE);
            if id != NONE {
                self.slab_free(id, frees);
            }
        }
        let file = &mut self.files[f];
        file.has_slab = false;
        self.files_with_slab[file.node as usize] -= 1;
        self.inode_evictions += 1;
    }
}

/// Free pages on the unmovable and reclaimable free lists of a zone whose free blocks per
/// (order, migratetype) are `counts` (`Zone::free_list_counts`, what `/proc/pagetypeinfo`
/// prints): a block of order `o` is `2^o` pages.
fn nonmovable_free(counts: &[[u64; MIGRATE_TYPES]; NR_PAGE_ORDERS]) -> u64 {
    let types = [MigrateType::Unmovable.index(), MigrateType::Reclaimable.index()];
    counts.iter().enumerate().map(|(o, row)| types.iter().map(|&t| row[t] << o).sum::<u64>()).sum()
}

/// A list entry: block `b` of file `f` in generation `gen`.
fn lru_entry(f: usize, b: usize, gen: u8) -> u64 {
    ((f as u64) << 16) | ((b as u64) << 8) | u64::from(gen)
}

/// Free the blocks a step took out under the cache lock, in the order it took them, each
/// followed by its reclaim work: the calls the model made when it freed them as it went.
fn free_all(ctx: &mut Ctx<'_>, frees: Vec<Free>) -> Result<()> {
    for (i, &(pfn, order, work)) in frees.iter().enumerate() {
        if let Some(&(ahead, _, _)) = frees.get(i + PREFETCH_AHEAD) {
            ctx.prefetch(ahead);
        }
        ctx.free(pfn, order)?;
        ctx.work(work);
    }
    Ok(())
}

fn pfn_node(ctx: &Ctx<'_>, pfn: Pfn) -> usize {
    ctx.allocator().zone_of(pfn).map_or(0, |z| z.node().index())
}

/// A node of the run as its kswapd sees it: the workload's LRU and the allocator's zones.
/// A batch's evictions are collected in `frees` and its going to sleep noted, for the
/// caller to carry out once the kswapd's lock is let go.
struct NodeReclaim<'w, 'c, 'a, S> {
    w: &'w ThpFioScale,
    s: &'w S,
    ctx: &'c Ctx<'a>,
    node: usize,
    frees: Vec<Free>,
    going_to_sleep: bool,
}

impl<'w, 'c, 'a, S: Shared> NodeReclaim<'w, 'c, 'a, S> {
    fn new(w: &'w ThpFioScale, s: &'w S, ctx: &'c Ctx<'a>, node: usize) -> Self {
        NodeReclaim { w, s, ctx, node, frees: Vec::new(), going_to_sleep: false }
    }

    /// The node's managed zones up to `classzone`.
    fn zones(&self, classzone: ZoneType) -> impl Iterator<Item = &Zone> + '_ {
        let zones = self.ctx.allocator().zones();
        self.w.zones(self.ctx).node_zones[self.node]
            .iter()
            .map(move |&i| &zones[i])
            .filter(move |z| z.zone_type() <= classzone)
    }
}

impl<S: Shared> KswapdNode for NodeReclaim<'_, '_, '_, S> {
    fn balanced(&self, order: Order, classzone: ZoneType) -> bool {
        let mut any = false;
        for z in self.zones(classzone) {
            any = true;
            if z.watermark_ok(order, z.wmark_pages(WMARK_HIGH), classzone, AllocFlags::default()) {
                return true;
            }
        }
        !any
    }

    fn lru_pages(&self) -> (u64, u64) {
        let cache = self.s.cache();
        let active = cache.active_pages[self.node];
        (cache.cached_pages[self.node] - active, active)
    }

    fn reclaim_target(&self, classzone: ZoneType) -> u64 {
        self.zones(classzone).map(|z| z.wmark_pages(WMARK_HIGH).max(SWAP_CLUSTER_MAX)).sum()
    }

    fn shrink(&mut self, inactive: u64, active: u64) -> Result<(u64, u64)> {
        let mut cache = self.s.cache();
        let (evicted, _) =
            cache.shrink_round(self.ctx, self.node, inactive, active, &mut self.frees);
        Ok((evicted, evicted))
    }

    fn set_reclaim_active(&mut self, active: bool) {
        let pa = self.ctx.allocator();
        for &z in &self.w.zones(self.ctx).node_zones[self.node] {
            pa.set_reclaim_active(pa.zones()[z].idx(), active);
        }
    }

    fn run_ended(&mut self) {
        self.s.cache().workingset.snapshot(self.node);
    }

    fn going_to_sleep(&mut self) -> Result<()> {
        self.going_to_sleep = true;
        Ok(())
    }
}

/// Sleep until `t` (ps): the clock advances, the wait is not counted as work.
fn sleep_until(ctx: &mut Ctx<'_>, t: u64) -> Next {
    if t <= ctx.now() {
        Next::Continue
    } else {
        Next::SleepUntil(t)
    }
}

/// The workload's movable pages move where compaction asks: a page-cache page in its file's
/// slot, a THP thread's block in its `held` slot. The page keeps its file, block, LRU
/// position (the queue names file and block, not frames) and node (compaction stays in
/// its zone). Compaction calls it with no allocator lock held, on whichever CPU compacts.
struct Mover<'w, S>(&'w ThpFioScale, &'w S);

impl<S: Shared> Migrate for Mover<'_, S> {
    fn migrate(&mut self, from: Pfn, to: Target<'_>, order: Order) -> bool {
        self.0.move_page(self.1, from, to.pfn(), order)
    }
}

/// Frame `p` as the workload keeps it: its offset from the zones' `base`, in 32 bits.
fn frame_of(base: u64, p: Pfn) -> Result<u32> {
    match p.0.checked_sub(base) {
        Some(f) if f < u64::from(NONE) => Ok(f as u32),
        _ => bail!("frame {p:?} does not fit the workload's 32-bit frame offsets from {base}"),
    }
}

/// The frame the workload keeps as `f` (see [`frame_of`]).
fn pfn_of(base: u64, f: u32) -> Pfn {
    Pfn(base + u64::from(f))
}

impl Workload for ThpFioScale {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        self.nr_nodes = info.nr_nodes as usize;
        let nr_cpus = info.nr_cpus as usize;
        self.cpu_node = info.cpu_node.clone();
        let per_node_cpus = info.nr_cpus / info.nr_nodes.max(1);
        let thp_threads = if self.thp_threads_param > 0 {
            self.thp_threads_param as usize
        } else {
            ((per_node_cpus as usize).saturating_sub(self.fio_threads) / 4).max(1)
        };
        if self.nr_nodes > 64 {
            bail!("thpfioscale models at most 64 nodes (its reclaim names nodes in a mask)");
        }
        let needed = self.fio_threads + thp_threads + self.nr_nodes;
        if needed > nr_cpus {
            bail!(
                "thpfioscale needs {needed} CPUs ({} fio jobs, {thp_threads} THP threads, one \
                 kswapd per node); the machine has {}: at least one fio job and one THP thread \
                 beside the kswapds need {} CPUs (give a machine with more, e.g. --cpus {})",
                self.fio_threads,
                nr_cpus,
                self.nr_nodes + 2,
                self.nr_nodes + 2
            );
        }
        let mut rng = Rng::new(info.seed ^ 0x7468_7066_696f);
        let thp_node = rng.below(u64::from(info.nr_nodes)) as u32;
        let mut roles = vec![Task::Idle; nr_cpus];
        let mut pick = |roles: &mut Vec<Task>, node: Option<u32>, role: Task| -> Result<u32> {
            let free: Vec<u32> = (0..info.nr_cpus)
                .filter(|&c| matches!(roles[c as usize], Task::Idle))
                .filter(|&c| node.is_none_or(|n| info.cpu_node[c as usize] == n))
                .collect();
            if free.is_empty() {
                bail!("thpfioscale: no free CPU left for {role:?} (node {node:?})");
            }
            let c = free[rng.below(free.len() as u64) as usize];
            roles[c as usize] = role;
            Ok(c)
        };

        // Files: FIO_SIZE / file size / jobs per job.
        let mem_pages: u64 = info.node_managed_pages.iter().sum();
        let total_pages = mem_pages as f64 * self.fio_size_pct / 100.0;
        self.files_per_job =
            ((total_pages / self.file_pages as f64 / self.fio_threads as f64) as u32).max(1);
        // THP program: nr_hpages = THP_SIZE / threads / 2 MiB / 2 per thread.
        let node0 = info.node_managed_pages.first().copied().unwrap_or(0);
        let thp_pages = node0 as f64 * self.thp_size_pct / 100.0;
        let per_thread = (thp_pages / thp_threads as f64 / f64::from(HPAGE_PAGES) / 2.0
            * self.thp_fraction) as u64;

        // kswapd first, so that every node keeps one CPU for it.
        self.kswapd_cpu = (0..self.nr_nodes)
            .map(|n| pick(&mut roles, Some(n as u32), Task::Kswapd(n)))
            .collect::<Result<_>>()?;
        self.thp_cpus = Vec::new();
        for t in 0..thp_threads {
            let th = ThpThread {
                index: t,
                steps_left: per_thread,
                state: ThpState::Wait,
                step_start: 0,
            };
            let on_node = pick(&mut roles, Some(thp_node), Task::Thp(th.clone()));
            self.thp_cpus.push(match on_node {
                Ok(c) => c,
                Err(_) => pick(&mut roles, None, Task::Thp(th))?,
            });
        }
        let files_per_job = self.files_per_job;
        self.job_cpus = (0..self.fio_threads)
            .map(|j| {
                let first_file = j as u32 * files_per_job;
                let job = Job {
                    index: j,
                    first_file,
                    state: JobState::Write,
                    file: first_file,
                    page: 0,
                    written: 0,
                    dir_block_fill: 0,
                };
                pick(&mut roles, None, Task::Fio(job))
            })
            .collect::<Result<_>>()?;

        let nr_files = self.total_files();
        if nr_files >= 1 << 40 || self.total_files() >= u64::from(NONE) {
            bail!("thpfioscale: {nr_files} files are more than the model can number");
        }
        if self.compaction && nr_files * MAX_FILE_PAGES as u64 >= u64::from(THP_LOC) {
            bail!(
                "thpfioscale: {nr_files} files have more page-cache slots than compaction's \
                 owner index can name (compaction=0 runs without it)"
            );
        }
        self.held = (0..thp_threads).map(|_| Mutex::default()).collect();
        self.thp_total = per_thread * thp_threads as u64;
        // Enough bits to name every thread (0 for one).
        self.thread_bits = u64::BITS - (thp_threads as u64).saturating_sub(1).leading_zeros();

        let mut slab_spec = [(0, 1); NR_CACHES];
        for (c, cache) in CACHES.iter().enumerate() {
            slab_spec[c] = if cache.size == 0 {
                (0, INODES_PER_CLUSTER_PAGE)
            } else {
                slub_order(cache.size, info.nr_cpus)
            };
        }
        let nodes = self.nr_nodes;
        *in_slot(part(&mut self.cache)) = Cache {
            nr_nodes: nodes,
            nr_cpus,
            file_pages: self.file_pages,
            reclaim_page: self.reclaim_page,
            files: vec![File::EMPTY; nr_files as usize],
            inactive: vec![VecDeque::new(); nodes],
            active: vec![VecDeque::new(); nodes],
            cached_pages: vec![0; nodes],
            active_pages: vec![0; nodes],
            workingset: Workingset::new(nodes),
            file_lru: vec![VecDeque::new(); nodes],
            files_with_slab: vec![0; nodes],
            shrink_credit: vec![0.0; nodes],
            slab_spec,
            current: vec![NONE; NR_CACHES * nr_cpus],
            partial: vec![Vec::new(); NR_CACHES * nodes],
            ..Cache::default()
        };
        self.kswapd = (0..nodes).map(|_| KswapdSlot::default()).collect();
        let cpus: Vec<u32> =
            (0..info.nr_cpus).filter(|&c| !matches!(roles[c as usize], Task::Idle)).collect();
        self.tasks = PerCpu::new(roles);
        Ok(cpus)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        self.zones(ctx);
        self.last_now.note(ctx.cpu(), ctx.now());
        let mut task = self.tasks.get(ctx.cpu())?;
        self.step_task(ctx, &Locked(&self.cache), &mut task)
    }

    /// The same step without the task's lock, the clock's atomic maximum and the cache's
    /// lock: the model owns the workload, so the task and the cache are taken out of their
    /// slots for the step and put back after it (nothing else reads them during its step).
    /// Those atomic read-modify-writes were several per cent of a thpfioscale run.
    fn step_alone(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        self.zones(ctx);
        self.last_now.note_mut(ctx.cpu(), ctx.now());
        let cpu = ctx.cpu();
        let mut task = std::mem::replace(self.tasks.get_mut(cpu)?, Task::Idle);
        let slot = part(&mut self.cache);
        let alone = Alone(RefCell::new(slot.take().context("thpfioscale: no cache")?));
        let next = self.step_task(ctx, &alone, &mut task);
        *part(&mut self.cache) = Some(alone.0.into_inner());
        *self.tasks.get_mut(cpu)? = task;
        next
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let mut v = Vec::new();
        let cache = in_slot(part(&mut self.cache));
        let base = cache.base;
        for file in &mut cache.files {
            for p in &mut file.pages {
                if *p != NONE {
                    v.push((0, pfn_of(base, *p), Order(0)));
                    *p = NONE;
                }
            }
        }
        for s in &mut cache.slabs {
            if s.alive {
                v.push((0, pfn_of(base, s.pfn), Order(s.order)));
                s.alive = false;
            }
        }
        v.extend(cache.dir_blocks.drain(..).map(|p| (0, p, Order(0))));
        for (held, &cpu) in self.held.iter_mut().zip(&self.thp_cpus) {
            v.extend(part(held).drain(..).map(|(p, o)| (cpu, p, o)));
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let s = &self.stats;
        let mean = |ps: u64, n: u64| if n == 0 { 0.0 } else { ps as f64 / n as f64 / 1e6 };
        let (base_steps, huge_steps) = (get(&s.base_steps), get(&s.huge_steps));
        let steps = base_steps + huge_steps;
        let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { 100.0 * n as f64 / of as f64 };
        let huge_pct = pct(huge_steps, steps);
        let kswapd = |f: fn(&Kswapd) -> u64| -> f64 {
            self.kswapd.iter().map(|k| f(&lock(&k.kswapd))).sum::<u64>() as f64
        };
        let (init_time, cache) = (lock(&self.phase).init_time, CacheGuard(lock(&self.cache)));
        let c = |v: &AtomicU64| get(v) as f64;
        let (refaults, refault_activations) = cache.workingset.totals();
        vec![
            ("fault_base_us".into(), mean(get(&s.base_ps), base_steps)),
            ("fault_huge_us".into(), mean(get(&s.huge_ps), huge_steps)),
            ("huge_pct".into(), huge_pct),
            ("huge_remote_pct".into(), pct(get(&s.huge_remote), huge_steps)),
            ("thp_steps".into(), steps as f64),
            ("write_s".into(), init_time as f64 / PS_PER_S as f64),
            ("pages_written".into(), c(&s.pages_written)),
            ("reads".into(), c(&s.reads)),
            ("read_misses".into(), c(&s.read_misses)),
            ("lookups".into(), c(&s.lookups)),
            ("kswapd_wakes".into(), c(&s.kswapd_wakes)),
            ("kswapd_pages".into(), kswapd(|k| k.pages)),
            ("kswapd_runs".into(), kswapd(|k| k.runs)),
            ("kswapd_passes".into(), kswapd(|k| k.passes)),
            ("reclaim_compaction_ready".into(), c(&s.reclaim_compaction_ready)),
            ("reclaim_skipped".into(), c(&s.reclaim_skipped)),
            ("direct_reclaim_pages".into(), c(&s.direct_pages)),
            ("inode_evictions".into(), cache.inode_evictions as f64),
            ("lru_activations".into(), cache.activations as f64),
            ("lru_deactivations".into(), cache.deactivations as f64),
            ("workingset_refault".into(), refaults as f64),
            ("workingset_activate".into(), refault_activations as f64),
            (
                "inactive_file_pages".into(),
                c(&s.inactive_sum) / get(&s.nonmovable_free_samples).max(1) as f64,
            ),
            ("slab_pages_peak".into(), cache.slab_pages_peak as f64),
            ("pagecache_failures".into(), c(&s.pagecache_failures)),
            (
                "nonmovable_free_pages".into(),
                c(&s.nonmovable_free_sum) / get(&s.nonmovable_free_samples).max(1) as f64,
            ),
        ]
    }

    fn progress(&self) -> f64 {
        let total_write = (self.total_files() * self.file_pages as u64).max(1) as f64;
        let w = (get(&self.stats.pages_written) as f64 / total_write).min(1.0);
        let done = get(&self.stats.base_steps) + get(&self.stats.huge_steps);
        let t = if self.thp_total == 0 { 0.0 } else { done as f64 / self.thp_total as f64 };
        let (init_time, thp_start) = {
            let phase = lock(&self.phase);
            (phase.init_time, phase.thp_start)
        };
        let last_now = self.last_now.get();
        let warm = if thp_start > init_time && init_time > 0 {
            ((last_now.saturating_sub(init_time)) as f64 / (thp_start - init_time) as f64).min(1.0)
        } else {
            f64::from(u8::from(init_time > 0))
        };
        0.4 * w + 0.3 * warm + 0.3 * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, ModelSetup, RunOutcome};
    use crate::workload;
    use pagealloc::{Counter, MemoryMap, NodeId, ZoneLimits};

    /// An 8-CPU, 256 MiB one-node machine whose DMA32 zone is its first 96 MiB: the x86
    /// zone shape (Normal above DMA32) at a size a test can fill one and a half times over.
    /// `small_setup` gives DMA32 + Normal only from 4 GiB, ~40 times more pages to write.
    fn setup(preset: &str, seed: u64) -> ModelSetup {
        nodes_setup(1, 8, preset, seed)
    }

    /// `nodes` nodes sharing 256 MiB evenly, `cpus` CPUs each; DMA32 is the first 96 MiB.
    fn nodes_setup(nodes: u32, cpus: u32, preset: &str, seed: u64) -> ModelSetup {
        let mut s = small_setup(nodes * cpus, 256, preset, seed);
        let mut map = MemoryMap::new();
        map.with_zone_limits(ZoneLimits { dma_end: Pfn(0), dma32_end: Pfn::from_phys(96 << 20) });
        let size = (256 << 20) / u64::from(nodes);
        for n in 0..nodes {
            let base = u64::from(n) * size;
            map.add_range(NodeId(n), base..base + size).unwrap().set_cpus(NodeId(n), cpus).unwrap();
        }
        s.map = map;
        let cpu_node = (0..nodes * cpus).map(|c| c / cpus).collect();
        s.topology = crate::model::Topology::simple(cpu_node, vec![8 << 20; nodes as usize]);
        s
    }

    fn run(preset: &str, seed: u64, extra: &[&str]) -> RunOutcome {
        run_as(preset, seed, extra, false)
    }

    /// [`run`], or with every step through [`Workload::step`] (the real runner's, which locks
    /// the cache) if `locked`.
    fn run_as(preset: &str, seed: u64, extra: &[&str], locked: bool) -> RunOutcome {
        let info = workload::find("thpfioscale").unwrap();
        let mut over: Vec<String> = vec!["warmup=0.25".into()];
        over.extend(extra.iter().map(|s| s.to_string()));
        let params = info.params(&over, 1.0).unwrap();
        let mut w = (info.build)(&params);
        if locked {
            w = workload::testing::locked(w);
        }
        let mut m = Model::new(setup(preset, seed)).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }

    /// The stranded-memory metric counts pages, not blocks, and only the two non-movable
    /// types.
    #[test]
    fn nonmovable_free_counts_pages_of_unmovable_and_reclaimable_lists() {
        let mut counts = [[0u64; MIGRATE_TYPES]; NR_PAGE_ORDERS];
        counts[0][MigrateType::Unmovable.index()] = 5;
        counts[3][MigrateType::Reclaimable.index()] = 2;
        counts[1][MigrateType::Unmovable.index()] = 1;
        counts[9][MigrateType::Movable.index()] = 100;
        counts[0][MigrateType::HighAtomic.index()] = 7;
        assert_eq!(nonmovable_free(&counts), 5 + 2 * 8 + 2);
    }

    /// A one-node cache of `files` files without slab whose block 0 (frame = file number)
    /// was written, in file order, and then read once in the first `read` files: those are
    /// active (a read hit on a written, referenced page activates it), the others inactive.
    fn written(files: usize, read: usize) -> Cache {
        let mut c = Cache {
            nr_nodes: 1,
            file_pages: MAX_FILE_PAGES,
            files: vec![File::EMPTY; files],
            inactive: vec![VecDeque::new()],
            active: vec![VecDeque::new()],
            cached_pages: vec![0],
            active_pages: vec![0],
            workingset: Workingset::new(1),
            ..Cache::default()
        };
        for f in 0..files {
            c.insert_page(f, 0, f as u32, 0, false);
        }
        for f in 0..read {
            c.mark_accessed(f, 0, 0);
        }
        c
    }

    /// Files whose block 0 is on the inactive list, oldest first.
    fn inactive_files(c: &Cache) -> Vec<usize> {
        let valid = |&e: &u64| {
            let (f, g) = ((e >> 16) as usize, (e & 0xff) as u8);
            let file = &c.files[f];
            (file.pages[0] != NONE && file.gen[0] == g && file.active & 1 == 0).then_some(f)
        };
        c.inactive[0].iter().filter_map(valid).collect()
    }

    /// Reclaim moves active pages to the inactive list only while the inactive list is low
    /// (below 1 GiB: fewer inactive than active pages), oldest active first, to the head of
    /// the inactive list; the pages that never left it are evicted first.
    #[test]
    fn reclaim_deactivates_only_while_the_inactive_list_is_low() {
        let mut c = written(100, 60);
        assert_eq!((c.cached_pages[0], c.active_pages[0], c.activations), (100, 60, 60));
        let mut frees = Vec::new();
        assert!(c.inactive_is_low(0));
        assert_eq!(c.shrink_lists(0, 0, 32, &mut frees), (0, 32));
        assert_eq!(c.active_pages[0], 28);
        assert!(!c.inactive_is_low(0), "72 inactive against 28 active");
        assert_eq!(c.shrink_lists(0, 0, 32, &mut frees), (0, 0));
        let expect: Vec<usize> = (60..100).chain(0..32).collect();
        assert_eq!(inactive_files(&c), expect);
        assert_eq!(c.shrink_lists(0, 41, 0, &mut frees), (41, 0));
        assert_eq!(frees.len(), 41);
        assert_eq!(frees[40].0, Pfn(0), "the oldest deactivated page goes after the 40");
        assert!(frees.iter().take(40).all(|&(p, _, _)| p.0 >= 60));
    }

    /// A read that finds the shadow of an eviction within the active list's size of
    /// evictions and activations starts the page active; one further away starts it inactive,
    /// and a write never looks.
    #[test]
    fn a_read_refault_within_the_active_size_starts_active() {
        let mut c = written(10, 4);
        let mut frees = Vec::new();
        // Files 4..10 evicted: their shadows are 5..=10 (4 activations before).
        assert_eq!(c.shrink_lists(0, 6, 0, &mut frees), (6, 0));
        assert_eq!((c.files[4].shadowed, c.files[3].shadowed), (1, 0));
        // File 9: nothing happened since its eviction.
        c.insert_page(9, 0, 9, 0, true);
        assert_eq!(c.files[9].active, 1, "distance 0");
        assert_eq!(c.active_pages[0], 5);
        // File 4: 5 evictions and 1 activation since (distance 6) with 5 active pages.
        c.insert_page(4, 0, 4, 0, true);
        assert_eq!(c.files[4].active, 0, "distance 6 > 5 active pages");
        assert_eq!(c.files[4].shadowed, 0, "the page took the shadow's slot");
        // File 6 by a write: no refault, whatever the distance.
        c.insert_page(6, 0, 6, 0, false);
        assert_eq!(c.files[6].active, 0);
        // File 8: distance 2 (one eviction and the refault's activation since).
        c.insert_page(8, 0, 8, 0, true);
        assert_eq!(c.files[8].active, 1);
        assert_eq!(c.workingset.totals(), (3, 2));
        assert_eq!(c.active_pages[0], 6);
        assert!(c.workingset.refaulting(0));
    }

    #[test]
    fn slab_orders_follow_slub_calculate_order() {
        // slabinfo of 8-CPU 4.x machines: dentry 21 objects/order 0, xfs_inode 34/order 3,
        // radix_tree_node 28/order 2; with 48 CPUs min_objects is 28, so dentry needs order 1.
        assert_eq!(slub_order(192, 8), (0, 21));
        assert_eq!(slub_order(960, 8), (3, 34));
        assert_eq!(slub_order(576, 8), (2, 28));
        assert_eq!(slub_order(192, 48), (1, 42));
        assert_eq!(slub_order(960, 48), (3, 34));
    }

    /// 150% of memory goes through the page cache without a failed page-cache allocation:
    /// kswapd and direct reclaim keep the zones above their watermarks, and at the end every
    /// page comes back (the runner's conservation check).
    #[test]
    fn reclaim_carries_the_writers_past_memory_size() {
        let o = run("frag-vanilla", 1, &[]);
        let managed = 256.0 * 256.0;
        assert!(metric(&o, "pages_written") > 1.4 * managed, "{:?}", o.workload);
        assert_eq!(metric(&o, "pagecache_failures"), 0.0);
        assert!(metric(&o, "kswapd_pages") > 0.5 * managed);
        assert!(metric(&o, "inode_evictions") > 0.0, "slab is shrunk too");
        assert!(metric(&o, "read_misses") > 0.0 && metric(&o, "lookups") > 0.0);
        // Every page allocated was freed: by reclaim, munmap, or at the end by the runner.
        assert!(o.ops.frees > 0 && o.ops.allocs > o.ops.frees / 2);
    }

    #[test]
    fn thp_metrics_are_sane() {
        for madv in ["madv_hugepage=0", "madv_hugepage=1"] {
            let o = run("frag-vanilla", 2, &[madv]);
            // ¾ of 256 MiB, halved, in 2 MiB steps, one thread (8 CPUs: (8 - 4) / 4).
            assert_eq!(metric(&o, "thp_steps"), 48.0, "{madv}");
            let pct = metric(&o, "huge_pct");
            assert!((0.0..=100.0).contains(&pct), "{madv}: {pct}");
            let base = metric(&o, "fault_base_us");
            let huge = metric(&o, "fault_huge_us");
            if pct < 100.0 {
                // 512 faults of at least fault_ns each, and not absurdly slow.
                assert!(base > 512.0 * 0.6 && base < 100_000.0, "{madv}: {base}");
            }
            if pct > 0.0 {
                assert!(huge > 0.0 && huge < 100_000.0, "{madv}: {huge}");
            } else {
                assert_eq!(huge, 0.0);
            }
            // Order-9 attempts that fail are counted by the runner.
            let huge_steps = (pct / 100.0 * 48.0).round() as u64;
            assert!(o.ops.alloc_failures >= 48 - huge_steps, "{madv}");
        }
    }

    /// Slab (reclaimable) allocations claim movable pageblocks, and the page cache is
    /// allocated from both zones.
    #[test]
    fn the_streams_reach_the_types_and_zones_intended() {
        let o = run("frag-vanilla", 3, &[]);
        assert!(o.events.get(Counter::PageblockClaim) > 0);
        assert!(o.events.get(Counter::ExtfragWholeReclaimable) > 0);
        assert!(o.events.get(Counter::PgallocDma32) > 0);
        assert!(o.events.get(Counter::PgallocNormal) > 0);
        // 4.20 caches order 0 only: the page cache goes through the pagesets.
        assert!(o.events.get(Counter::PcpAlloc) > o.events.get(Counter::ZoneLockAcquire));
    }

    #[test]
    fn same_seed_same_run() {
        let (a, b) = (run("frag-lowzone", 5, &[]), run("frag-lowzone", 5, &[]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// ALLOC_NOFRAGMENT is set for requests whose preferred zone is Normal: some movable
    /// page-cache allocations are served by DMA32 on the first pass. Without the patch the
    /// counter cannot move.
    #[test]
    fn lowzone_spreads_into_dma32() {
        let lowzone = run("frag-lowzone", 4, &[]);
        assert!(lowzone.events.get(Counter::NofragmentLowerZone) > 0);
        let vanilla = run("frag-vanilla", 4, &[]);
        assert_eq!(vanilla.events.get(Counter::NofragmentLowerZone), 0);
        assert_eq!(vanilla.events.get(Counter::NofragmentRetry), 0);
    }

    #[test]
    fn too_few_cpus_is_an_error_not_a_stall() {
        let info = workload::find("thpfioscale").unwrap();
        let mut w = (info.build)(&info.params(&[], 1.0).unwrap());
        let mut m = Model::new(small_setup(4, 64, "frag-vanilla", 1)).unwrap();
        let e = m.run(w.as_mut(), &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("needs 6 CPUs"), "{e}");
    }

    /// A madvised THP fault compacts: page-cache pages and the program's base pages move,
    /// and steps that got base pages without compaction get huge pages. Every page comes
    /// back exactly once at the end (the run would fail its conservation check otherwise),
    /// wherever compaction moved it. Nothing here wakes kcompactd: under 4.20's rules only an
    /// order > 0 request that may wake kswapd does, and the THP GFPs do not.
    #[test]
    fn madvised_thp_faults_compact_into_huge_pages() {
        let with = run("frag-vanilla", 2, &["madv_hugepage=1"]);
        let without = run("frag-vanilla", 2, &["madv_hugepage=1", "compaction=0"]);
        for c in [Counter::CompactStall, Counter::CompactSuccess, Counter::PgmigrateSuccess] {
            assert!(with.events.get(c) > 0, "{c:?}");
            assert_eq!(without.events.get(c), 0, "{c:?}");
        }
        assert!(
            metric(&with, "huge_pct") > metric(&without, "huge_pct"),
            "{} vs {}",
            metric(&with, "huge_pct"),
            metric(&without, "huge_pct")
        );
        assert_eq!(with.events.get(Counter::CompactDaemonWake), 0);
        // Inode reclaim has emptied slab pages by the time the THP program runs: free memory
        // sits on the non-movable lists, and less of it than the node has.
        let stranded = metric(&with, "nonmovable_free_pages");
        assert!(stranded > 0.0 && stranded < 256.0 * 256.0, "{stranded}");
        // Not madvised: GFP_TRANSHUGE_LIGHT never compacts.
        let light = run("frag-vanilla", 2, &["madv_hugepage=0"]);
        assert_eq!(light.events.get(Counter::CompactStall), 0);
    }

    /// A THP fault outside a madvised range asks the faulting CPU's node only
    /// (`__GFP_THISNODE`); a madvised one may take a huge page from the other node. The
    /// madvised run shows that the other node had huge pages to give.
    #[test]
    fn unmadvised_thp_faults_stay_on_their_node() {
        let run_on = |madv: &str| {
            let info = workload::find("thpfioscale").unwrap();
            let params = info.params(&["warmup=0.25".into(), madv.into()], 1.0).unwrap();
            let mut w = (info.build)(&params);
            // Two nodes of 128 MiB with six CPUs each.
            let mut m = Model::new(nodes_setup(2, 6, "frag-vanilla", 3)).unwrap();
            m.run(w.as_mut(), &mut |_| {}).unwrap()
        };
        let light = run_on("madv_hugepage=0");
        assert!(metric(&light, "huge_pct") > 0.0, "{:?}", light.workload);
        assert_eq!(metric(&light, "huge_remote_pct"), 0.0);
        let madvised = run_on("madv_hugepage=1");
        assert!(metric(&madvised, "huge_remote_pct") > 0.0, "{:?}", madvised.workload);
    }

    /// Compaction keeps the run deterministic: the owner's index and the moves it records
    /// depend on the run's events only.
    #[test]
    fn same_seed_same_run_with_compaction() {
        let a = run("frag-lowzone", 6, &["madv_hugepage=1"]);
        let b = run("frag-lowzone", 6, &["madv_hugepage=1"]);
        assert!(a.events.get(Counter::PgmigrateSuccess) > 0);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// The model's steps, which take the cache out of its lock ([`Alone`]), and the real
    /// runner's, which lock it ([`Locked`]), make the same run through every path that
    /// reaches the cache: writes and reads, kswapd's and direct reclaim, the slab's
    /// shrinking, compaction's moves.
    #[test]
    fn steps_alone_and_locked_make_the_same_run() {
        let alone = run_as("frag-lowzone", 6, &["madv_hugepage=1"], false);
        let locked = run_as("frag-lowzone", 6, &["madv_hugepage=1"], true);
        assert!(alone.events.get(Counter::PgmigrateSuccess) > 0);
        for m in ["kswapd_pages", "direct_reclaim_pages", "inode_evictions", "read_misses"] {
            assert!(metric(&alone, m) > 0.0, "{m}: {:?}", alone.workload);
        }
        assert_eq!(format!("{alone:?}"), format!("{locked:?}"));
    }

    /// Where the workload holds a page, a migration moves it; a frame it does not hold (or
    /// no longer holds) is refused.
    #[test]
    fn migrate_follows_the_page_and_refuses_strangers() {
        let info = workload::find("thpfioscale").unwrap();
        let mut w = ThpFioScale::new(&info.params(&[], 1.0).unwrap());
        in_slot(part(&mut w.cache)).files = vec![File::EMPTY; 2];
        w.held = vec![Mutex::default()];
        let owner = (0..64).map(|_| AtomicU32::new(NONE)).collect();
        let zones = Zones { zonelist: Vec::new(), node_zones: Vec::new(), base: 0, owner };
        w.zones.set(zones).unwrap();
        in_slot(part(&mut w.cache)).files[1].pages[3] = 10;
        w.zones.get().unwrap().own(Pfn(10), (MAX_FILE_PAGES + 3) as u32);
        w.hold(0, Pfn(20), Order(0)).unwrap();
        let mv = |w: &ThpFioScale, from: u64, to: u64| {
            w.move_page(&Locked(&w.cache), Pfn(from), Pfn(to), Order(0))
        };
        let held = |w: &mut ThpFioScale, t: usize| part(&mut w.held[t]).clone();
        assert!(mv(&w, 10, 11));
        assert_eq!(in_slot(part(&mut w.cache)).files[1].pages[3], 11);
        assert!(mv(&w, 20, 21));
        assert_eq!(held(&mut w, 0), vec![(Pfn(21), Order(0))]);
        // The old frames are nobody's now; a stale entry whose slot moved on is refused.
        assert!(!mv(&w, 10, 12) && !mv(&w, 20, 22) && !mv(&w, 5, 6));
        in_slot(part(&mut w.cache)).files[1].pages[3] = NONE;
        assert!(!mv(&w, 11, 12));
        // A second thread: entries name it in the low bits, its slots above them.
        let copy = held(&mut w, 0);
        w.held.push(Mutex::new(copy));
        w.thread_bits = 1;
        w.hold(1, Pfn(30), Order(0)).unwrap();
        assert!(mv(&w, 30, 31) && mv(&w, 31, 32));
        assert_eq!(held(&mut w, 1).last(), Some(&(Pfn(32), Order(0))));
        assert_eq!(held(&mut w, 0), vec![(Pfn(21), Order(0))]);
        // More slots than the entry can name is an error, not a wrong entry.
        // (thread 1 holds slots 0 and 1; with 29 thread bits slots up to 3 can be named.)
        w.thread_bits = 29;
        assert!(w.hold(1, Pfn(40), Order(0)).is_ok() && w.hold(1, Pfn(41), Order(0)).is_ok());
        assert!(w.hold(1, Pfn(42), Order(0)).is_err());
    }

    /// `compaction=0` pins the workload's decisions: the same test setup's figures, madvised
    /// and not, as of the change that gave the page cache 4.20's two file lists. Before that
    /// change (one queue with a second chance for active pages) madvised fault-base 1846.37
    /// µs, 47 307 kswapd pages, 5584 inode evictions; not madvised fault-base 1118.59 µs,
    /// 74 212 kswapd pages in 95 runs. Before 4.20's kswapd (and at the branch point before
    /// compaction, dfa2e97) kswapd reclaimed the node's high watermarks per pass: madvised
    /// fault-base 1847.04 µs, 48 530 kswapd and 46 080 direct-reclaim pages; not madvised
    /// 77 648 kswapd pages. Before the machines gave their misses in flight (a store's line
    /// and a prefetch overlapping the CPU's work) madvised fault-base 1846.31 µs and 20 370
    /// reads, not madvised 1156.25 µs and 74 244 kswapd pages: the clock moves the reclaim's
    /// and the readers' turns. Before the cost profile was measured again on the library after
    /// fast path v2 (list operation 14.7 → 3.7 ns) madvised fault-base 1843.47 µs and 20 371
    /// reads, not madvised 1149.63 µs and 74 290 kswapd pages in 97 runs. Before the machines
    /// gave their hardware prefetchers (a frame line's pair fetched with it, runs of lines
    /// within a page streamed) madvised fault-base 1765.29 µs and 20 069 reads, not madvised
    /// 1099.27 µs and 74 223 kswapd pages. Before each node's memory bandwidth was shared by
    /// its cores' cold page writes, not madvised 1069.34 µs, 21 962 reads and 74 138 kswapd
    /// pages (madvised unchanged).
    #[test]
    fn compaction_off_figures_are_pinned() {
        let figures = |madv: &str| {
            let o = run("frag-vanilla", 2, &[madv, "compaction=0"]);
            let m = |k| metric(&o, k);
            format!(
                "{:?}",
                (
                    [m("fault_base_us"), m("fault_huge_us"), m("huge_pct"), m("reads")],
                    [m("kswapd_pages"), m("kswapd_runs"), m("direct_reclaim_pages")],
                    m("inode_evictions"),
                    (o.ops.allocs, o.ops.alloc_failures, o.ops.frees, o.elapsed_ps),
                )
            )
        };
        assert_eq!(
            [figures("madv_hugepage=1"), figures("madv_hugepage=0")],
            [
                "([1715.5681763913042, 844.4968185, 4.166666666666667, 19943.0], [47299.0, 66.0, \
                 48128.0], 5524.0, (132165, 93, 119487, 1088967504530))",
                "([1069.7680225652173, 298.265032, 4.166666666666667, 21973.0], [74142.0, 96.0, 0.0], \
                 4169.0, (132826, 46, 98103, 1058326541107))"
            ]
        );
    }
}
