//! `kbuild`: LKP's kernel build as seed 001's first table ran it, `numactl -m 1 -- make -j 112`
//! of an allyesconfig kernel on a 2-socket, 224-CPU Sapphire Rapids (docs/workloads.md §1).
//! Section numbers (§) in this file are those of `docs/workloads.md`.
//!
//! What it imitates: make keeps `parallel` compile jobs running. A job is a short-lived
//! compiler process (cc1) followed by a few small helper processes (the `sh -c` of the rule,
//! the gcc driver, `as`, fixdep). Each process, on the CPU it runs on, allocates an order-1
//! PGD (with page-table isolation) when it is created, then one order-0 movable anonymous
//! page per page fault, with its own computation between faults, and an order-0 unmovable
//! page-table page per 2 MiB it touches. At exit it frees every user page in a burst on the
//! same CPU, then its page tables, then the PGD: "a large number of user pages freed without
//! page allocation … then the PGD order-1 free", the pattern patch 1 of the series is about
//! (§1.2). The compiler also writes its object file into the page cache (order-0 movable),
//! which stays until the end of the build. When every job is done, one link process runs
//! alone (the serial tail of the build). `numactl -m 1` makes every allocation, on whichever
//! CPU, come from node 1's zone: one zone lock for the whole machine, remote for socket 0.
//!
//! Placement: `numactl -m 1` binds memory, not CPUs, so the scheduler spreads the 112 busy
//! tasks over both sockets; with SMT it fills idle cores first, one task per core, so each
//! job slot gets its own CPU spread evenly over the machine (`placement = 0`, the default).
//! The corrected mail says exactly this: "processes running on socket 0 … use the normal zone
//! of socket 1" (§1.1). The v1 text's "on one socket" reads as one socket's memory; the other
//! reading (all 112 tasks on socket 0's CPUs) is `placement = 1`. A new process starts on the
//! CPU its predecessor in the slot left: fork balancing prefers the most recently idled CPU.
//!
//! Volume and scale: an allyesconfig build compiles about 25,000 objects (assumed; §1.2 gives
//! ≈ 5e8 faults per build, so ≈ 20,000 faults per object). The model runs `jobs` of them with
//! their real sizes and rates, so the compile phase lasts ≈ `jobs` / 25,000 of the real one and
//! the link is scaled down in the same ratio (`link_mib`); `build_time` is therefore the real
//! build time × ≈ `jobs` / 25,000. The default, 1,792 jobs (16 per slot at -j 112), is 7% of
//! the build: ≈ 11 s of compile phase and ≈ 1.4 s of link in virtual time, 11–15 s of wall time
//! on the 224-CPU machine in a release build (the 2-CPU lab VM, `docs/performance.md`). The
//! pagesets reach their steady state within a few exits per CPU (five exits per job, ≈ 0.55 s of
//! CPU per job), well inside that.
//!
//! Kernel objects (§1.4): each process has the slab objects a process has — task_struct,
//! pid, cred, files_struct, fs_struct, sighand_struct, signal_struct, mm_struct, one
//! vm_area_struct per VMA and an anon_vma with its anon_vma_chain per writable private VMA —
//! allocated through the slab layer (`model::slab`). On the 224-CPU machine SLUB's
//! `min_objects` is 36, so task_struct, mm_struct, signal, sighand and files slabs are order
//! 3 and vm_area_struct, cred and pid slabs order 1: their empty slabs go back through the
//! pagesets, where `free_high` acts. Sizes are this lab host's `/proc/slabinfo` (Linux 6.18);
//! VMA counts were measured on it (§1.4).
//!
//! Where they are allocated and freed (`fork = 1`, the default; §1.4 states every
//! assumption). A process is forked by its parent on the parent's CPU: `copy_process`
//! allocates its task_struct, pid, cred, files, fs, sighand and signal there (make, the shell
//! and the gcc driver spawn with vfork or posix_spawn, so no mm is copied). A job's first
//! process stands for the `sh -c` make starts, and the link is make's too: make runs on one
//! CPU for the whole build (the first slot's parent CPU) and holds every slot's first process
//! at once. The job's other processes are forked by its shell or compiler driver, which run on
//! the slot's parent CPU: the idle CPU next to the slot's (its hyperthread sibling on
//! spr-2s-224), or the slot's own when none is idle. The child runs on its slot's CPU; its
//! exec allocates a new cred (the forked one is put through RCU there), the mm_struct, the PGD
//! and the VMAs. At exit the child frees its memory, VMAs, mm, files and fs on its own CPU;
//! the parent reaps it on the parent's CPU: the sighand is freed at once, the pid and the task
//! (its signal, then another grace period for its cred, then the task_struct) by RCU
//! callbacks queued on the parent's CPU and run there `rcu_gp_ms` later. Each CPU keeps its
//! callbacks in a queue run at its next step once due; an idle parent CPU is woken for them
//! by its children's steps (an idle CPU with callbacks keeps its tick). With `fork = 0` each
//! process allocates and frees all its objects on its own CPU at once, as before.
//!
//! Builds in memory cgroups (§1.5; `cgroups`, `memcg_limit_mib`): LKP's kbuild8 runs 8 builds
//! side by side, each `make -j 28` in its own cgroup. With `cgroups = n` the run is n builds,
//! each with its own make (on its first slot's parent CPU), its share of the jobs (job numbers
//! `b·jobs/n ..`, so a job is the same whichever build runs it), its own link (of
//! `link_mib / n`: each build's link scales with its jobs) and its own [`Memcg`]. The slots are
//! placed as one build's and dealt round the builds (slot i to build i mod n): nothing binds a
//! cgroup's tasks to CPUs. Every page a build allocates — anonymous, page cache, page tables,
//! PGD — is charged to its cgroup after the allocation and uncharged when freed; a charge
//! over `memcg_limit_mib` first reclaims the cgroup's oldest object files, 32 pages a pass, on
//! the charging CPU, each freed through that CPU's pageset after `reclaim_page_ns` of work.
//! `build_time` is then the mean of the builds' times (LKP's per-iteration mean over
//! instances); `cgroups = 1` without a limit is the single build, unchanged.
//!
//! State: each slot's and each build's state is behind its own lock, each CPU's fork/reap
//! requests and RCU callbacks are queues of their own, counters and sleep flags atomic, and
//! no lock is held across an allocator call (a step takes its process out of the slot; a
//! cgroup charge hands back the pages it reclaims, freed after the build's lock). So on the
//! real runner's threads the CPUs' allocator calls overlap as in a kernel, while the model,
//! stepping one CPU at a time, makes the same decisions as with one object.
//!
//! Migrations (`migrations_per_s`, off by default): a faulting process may move to another
//! slot's CPU on its node, swapping with the faulting process there (one task per busy CPU
//! stays one task per busy CPU). A swap is drawn per fault with probability `migrations_per_s`
//! × `fault_us` / 2, so each process moves at about that rate over its faulting; a draw whose
//! partner slot has no faulting process moves nothing. A moved process keeps its parent, which
//! stays until every slot whose process it may have reaped is done. Its later faults and its
//! exit allocate and free on its new CPU, so its VMAs, anon_vmas and mm_struct are freed away
//! from the CPU that allocated them. Nothing is charged for the move itself (the scheduler's
//! work, the task's cache footprint left behind). It is a what-if: LKP counted ≈ 10 K
//! migrations/s machine-wide in kbuild8, ≈ 56 per busy CPU-second, but not how many of them
//! move running compilers rather than placing woken parents or execs (§1.4).
//!
//! Files (`files`, off by default; with `fork`): each file a process opens — `opens_compiler`
//! for a compiler, `opens_helper` for a helper, failed opens included, measured on the lab
//! host — takes a `struct file` from the `filp` cache on its CPU and is closed at once, and
//! 6.6 frees it through `call_rcu` (`file_free`): an RCU callback on that CPU `rcu_gp_ms`
//! later. The opens are spread over the first half of the process's faults (a compiler reads
//! its headers first). Off by default because at the default grace period the files give no
//! slab back and move no result, at up to a quarter more run time (docs/reproduction.md,
//! 001-kbuild).
//!
//! Known biases: by default one task per slot CPU, never migrating (above); the parents never
//! migrate either (make on one CPU, each
//! slot's shell and driver on one other); hyperthread siblings share no pipeline (the 112 busy
//! CPUs are one per core, the parents run on their idle siblings at no cost to them); fork,
//! exit and wake-up latencies are not charged (a child waits only for its parent's slab calls);
//! fork/exec costs other than the PGD and the slab objects above (kernel stacks, dentries,
//! inodes, kmalloc buffers of the syscalls, maple-tree nodes) are left out; sighand's cache is
//! `SLAB_TYPESAFE_BY_RCU` in the kernel, whose empty slabs go back only after a grace period,
//! here at once; make is one process (the kernel's build runs a sub-make per directory);
//! helpers run after the compiler rather than around it; cc1's own memory use (gcc frees
//! little before exit) grows linearly over its life; the real build's serial steps beyond
//! one link (kallsyms relinks, objtool on vmlinux.o) are folded into that one link.

use std::cell::{RefCell, RefMut};
use std::collections::VecDeque;
use std::ops::DerefMut;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{fence, AtomicBool};
use std::sync::{Mutex, MutexGuard};

use anyhow::{bail, Result};
use pagealloc::{Gfp, Order, Pfn};
use pagealloc_slab::{OrderRule, SlabObject, SlubConfig};
use pagealloc_testkit::rng::Rng;

use super::memcg::Memcg;
use super::{ns, Fit, Fitted, ParamSpec, Params, WorkloadInfo, PREFETCH_AHEAD};
use crate::model::slab::{CacheId, SlabSetup, SlabSpec};
use crate::model::{lock, part, Ctx, ModelInfo, Next, Padded, PerCpu, Tally, Workload};

/// The registry entry.
pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "kbuild",
    summary: "LKP kbuild: numactl -m 1 -- make -j 112 of allyesconfig, short-lived compilers \
              faulting anon memory and freeing it all at exit",
    params: PARAMS,
    default_machine: "spr-2s-224",
    build: |p| Box::new(Kbuild::new(p)),
    fit,
};

/// Objects an allyesconfig build compiles (assumed, see the module doc): the ratio of the
/// model's volume to the real one.
const REAL_OBJECTS: f64 = 25_000.0;
/// Largest resident set of one process in the 2022 allyesconfig run (the final link),
/// 2,845,254 kB (the LKP Ice Lake kbuild report, docs/workloads.md §1.2).
const REAL_LINK_MIB: f64 = 2_845_254.0 / 1024.0;
/// Default number of jobs: the scaled-down build (see the module doc).
const DEFAULT_JOBS: f64 = 1792.0;

/// `mem_node` must be one of the machine's nodes: the last one (the seed's "the other node"
/// where there are two) when it is not.
fn fit(p: &Params, m: Fit) -> Vec<Fitted> {
    let node = p.get("mem_node").round();
    if node < 0.0 || node < f64::from(m.nr_nodes) {
        return Vec::new();
    }
    vec![Fitted {
        name: "mem_node",
        value: f64::from(m.nr_nodes.saturating_sub(1)),
        why: format!("the machine has {} node(s)", m.nr_nodes),
    }]
}

/// `fault_lines`' default: measured, see its source.
const FAULT_LINES_DEFAULT: f64 = 273.0;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "jobs",
        default: DEFAULT_JOBS,
        min: 1.0,
        max: 1e6,
        unit: "jobs",
        doc: "compile jobs in the build (the real allyesconfig build has ≈ 25,000)",
        source: "assumed volume: ≈ 25,000 objects per allyesconfig build scaled down so that a \
                 run on the 224-CPU machine takes ≤ 30 s of wall time; build_time scales with it",
        scaled: true,
        whole: true,
    },
    ParamSpec {
        name: "parallel",
        default: 112.0,
        min: 1.0,
        max: 4096.0,
        unit: "jobs",
        doc: "make -j: compile jobs running at once, one slot each",
        source: "`numactl -m 1 -- make -j 112` (Huang Ying's reply of 2023-09-21 to the v1 \
                 cover), docs/workloads.md §1.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "mem_node",
        default: 1.0,
        min: -1.0,
        max: 63.0,
        unit: "node",
        doc: "node every allocation comes from (numactl -m); -1 for each CPU's own node",
        source: "`numactl -m 1` (Huang Ying's reply of 2023-09-21 to the v1 cover), \
                 docs/workloads.md §1.1",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "placement",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = spread, 1 = node 0",
        doc: "job slots spread evenly over all CPUs (one per core), or packed on node 0's CPUs",
        source: "reading of docs/workloads.md §1.1: numactl -m binds memory only and the \
                 scheduler spreads busy tasks over idle cores of both sockets (see the module \
                 doc)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "fault_us",
        default: 26.2,
        min: 0.0,
        max: 1e6,
        unit: "µs",
        doc: "user-mode CPU time of a compiler process per page fault (its computation between \
              faults; the kernel's part, the fault's page, its clear, the zone lock, the exit, the \
              model charges itself)",
        source: "user 40,321 s / 1.537e9 page faults of the 2022 allyesconfig run on 128 CPUs \
                 (the LKP Ice Lake kbuild report); its system time (8,017 s, 5.2 µs a fault) is \
                 the kernel's work. The 2023 kbuild8 run on the seed's machine class gives 23.5 \
                 µs (user 74.6 % of 31.5 µs a fault: 5.9 M faults/s over ≈ 186 busy CPUs; the \
                 LKP kbuild8 report), docs/workloads.md §1.2",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "fault_lines",
        default: FAULT_LINES_DEFAULT,
        min: 0.0,
        max: 1e6,
        unit: "lines",
        doc: "cache lines of its own data a process brings into its CPU's L2 (and, as their \
              victims, its LLC) per page fault, besides the faulted page itself: its working \
              set pushing the allocator's metadata out of the caches between faults",
        source: "measured on the lab host: L2 misses of gcc 12's cc1 (simulated 2 MiB 16-way \
                 L2, cachegrind) over its page faults, compiling C sources at -O2 -g, less the \
                 64 lines of the faulted page the model already counts \
                 (scripts/compiler-cache-lines.sh, docs/workloads.md §1.2); helpers assumed alike",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "job_mib",
        default: 80.0,
        min: 0.0,
        max: 1e6,
        unit: "MiB",
        doc: "mean memory faulted per compile job, all its processes together (each job's size \
              is drawn uniformly from 25% to 175% of it)",
        source: "≈ 5e8 faults per build (1.537e9 over 3 builds, one page allocated per fault) \
                 (the LKP Ice Lake kbuild report, docs/workloads.md §1.2) / ≈ 25,000 objects \
                 (assumed) ≈ 20,500 pages; the spread is assumed (compile units differ widely)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "helpers",
        default: 4.0,
        min: 0.0,
        max: 64.0,
        unit: "processes",
        doc:
            "small processes per job besides the compiler (each its own PGD, page tables and exit)",
        source: "assumed from Kbuild's rule for a .o: `sh -c`, the gcc driver, `as`, fixdep",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "helper_mib",
        default: 2.0,
        min: 0.0,
        max: 1e5,
        unit: "MiB",
        doc: "mean memory faulted by one helper process (taken out of job_mib)",
        source: "assumed: a shell or driver process faults a few hundred anonymous pages \
                 (heap, stack, relocated library data); `as` somewhat more",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "fixed_pt_pages",
        default: 6.0,
        min: 0.0,
        max: 1000.0,
        unit: "pages",
        doc: "page-table pages of a process besides one PTE page per 2 MiB of anon memory",
        source: "assumed: PTE pages for text, data, libraries, stack and vdso, plus PMD/PUD pages \
                 for the distinct regions of the address space",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "obj_kib",
        default: 256.0,
        min: 0.0,
        max: 1e6,
        unit: "KiB",
        doc: "page cache written per job (the object file and its .cmd), kept to the build's end",
        source: "assumed: with Cached ≈ 6.2 GB averaged over the 2022 run, source tree included \
                 (the LKP Ice Lake kbuild report, docs/workloads.md §1.2), outputs of a few \
                 hundred KiB per object are plausible",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "write_page_ns",
        default: 500.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "work per page-cache page written besides its allocation and touch",
        source: "assumed: write(2) path, page-cache insertion and LRU add per 4 KiB",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "exit_page_ns",
        default: 100.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "exit's work per user page besides the free: PTE zap, rmap, memcg uncharge, LRU",
        source: "assumed: as trunc_page_ns, a few tens of ns per step on a 2023 server core",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "slab",
        default: 1.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = off, 1 = on",
        doc: "allocate each process's kernel objects (task_struct, mm_struct, VMAs, …) through \
              the slab layer",
        source: "issue 18: in the kernel kbuild's high-order frees are mostly SLUB's slabs; \
                 objects and sizes in docs/workloads.md §1.4",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "fork",
        default: 1.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = off, 1 = on",
        doc: "with slab: a process's task_struct, pid, cred, files, fs, sighand and signal are \
              allocated by its parent on the parent's CPU and reaped there, with RCU-deferred \
              frees (0: every object allocated and freed on the process's own CPU at once)",
        source: "kernel behaviour: copy_process runs in the parent, release_task in the reaping \
                 parent, call_rcu callbacks on the CPU that queued them; who forks whom and where \
                 the parents run are assumed, docs/workloads.md §1.4",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "rcu_gp_ms",
        default: 5.0,
        min: 0.0,
        max: 1000.0,
        unit: "ms",
        doc: "with fork: time from call_rcu to its callback, run on the queuing CPU",
        source: "assumed: grace periods \"extend for multiple milliseconds\" (Paul McKenney, \
                 \"Is Parallel Programming Hard, And, If So, What Can You Do About It?\", 2011 \
                 edition, section 10.3.2.1.6); a callback waits for the grace period in progress \
                 and one more, each a few 1 ms ticks (HZ=1000 assumed), docs/workloads.md §1.4",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "files",
        default: 0.0,
        min: 0.0,
        max: 1.0,
        unit: "0 = off, 1 = on",
        doc: "with fork: each file a process opens (`opens_compiler`, `opens_helper`) takes a \
              `struct file` from the filp cache on its CPU, freed through RCU `rcu_gp_ms` later",
        source: "6.6's open path and `file_free` (docs/workloads.md §1.4); off by default: at \
                 the default grace period the files give no slab back and move no result, and \
                 they cost up to a quarter more run time (docs/reproduction.md, 001-kbuild)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "opens_compiler",
        default: 2200.0,
        min: 0.0,
        max: 1e6,
        unit: "opens",
        doc: "with `files`: files a compiler opens, failed opens included, spread over the \
              first half of its faults",
        source: "measured on the lab host: cc1's openat calls compiling six units of Debian's \
                 Linux 6.1 source (x86_64 defconfig, gcc 12.2): 928-2,636, median ≈ 2,200, \
                 about 57 % of them failing header probes (`scripts/kbuild-opens.sh`, \
                 docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "opens_helper",
        default: 188.0,
        min: 0.0,
        max: 1e6,
        unit: "opens",
        doc: "with `files`: files a helper process opens, as `opens_compiler`",
        source: "measured on the lab host as `opens_compiler`: the gcc driver 15, as 19, fixdep \
                 329-845 (median 715), sh ≈ 3; their mean, 188 (docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "migrations_per_s",
        default: 0.0,
        min: 0.0,
        max: 1e5,
        unit: "/s",
        doc: "how often a faulting process moves to another slot's CPU on its node, swapping \
              with the process there, per second of its own faulting (0: every process runs \
              where it started)",
        source: "a what-if, off by default: LKP's kbuild8 on the seed's machine class counted \
                 10,378 CPU migrations/s machine-wide over ≈ 186 busy CPUs, ≈ 56 per busy \
                 CPU-second (docs/workloads.md §1.2); how many of them move running compilers \
                 rather than placing a woken parent or an exec is not known (§1.4)",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "vmas_compiler",
        default: 70.0,
        min: 0.0,
        max: 1e5,
        unit: "VMAs",
        doc: "VMAs of a compiler process (and of the link): one vm_area_struct each",
        source: "measured on the lab host: lines of /proc/PID/maps of cc1 (gcc 12.2, -O2) \
                 sampled while it ran, 66–74 (docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "anon_vmas_compiler",
        default: 23.0,
        min: 0.0,
        max: 1e5,
        unit: "VMAs",
        doc: "writable private VMAs of a compiler process: one anon_vma and one \
              anon_vma_chain each",
        source: "measured on the lab host: `rw-p` lines of cc1's /proc/PID/maps, 22–27; one \
                 anon_vma and one chain per such VMA is assumed (docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "vmas_helper",
        default: 32.0,
        min: 0.0,
        max: 1e5,
        unit: "VMAs",
        doc: "VMAs of a helper process",
        source: "measured on the lab host: sh 25, the gcc driver 28, as 48–50; fixdep assumed \
                 as sh; mean ≈ 32 (docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "anon_vmas_helper",
        default: 10.0,
        min: 0.0,
        max: 1e5,
        unit: "VMAs",
        doc: "writable private VMAs of a helper process",
        source: "measured on the lab host: `rw-p` lines of sh 9, gcc 9, as 13–15; fixdep \
                 assumed as sh; mean ≈ 10 (docs/workloads.md §1.4)",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "link_mib",
        default: REAL_LINK_MIB * DEFAULT_JOBS / REAL_OBJECTS,
        min: 0.0,
        max: 1e7,
        unit: "MiB",
        doc: "memory faulted by the final link, which runs alone after every job (0: no link)",
        source: "largest process of the 2022 allyesconfig run, 2,845,254 kB (the LKP Ice Lake \
                 kbuild report, docs/workloads.md §1.2), scaled by jobs / 25,000 like the compile \
                 phase",
        scaled: true,
        whole: false,
    },
    ParamSpec {
        name: "cgroups",
        default: 1.0,
        min: 1.0,
        max: 256.0,
        unit: "builds",
        doc: "builds run side by side, each its own make in its own memory cgroup: the jobs, \
              the slots (`parallel`, dealt round the builds) and the link split between them",
        source: "LKP's kbuild8: 8 instances in 8 cgroups, `make -j 28` each on 224 CPUs \
                 (lkp-tests jobs/kbuild8.yaml; the v2 and v3 covers of Huang Ying's PCP \
                 auto-tuning series), docs/workloads.md §1.1 and §1.5",
        scaled: false,
        whole: true,
    },
    ParamSpec {
        name: "memcg_limit_mib",
        default: 0.0,
        min: 0.0,
        max: 1e7,
        unit: "MiB",
        doc: "memory.max of each build's cgroup (0: no limit); a charge over it reclaims the \
              cgroup's oldest page cache, 32 pages a pass, on the charging CPU",
        source: "assumed: kbuild8 sets no memory.max (docs/workloads.md §1.1); a limit is the \
                 setting of a build service that packs builds into containers, §1.5",
        scaled: false,
        whole: false,
    },
    ParamSpec {
        name: "reclaim_page_ns",
        default: 300.0,
        min: 0.0,
        max: 1e6,
        unit: "ns",
        doc: "memcg reclaim's work per page-cache page besides its free: LRU isolation, \
              reference check, removal from the page cache, uncharge",
        source: "assumed: shrink_folio_list's per-folio steps (LRU isolation, rmap and \
                 reference check, xarray delete, uncharge), a few hundred ns on a server core",
        scaled: false,
        whole: false,
    },
];

/// Pages covered by one PTE page (x86-64, 4 KiB pages).
const PTRS_PER_PTE: u64 = 512;
/// User pages freed per step at exit: small enough that other CPUs interleave with the burst
/// in virtual time (a step is ≈ 4 µs), large enough to keep the scheduler's overhead low.
const EXIT_CHUNK: usize = 32;
/// The PGD's order with page-table isolation (§1.2).
const PGD_ORDER: Order = Order(1);
/// Page-table pages: GFP_PGTABLE_USER = GFP_KERNEL_ACCOUNT | __GFP_ZERO (unmovable).
const GFP_PGTABLE: Gfp = Gfp(Gfp::KERNEL.0 | Gfp::ZERO.0);

/// A process's kernel objects, one slab cache each (and `filp`, the `struct file` of each
/// open): (name, object stride in bytes,
/// alignment). Strides and alignments are `slab_size` and `align` of
/// `/sys/kernel/slab/<cache>/` on the lab host (Linux 6.18.44, x86-64; `/proc/slabinfo`'s
/// objsize column), docs/workloads.md §1.4. None is reclaim-accounted. In this order the
/// caches get their [`CacheId`]s; a process allocates the first [`PER_PROCESS`] once.
const OBJECTS: [(&str, u32, u32); 12] = [
    ("task_struct", 4224, 64),
    ("pid", 192, 64),
    ("cred_jar", 192, 64),
    ("files_cache", 704, 64),
    ("fs_cache", 64, 8),
    ("sighand_cache", 2112, 64),
    ("signal_cache", 1152, 64),
    ("mm_struct", 1600, 64),
    ("vm_area_struct", 192, 64),
    ("anon_vma", 104, 8),
    ("anon_vma_chain", 64, 8),
    ("filp", 192, 64),
];
/// Objects a process has one of: task_struct … mm_struct.
const PER_PROCESS: usize = 8;
/// With `fork`: the objects `copy_process` allocates in the parent, task_struct … signal (the
/// parents spawn without copying their mm, §1.4).
const FORKED: usize = 7;
/// One per process: freed by an RCU callback (`free_pid`).
const PID: CacheId = CacheId(1);
/// One per process; exec replaces the one fork made (`put_cred_rcu`).
const CRED: CacheId = CacheId(2);
/// Freed by the exiting task itself (`exit_files`).
const FILES: CacheId = CacheId(3);
/// Freed by the exiting task itself (`exit_fs`).
const FS: CacheId = CacheId(4);
/// Freed by the reaping parent at once (`__cleanup_sighand`).
const SIGHAND: CacheId = CacheId(5);
/// The mm_struct: freed after the PGD (`__mmdrop`: `mm_free_pgd`, then `free_mm`).
const MM_STRUCT: CacheId = CacheId(7);
/// One per VMA.
const VM_AREA: CacheId = CacheId(8);
/// One per writable private VMA (with its chain).
const ANON_VMA: CacheId = CacheId(9);
/// One per writable private VMA.
const ANON_VMA_CHAIN: CacheId = CacheId(10);
/// A `struct file`: one per open, freed through RCU (`file_free`, 6.6).
const FILP: CacheId = CacheId(11);
/// The share of a process's life in which it opens its files (assumed): cc1 had made 99 %
/// of its opens by 13-60 % of its life in the units traced on the lab host, the share
/// moving with the host's load (the preprocessor reads the headers first; docs/workloads.md
/// §1.4).
const OPENS_SHARE: f64 = 0.5;
/// Slab objects: GFP_KERNEL (the kernel adds __GFP_ACCOUNT for these caches; the model's
/// memory cgroups, §1.5, charge pages only, not slab objects).
const GFP_SLAB: Gfp = Gfp::KERNEL;

/// What a process is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// With `fork`: waiting for the parent to fork it on the parent's CPU.
    Fork,
    /// Created: allocate the PGD and the fixed page tables.
    Exec,
    /// Faulting in its memory.
    Fault,
    /// Writing its object file into the page cache.
    Write,
    /// Exiting: user pages freed in chunks.
    ExitUser,
    /// Exiting: page tables, then the PGD.
    ExitTables,
}

/// One process's plan: pages to fault and page-cache pages to write before exit.
#[derive(Clone, Copy, Debug)]
struct ProcSpec {
    anon: u64,
    obj: u64,
    /// VMAs, and of those the writable private ones (kernel objects, §1.4).
    vmas: u32,
    anon_vmas: u32,
    /// Forked by make (a job's first process, and the link) rather than by the job's shell
    /// or compiler driver.
    by_make: bool,
    /// Files it opens (with `fork`: each a `struct file` freed through RCU).
    opens: u32,
}

/// A slab object: its cache, the handle, and the CPU that allocated it.
type Obj = (CacheId, SlabObject, u32);

/// Work asked of a CPU in its role as a parent (with `fork`).
#[derive(Debug)]
enum Request {
    /// Fork slot `.0`'s waiting process (`copy_process`).
    Fork(usize),
    /// Reap an exited child (`wait4` → `release_task`): its remaining objects.
    Reap(Vec<Obj>),
}

/// An RCU callback, run on the CPU that queued it once the grace period is over.
#[derive(Debug)]
enum Rcu {
    /// `kmem_cache_free` of one object (`delayed_put_pid`, `put_cred_rcu`).
    Free(Obj),
    /// `delayed_put_task_struct`: the task's last reference; its cred is put (another
    /// callback), its signal and the task_struct itself freed.
    PutTask(Vec<Obj>),
}

/// A running process.
#[derive(Debug)]
struct Proc {
    spec: ProcSpec,
    phase: Phase,
    pgd: Option<Pfn>,
    anon: Vec<Pfn>,
    tables: Vec<Pfn>,
    /// Pages faulted, then pages written.
    count: u64,
    freed: usize,
    /// Slab objects held, in allocation order.
    objs: Vec<Obj>,
    /// The CPU its parent forks and reaps it on.
    parent: u32,
}

/// A finished process's anon, page-table and slab-object lists, kept for the next one.
type Spare = (Vec<Pfn>, Vec<Pfn>, Vec<Obj>);

/// A make job slot's state that changes: the slot's CPU runs its processes, and with `fork`
/// the parent CPU takes the waiting process out for its fork and puts it back.
#[derive(Debug, Default)]
struct SlotState {
    /// Its process waits for its fork.
    waiting: bool,
    /// Processes of the current job still to start.
    queue: VecDeque<ProcSpec>,
    /// The running process (taken out while a step runs it, or its parent forks it). Boxed:
    /// every step of the process moves it out and back, and by value that was a `memcpy`
    /// of the whole process twice a step (4.4 % of a quick spr-2s-224 run).
    cur: Option<Box<Proc>>,
    /// Vectors kept for reuse across processes (a job's anon list is ≈ 20 K entries).
    spare: Option<Spare>,
    /// This slot is running the final link.
    linking: bool,
}

/// A make job slot: runs one job's processes after another. On lines of its own: the slots
/// of two CPUs sat side by side, and every real step's lock of its slot moved the line the
/// other CPU's slot shared (see [`Padded`]).
#[derive(Debug)]
#[repr(align(128))]
struct Slot {
    cpu: u32,
    /// The build (and memory cgroup) it belongs to.
    build: usize,
    /// The CPU the job's shell and compiler driver run on (with `fork`).
    parent: u32,
    /// Nothing left to run (read by the parents' CPUs deciding whether to wait for it).
    done: AtomicBool,
}

/// A CPU's RCU callbacks with the time each is due, in that order.
type RcuQueue = VecDeque<(u64, Rcu)>;

/// What only its own CPU's steps change: the next of its slots to run a step of (round
/// robin when it has several), and its random draws (migrations).
#[derive(Clone, Debug)]
struct CpuPart {
    turn: usize,
    rng: Rng,
}

/// How a step reaches the state its CPU shares with others: behind their locks on real
/// threads ([`Locked`]), or without them when the model runs the workload alone
/// ([`Alone`]). A step takes half a dozen of these locks, each uncontended lock and unlock
/// an atomic read-modify-write: 18 % of a quick kbuild run in the model.
trait Shared {
    fn state(&self, s: usize) -> impl DerefMut<Target = SlotState> + '_;
    fn build(&self, b: usize) -> impl DerefMut<Target = Build> + '_;
    fn requests(&self, c: usize) -> impl DerefMut<Target = VecDeque<Request>> + '_;
    fn rcu(&self, c: usize) -> impl DerefMut<Target = RcuQueue> + '_;
}

/// The parts of a run behind their own locks, each one per slot, build or CPU.
#[derive(Debug, Default)]
struct Parts {
    /// Per slot: locked for bookkeeping only, never across an allocator call.
    states: Vec<Mutex<SlotState>>,
    /// Per build side by side (`cgroups`): locked for bookkeeping only, as a slot's state.
    builds: Vec<Mutex<Build>>,
    /// Forks and reaps asked of each CPU, in order (children push, the CPU pops).
    requests: Vec<Mutex<VecDeque<Request>>>,
    /// Each CPU's RCU callbacks with the time they are due, in that order (its children read
    /// when the first is due).
    rcu: Vec<Mutex<RcuQueue>>,
}

/// [`Shared`] behind the parts' locks.
struct Locked<'a>(&'a Parts);

impl Shared for Locked<'_> {
    fn state(&self, s: usize) -> impl DerefMut<Target = SlotState> + '_ {
        lock(&self.0.states[s])
    }
    fn build(&self, b: usize) -> impl DerefMut<Target = Build> + '_ {
        lock(&self.0.builds[b])
    }
    fn requests(&self, c: usize) -> impl DerefMut<Target = VecDeque<Request>> + '_ {
        lock(&self.0.requests[c])
    }
    fn rcu(&self, c: usize) -> impl DerefMut<Target = RcuQueue> + '_ {
        lock(&self.0.rcu[c])
    }
}

/// [`Shared`] of a step that has the run to itself: the parts taken out of the run for the
/// step (four vectors moved, their elements left in place) and reached without locking.
/// A `RefCell` per kind, so that a second visit to a kind while one is open fails, as it
/// could deadlock on the locks.
struct Alone {
    states: RefCell<Vec<Mutex<SlotState>>>,
    builds: RefCell<Vec<Mutex<Build>>>,
    requests: RefCell<Vec<Mutex<VecDeque<Request>>>>,
    rcu: RefCell<Vec<Mutex<RcuQueue>>>,
}

impl Alone {
    fn new(p: Parts) -> Alone {
        Alone {
            states: RefCell::new(p.states),
            builds: RefCell::new(p.builds),
            requests: RefCell::new(p.requests),
            rcu: RefCell::new(p.rcu),
        }
    }

    fn into_parts(self) -> Parts {
        Parts {
            states: self.states.into_inner(),
            builds: self.builds.into_inner(),
            requests: self.requests.into_inner(),
            rcu: self.rcu.into_inner(),
        }
    }
}

/// Element `i` of `v`, borrowed without its lock.
fn unlocked<T>(v: &RefCell<Vec<Mutex<T>>>, i: usize) -> RefMut<'_, T> {
    RefMut::map(v.borrow_mut(), |v| part(&mut v[i]))
}

impl Shared for Alone {
    fn state(&self, s: usize) -> impl DerefMut<Target = SlotState> + '_ {
        unlocked(&self.states, s)
    }
    fn build(&self, b: usize) -> impl DerefMut<Target = Build> + '_ {
        unlocked(&self.builds, b)
    }
    fn requests(&self, c: usize) -> impl DerefMut<Target = VecDeque<Request>> + '_ {
        unlocked(&self.requests, c)
    }
    fn rcu(&self, c: usize) -> impl DerefMut<Target = RcuQueue> + '_ {
        unlocked(&self.rcu, c)
    }
}

/// One of the builds run side by side (`cgroups`): its make, its share of the jobs, its
/// link and its memory cgroup. Its slots on every CPU share it, under a lock held for
/// bookkeeping only (a charge's reclaim frees its pages after the lock is let go).
#[derive(Debug)]
struct Build {
    /// Its next job and the end of its share, in the whole run's job numbering.
    next_job: u64,
    end_job: u64,
    /// Jobs in its share, and of those finished.
    jobs: u64,
    jobs_done: u64,
    link_done: bool,
    /// When its last slot finished, ps: its build time.
    end_ps: u64,
    /// Every page it allocates is charged here; its page cache is the reclaimable part.
    memcg: Memcg,
}

/// The run's counters, added to by every CPU (each on its own slot: [`Tally`]).
#[derive(Debug, Default)]
struct Counters {
    processes: Tally,
    faults: Tally,
    /// Page-cache pages written (reclaimed ones included).
    cache_pages: Tally,
    failed: Tally,
    /// Objects freed by RCU callbacks.
    rcu_frees: Tally,
    /// Objects freed on another CPU than the one that allocated them.
    remote_frees: Tally,
    /// Processes moved to another CPU (two per swap).
    migrations: Tally,
    /// Files opened (each a `struct file`).
    opens: Tally,
}

/// One run. Its state is split so that the real runner's CPUs step at the same time: each
/// slot's and each build's state behind its own lock, each CPU's requests and RCU callbacks
/// in their own queues, counters and sleep flags atomic; no lock is held across an allocator
/// call, so the allocator calls of two CPUs overlap as in a kernel. The model steps one CPU
/// at a time, which makes every lock uncontended and the decisions those of one object; it
/// reaches the locked parts without their locks ([`Shared`]).
#[derive(Debug)]
pub struct Kbuild {
    jobs: u64,
    parallel: u32,
    mem_node: Option<u32>,
    spread: bool,
    fault: u64,
    /// Lines of the process's own data through the L2 per fault (`fault_lines`).
    fault_lines: u64,
    job_pages: f64,
    helpers: u32,
    helper_pages: f64,
    fixed_pt: u64,
    obj_pages: u64,
    write_page: u64,
    exit_page: u64,
    link_pages: u64,
    slab: bool,
    /// Fork, reaping and RCU frees across CPUs (`fork` and `slab`).
    cross: bool,
    /// Grace period, ps.
    rcu_gp: u64,
    /// Chance that a fault step starts a migration (a swap with another slot's process).
    migrate_p: f64,
    /// Files a compiler and a helper open.
    opens: [u32; 2],
    /// Each slot's group: the slots on its node in its build, among which its process may
    /// move ([`migrate`](Self::migrate)).
    slot_group: Vec<u32>,
    groups: Vec<Vec<usize>>,
    /// Slots' and builds' states, CPUs' requests and RCU callbacks; empty during a model
    /// step, which has them as [`Alone`].
    parts: Parts,
    /// CPUs whose last step blocked and that nobody has woken since.
    asleep: Vec<Padded<AtomicBool>>,
    /// VMAs and writable private VMAs of a compiler (and the link), and of a helper.
    vmas: [(u32, u32); 2],
    seed: u64,
    slots: Vec<Slot>,
    /// Slots of each CPU (a CPU runs its slots in turn when `parallel` exceeds the CPUs).
    cpu_slots: Vec<Vec<usize>>,
    /// Each CPU's own state: the next slot it runs a step of, its random draws.
    cpu_part: PerCpu<CpuPart>,
    /// Builds side by side (`cgroups`), made by `start`.
    nr_builds: u32,
    /// The CPU each build's make runs on: its first slot's parent CPU.
    make_cpu: Vec<u32>,
    /// memory.max of each build's cgroup, pages (0: none).
    memcg_limit: u64,
    /// Reclaim's work per page, ps.
    reclaim_page: u64,
    counts: Counters,
}

impl Kbuild {
    /// A run with these parameters.
    pub fn new(p: &Params) -> Kbuild {
        let mem_node = p.get("mem_node").round();
        Kbuild {
            jobs: p.count("jobs"),
            parallel: p.count("parallel") as u32,
            mem_node: (mem_node >= 0.0).then_some(mem_node as u32),
            spread: p.get("placement").round() == 0.0,
            fault: ns(p.get("fault_us") * 1000.0),
            fault_lines: p.get("fault_lines").round() as u64,
            job_pages: p.get("job_mib") * 256.0,
            helpers: p.get("helpers").round() as u32,
            helper_pages: p.get("helper_mib") * 256.0,
            fixed_pt: p.get("fixed_pt_pages").round() as u64,
            obj_pages: (p.get("obj_kib") / 4.0).ceil() as u64,
            write_page: ns(p.get("write_page_ns")),
            exit_page: ns(p.get("exit_page_ns")),
            // Each build links its own share: the link scales with the build's jobs.
            link_pages: (p.get("link_mib") * 256.0 / p.count("cgroups") as f64).round() as u64,
            slab: p.get("slab").round() != 0.0,
            cross: p.get("slab").round() != 0.0 && p.get("fork").round() != 0.0,
            rcu_gp: ns(p.get("rcu_gp_ms") * 1e6),
            // A swap moves two processes: each starts one at half the rate.
            migrate_p: p.get("migrations_per_s") * p.get("fault_us") * 1e-6 / 2.0,
            slot_group: Vec::new(),
            groups: Vec::new(),
            opens: if p.get("files").round() != 0.0 {
                [p.get("opens_compiler").round() as u32, p.get("opens_helper").round() as u32]
            } else {
                [0, 0]
            },
            parts: Parts::default(),
            asleep: Vec::new(),
            vmas: [
                (p.get("vmas_compiler").round() as u32, p.get("anon_vmas_compiler").round() as u32),
                (p.get("vmas_helper").round() as u32, p.get("anon_vmas_helper").round() as u32),
            ],
            seed: 0,
            slots: Vec::new(),
            cpu_slots: Vec::new(),
            cpu_part: PerCpu::new([]),
            nr_builds: p.count("cgroups") as u32,
            make_cpu: Vec::new(),
            memcg_limit: (p.get("memcg_limit_mib") * 256.0).round() as u64,
            reclaim_page: ns(p.get("reclaim_page_ns")),
            counts: Counters::default(),
        }
    }

    /// The processes of job `j`, drawn from a generator of its own so that a job is the same
    /// whichever slot runs it.
    fn job(&self, j: u64) -> VecDeque<ProcSpec> {
        let mut rng = Rng::new(self.seed ^ (j + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
        let mut uniform =
            |lo: f64, hi: f64| lo + (hi - lo) * (rng.below(1 << 20) as f64 / (1 << 20) as f64);
        let total = self.job_pages * uniform(0.25, 1.75);
        let helpers: Vec<u64> = (0..self.helpers)
            .map(|_| (self.helper_pages * uniform(0.5, 1.5)).round() as u64)
            .collect();
        let main = (total - helpers.iter().sum::<u64>() as f64).max(1.0).round() as u64;
        let mut q = VecDeque::with_capacity(1 + helpers.len());
        let [(cv, ca), (hv, ha)] = self.vmas;
        q.push_back(ProcSpec {
            anon: main,
            obj: self.obj_pages,
            vmas: cv,
            anon_vmas: ca,
            by_make: true,
            opens: self.opens[0],
        });
        q.extend(helpers.into_iter().map(|anon| ProcSpec {
            anon,
            obj: 0,
            vmas: hv,
            anon_vmas: ha,
            by_make: false,
            opens: self.opens[1],
        }));
        q
    }

    /// Allocate a page for build `b` and charge it to the build's cgroup, which may first
    /// reclaim the cgroup's oldest page cache on this CPU (§1.5): the pages are taken off
    /// the cgroup under its build's lock and freed after it.
    fn alloc<S: Shared>(
        &self,
        sh: &S,
        ctx: &mut Ctx<'_>,
        b: usize,
        gfp: Gfp,
        order: Order,
    ) -> Result<Option<Pfn>> {
        let p = match self.mem_node {
            Some(n) => ctx.alloc_node(n, gfp, order),
            None => ctx.alloc(gfp, order),
        };
        if p.is_none() {
            self.counts.failed.add(ctx.cpu(), 1);
            return Ok(None);
        }
        let reclaimed = sh.build(b).memcg.charge(order.nr_pages().0);
        for page in reclaimed {
            ctx.work(self.reclaim_page);
            ctx.free(page, Order(0))?;
        }
        Ok(p)
    }

    /// Free a page of build `b` and uncharge it.
    fn free<S: Shared>(
        &self,
        sh: &S,
        ctx: &mut Ctx<'_>,
        b: usize,
        page: Pfn,
        order: Order,
    ) -> Result<()> {
        sh.build(b).memcg.uncharge(order.nr_pages().0);
        ctx.free(page, order)
    }

    /// Start the slot's next process, taking a new job (or the link) when its job is over.
    /// Returns false when the slot has nothing left to do.
    fn start_next<S: Shared>(&self, sh: &S, s: usize, slot: &mut SlotState) -> bool {
        let b = self.slots[s].build;
        let spec = match slot.queue.pop_front() {
            Some(spec) => spec,
            None => {
                let mut build = sh.build(b);
                if slot.linking {
                    build.link_done = true;
                    slot.linking = false;
                    return false;
                }
                if build.next_job < build.end_job {
                    let j = build.next_job;
                    build.next_job += 1;
                    drop(build);
                    let mut q = self.job(j);
                    let Some(first) = q.pop_front() else { return false };
                    slot.queue = q;
                    first
                } else {
                    return false;
                }
            }
        };
        let (mut anon, mut tables, mut objs) = slot.spare.take().unwrap_or_default();
        anon.clear();
        tables.clear();
        objs.clear();
        anon.reserve(spec.anon as usize);
        let parent = if spec.by_make { self.make_cpu[b] } else { self.slots[s].parent };
        slot.cur = Some(Box::new(Proc {
            spec,
            phase: if self.cross { Phase::Fork } else { Phase::Exec },
            pgd: None,
            anon,
            tables,
            count: 0,
            freed: 0,
            objs,
            parent,
        }));
        self.counts.processes.add(self.slots[s].cpu, 1);
        true
    }

    /// The slot's job ended with its last process: count it, and start the link if it was
    /// the build's last job.
    fn job_finished<S: Shared>(&self, sh: &S, s: usize, slot: &mut SlotState) {
        if slot.linking {
            return;
        }
        let mut build = sh.build(self.slots[s].build);
        build.jobs_done += 1;
        if build.jobs_done == build.jobs && self.link_pages > 0 && !build.link_done {
            slot.linking = true;
            let (vmas, anon_vmas) = self.vmas[0];
            slot.queue.push_back(ProcSpec {
                anon: self.link_pages,
                obj: 0,
                vmas,
                anon_vmas,
                by_make: true,
                // Not measured: the link's opens (its objects and archives) are left out.
                opens: 0,
            });
        }
    }

    /// A new process's kernel objects (fork and exec, §1.4): one of each per-process object,
    /// then a vm_area_struct per VMA and an anon_vma with its chain per writable private one.
    /// With `fork`, only exec's part: the new cred (the forked one is put through RCU on this
    /// CPU, `commit_creds`), the mm_struct and the VMAs.
    fn exec_objects<S: Shared>(&self, sh: &S, ctx: &mut Ctx<'_>, p: &mut Proc) -> Result<()> {
        if !self.slab {
            return Ok(());
        }
        let vmas = p.spec.vmas as usize;
        let anon = p.spec.anon_vmas.min(p.spec.vmas) as usize;
        let own: Vec<CacheId> = if self.cross {
            if let Some(i) = p.objs.iter().position(|o| o.0 == CRED) {
                let old = p.objs.remove(i);
                let due = ctx.now().saturating_add(self.rcu_gp);
                self.queue_rcu(sh, ctx.cpu() as usize, due, Rcu::Free(old));
            }
            vec![CRED, MM_STRUCT]
        } else {
            (0..PER_PROCESS as u16).map(CacheId).collect()
        };
        let caches = own
            .into_iter()
            .chain(std::iter::repeat_n(VM_AREA, vmas))
            .chain((0..anon).flat_map(|_| [ANON_VMA, ANON_VMA_CHAIN]));
        self.alloc_objects(ctx, p, caches)
    }

    /// Allocate one object of each of `caches` on this CPU for `p`.
    fn alloc_objects(
        &self,
        ctx: &mut Ctx<'_>,
        p: &mut Proc,
        caches: impl Iterator<Item = CacheId>,
    ) -> Result<()> {
        for c in caches {
            match ctx.slab_alloc(c, GFP_SLAB, self.mem_node)? {
                Some(o) => p.objs.push((c, o, ctx.cpu())),
                None => self.counts.failed.add(ctx.cpu(), 1),
            }
        }
        Ok(())
    }

    /// Free one object on this CPU, counting it if another CPU allocated it.
    fn free_obj(&self, ctx: &mut Ctx<'_>, (c, o, from): Obj) -> Result<()> {
        if from != ctx.cpu() {
            self.counts.remote_frees.add(ctx.cpu(), 1);
        }
        ctx.slab_free(c, o)
    }

    /// Free the objects of `objs` whose cache `which` picks, newest first; keep the rest.
    fn free_objects(
        &self,
        ctx: &mut Ctx<'_>,
        objs: &mut Vec<Obj>,
        which: impl Fn(CacheId) -> bool,
    ) -> Result<()> {
        let mut kept = Vec::with_capacity(objs.len());
        while let Some(o) = objs.pop() {
            if which(o.0) {
                self.free_obj(ctx, o)?;
            } else {
                kept.push(o);
            }
        }
        objs.extend(kept.into_iter().rev());
        Ok(())
    }

    /// One step of CPU `ctx.cpu()`, whose own state is `part`, reaching what it
    /// shares through `sh`.
    fn step_with<S: Shared>(&self, ctx: &mut Ctx<'_>, sh: &S, part: &mut CpuPart) -> Result<Next> {
        let c = ctx.cpu() as usize;
        if self.cross {
            // As a parent first: RCU callbacks that are due, then a fork or a reap.
            self.run_rcu(sh, c, ctx)?;
            if self.serve(sh, c, ctx)? {
                return Ok(Next::Continue);
            }
        }
        let slots = self.cpu_slots.get(c).map_or(&[][..], Vec::as_slice);
        let nr = slots.len();
        // The CPU's next slot that still has work (round robin: time-sharing when several).
        let turn = part.turn;
        let pick = (0..nr).find_map(|k| {
            let s = slots[(turn + k) % nr];
            let slot = &self.slots[s];
            (!slot.done.load(SeqCst) && !sh.state(s).waiting).then_some((s, (turn + k + 1) % nr))
        });
        if let Some((_, next)) = pick {
            part.turn = next;
        }
        let pick = pick.map(|(s, _)| s);
        let Some(s) = pick else { return Ok(self.idle(sh, c)) };
        let slot = &self.slots[s];
        let finished = {
            let mut st = sh.state(s);
            st.cur.is_none() && !self.start_next(sh, s, &mut st)
        };
        if finished {
            slot.done.store(true, SeqCst);
            {
                let mut build = sh.build(slot.build);
                build.end_ps = build.end_ps.max(ctx.now());
            }
            if self.cross {
                // Its parents may be waiting only for it (with migrations, any parent of
                // its group: see `parents`).
                if self.migrate_p > 0.0 {
                    for &t in &self.groups[self.slot_group[s] as usize] {
                        self.wake(self.slots[t].parent, ctx);
                    }
                } else {
                    self.wake(slot.parent, ctx);
                }
                self.wake(self.make_cpu[slot.build], ctx);
                return Ok(Next::Continue);
            }
            let all_done = slots.iter().all(|&s| self.slots[s].done.load(SeqCst));
            return Ok(if all_done { Next::Done } else { Next::Continue });
        }
        if self.cross {
            self.kick_parents(sh, s, ctx);
        }
        self.run_proc(sh, s, ctx, &mut part.rng)?;
        Ok(Next::Continue)
    }

    /// Wake CPU `x` if it blocked and nobody woke it since (not this CPU: it is running).
    /// The caller has already made the change `x` waits for: `x` sets its flag before it
    /// looks for work a last time ([`idle`](Self::idle)), so one of the two sees the other.
    fn wake(&self, x: u32, ctx: &mut Ctx<'_>) {
        if x != ctx.cpu() && self.asleep.get(x as usize).is_some_and(|a| a.0.swap(false, SeqCst)) {
            ctx.wake(x, ctx.now());
        }
    }

    /// Queue an RCU callback on CPU `c`, due at `due`.
    fn queue_rcu<S: Shared>(&self, sh: &S, c: usize, due: u64, cb: Rcu) {
        sh.rcu(c).push_back((due, cb));
    }

    /// When CPU `c`'s first RCU callback is due, if it has one.
    fn rcu_due<S: Shared>(&self, sh: &S, c: usize) -> Option<u64> {
        sh.rcu(c).front().map(|r| r.0)
    }

    /// Slot `s`'s parents (its shell's CPU and make's) run their RCU callbacks on time: an
    /// idle CPU with callbacks keeps its tick, which the model stands in for by waking it
    /// from the child's steps once one is due.
    fn kick_parents<S: Shared>(&self, sh: &S, s: usize, ctx: &mut Ctx<'_>) {
        for x in [self.slots[s].parent, self.make_cpu[self.slots[s].build]] {
            if self.rcu_due(sh, x as usize).is_some_and(|due| due <= ctx.now()) {
                self.wake(x, ctx);
            }
        }
    }

    /// Run CPU `c`'s RCU callbacks that are due, each taken off the queue before it runs.
    fn run_rcu<S: Shared>(&self, sh: &S, c: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        let now = ctx.now();
        loop {
            let cb = {
                let mut q = sh.rcu(c);
                if q.front().is_none_or(|r| r.0 > now) {
                    break;
                }
                let Some((_, cb)) = q.pop_front() else { break };
                cb
            };
            match cb {
                Rcu::Free(o) => {
                    self.counts.rcu_frees.add(ctx.cpu(), 1);
                    self.free_obj(ctx, o)?;
                }
                Rcu::PutTask(objs) => {
                    // __put_task_struct: the cred goes through RCU again; signal, then the
                    // task_struct, are freed now.
                    let due = ctx.now().saturating_add(self.rcu_gp);
                    for o in objs.into_iter().rev() {
                        if o.0 == CRED {
                            self.queue_rcu(sh, c, due, Rcu::Free(o));
                        } else {
                            self.counts.rcu_frees.add(ctx.cpu(), 1);
                            self.free_obj(ctx, o)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Serve one fork or reap asked of CPU `c`; false if there was none.
    fn serve<S: Shared>(&self, sh: &S, c: usize, ctx: &mut Ctx<'_>) -> Result<bool> {
        let request = sh.requests(c).pop_front();
        match request {
            Some(Request::Fork(s)) => self.fork(sh, s, ctx)?,
            Some(Request::Reap(objs)) => self.reap(sh, c, objs, ctx)?,
            None => return Ok(false),
        }
        Ok(true)
    }

    /// copy_process for slot `s`'s waiting process, on this (the parent's) CPU; the child
    /// then runs on its slot's CPU.
    fn fork<S: Shared>(&self, sh: &S, s: usize, ctx: &mut Ctx<'_>) -> Result<()> {
        let slot = &self.slots[s];
        let Some(mut p) = sh.state(s).cur.take() else { return Ok(()) };
        self.alloc_objects(ctx, &mut p, (0..FORKED as u16).map(CacheId))?;
        p.phase = Phase::Exec;
        {
            let mut st = sh.state(s);
            st.cur = Some(p);
            st.waiting = false;
        }
        self.wake(slot.cpu, ctx);
        Ok(())
    }

    /// release_task on CPU `c`, the parent's: the sighand is freed at once, the pid
    /// (`free_pid`) and the task (`delayed_put_task_struct`, with its signal and cred) after a
    /// grace period, by callbacks on this CPU.
    fn reap<S: Shared>(&self, sh: &S, c: usize, objs: Vec<Obj>, ctx: &mut Ctx<'_>) -> Result<()> {
        let due = ctx.now().saturating_add(self.rcu_gp);
        let mut task = Vec::with_capacity(objs.len());
        for o in objs {
            if o.0 == SIGHAND {
                self.free_obj(ctx, o)?;
            } else if o.0 == PID {
                self.queue_rcu(sh, c, due, Rcu::Free(o));
            } else {
                task.push(o);
            }
        }
        self.queue_rcu(sh, c, due, Rcu::PutTask(task));
        Ok(())
    }

    /// Whether CPU `c` has a request to serve or a slot it can run a step of.
    fn has_work<S: Shared>(&self, sh: &S, c: usize) -> bool {
        !sh.requests(c).is_empty()
            || self.cpu_slots[c]
                .iter()
                .any(|&s| !self.slots[s].done.load(SeqCst) && !sh.state(s).waiting)
    }

    /// What CPU `c` does with nothing to run: wait for the fork it asked for, or, as a parent,
    /// for its children's exits (they wake it); then run its last RCU callbacks, and finish.
    /// Before it blocks it marks itself asleep and looks once more: on real threads a child
    /// may have asked for something since this step looked, before the flag was set, and
    /// would not have woken it (the model steps one CPU at a time, so there it never has).
    fn idle<S: Shared>(&self, sh: &S, c: usize) -> Next {
        if !self.cross {
            return Next::Done;
        }
        let waits = self.cpu_slots[c].iter().any(|&s| !self.slots[s].done.load(SeqCst));
        let parent = self.slots.iter().enumerate().any(|(i, s)| {
            !s.done.load(SeqCst) && (self.make_cpu[s.build] as usize == c || self.parents(i, c))
        });
        if waits || parent {
            self.asleep[c].0.store(true, SeqCst);
            fence(SeqCst);
            if self.has_work(sh, c) {
                self.asleep[c].0.store(false, SeqCst);
                return Next::Continue;
            }
            return Next::Block;
        }
        self.rcu_due(sh, c).map_or(Next::Done, Next::SleepUntil)
    }

    /// Whether CPU `c` may be the parent of a process that slot `s` runs: the slot's own
    /// parent, or with migrations the parent of any slot of its group (a process keeps its
    /// parent wherever it moves, and the parent must stay to reap it).
    fn parents(&self, s: usize, c: usize) -> bool {
        if self.migrate_p > 0.0 {
            let group = &self.groups[self.slot_group[s] as usize];
            group.iter().any(|&t| self.slots[t].parent as usize == c)
        } else {
            self.slots[s].parent as usize == c
        }
    }

    /// One step of slot `s`'s running process, taken out of the slot while it runs (its
    /// allocator calls hold no lock).
    fn run_proc<S: Shared>(
        &self,
        sh: &S,
        s: usize,
        ctx: &mut Ctx<'_>,
        rng: &mut Rng,
    ) -> Result<()> {
        let slot = &self.slots[s];
        let Some(mut p) = sh.state(s).cur.take() else { return Ok(()) };
        let b = slot.build;
        match p.phase {
            Phase::Fork => {
                // Back in the slot, waiting, before the parent can see the request.
                let parent = p.parent;
                {
                    let mut st = sh.state(s);
                    st.waiting = true;
                    st.cur = Some(p);
                }
                sh.requests(parent as usize).push_back(Request::Fork(s));
                self.wake(parent, ctx);
                return Ok(());
            }
            Phase::Exec => {
                self.exec_objects(sh, ctx, &mut p)?;
                p.pgd = self.alloc(sh, ctx, b, Gfp::KERNEL, PGD_ORDER)?;
                for _ in 0..self.fixed_pt {
                    if let Some(t) = self.alloc(sh, ctx, b, GFP_PGTABLE, Order(0))? {
                        ctx.touch(t, 4096);
                        p.tables.push(t);
                    }
                }
                p.phase = if p.spec.anon > 0 { Phase::Fault } else { Phase::Write };
            }
            Phase::Fault => {
                // The page's slot: its line went cold while the other CPUs stepped, and the
                // push's store would wait for it at the next locked instruction.
                if let Some(slot) = p.anon.spare_capacity_mut().first() {
                    crate::heap::prefetch(slot);
                }
                ctx.compute(self.fault, self.fault_lines);
                // The first fault in each 2 MiB needs a PTE page first.
                if p.count % PTRS_PER_PTE == 0 {
                    if let Some(t) = self.alloc(sh, ctx, b, GFP_PGTABLE, Order(0))? {
                        ctx.touch(t, 4096);
                        p.tables.push(t);
                    }
                }
                if let Some(page) = self.alloc(sh, ctx, b, Gfp::HIGHUSER_MOVABLE, Order(0))? {
                    // The fault clears the whole page.
                    ctx.touch(page, 4096);
                    p.anon.push(page);
                }
                self.counts.faults.add(ctx.cpu(), 1);
                self.open_files(sh, ctx, &mut p)?;
                p.count += 1;
                if p.count >= p.spec.anon {
                    p.count = 0;
                    p.phase = Phase::Write;
                } else if self.migrate_p > 0.0 && rng.chance(self.migrate_p) {
                    p = self.migrate(sh, s, p, ctx, rng);
                }
            }
            Phase::Write => {
                if p.count < p.spec.obj {
                    if let Some(page) = self.alloc(sh, ctx, b, Gfp::HIGHUSER_MOVABLE, Order(0))? {
                        ctx.touch(page, 4096);
                        sh.build(b).memcg.add_cache(ctx.cpu(), page);
                        self.counts.cache_pages.add(ctx.cpu(), 1);
                    }
                    ctx.work(self.write_page);
                    p.count += 1;
                } else {
                    p.phase = Phase::ExitUser;
                }
            }
            Phase::ExitUser => {
                let end = (p.freed + EXIT_CHUNK).min(p.anon.len());
                for i in p.freed..end {
                    if let Some(&ahead) = p.anon.get(i + PREFETCH_AHEAD) {
                        ctx.prefetch(ahead);
                    }
                    let page = p.anon[i];
                    ctx.work(self.exit_page);
                    self.free(sh, ctx, b, page, Order(0))?;
                }
                p.freed = end;
                if end == p.anon.len() {
                    p.anon.clear();
                    p.phase = Phase::ExitTables;
                }
            }
            Phase::ExitTables => return self.exit_tables(sh, s, &mut p, ctx),
        }
        sh.state(s).cur = Some(p);
        Ok(())
    }

    /// The files `p` opens with its fault number `p.count` (its opens spread evenly over the
    /// first [`OPENS_SHARE`] of its faults): each takes a `struct file` on this CPU and closes
    /// it at once, and 6.6 frees it through `call_rcu` on the closing CPU (`file_free`; a
    /// failed open the same way until 6.7's "vfs: shave work on failed file open"), a grace
    /// period later. With `fork` only, whose RCU callbacks the run keeps.
    fn open_files<S: Shared>(&self, sh: &S, ctx: &mut Ctx<'_>, p: &mut Proc) -> Result<()> {
        if !self.cross || p.spec.opens == 0 {
            return Ok(());
        }
        let faults = ((p.spec.anon as f64 * OPENS_SHARE).ceil() as u64).max(1);
        let (opens, i) = (u64::from(p.spec.opens), p.count);
        if i >= faults {
            return Ok(());
        }
        let n = (i + 1) * opens / faults - i * opens / faults;
        self.counts.opens.add(ctx.cpu(), n);
        for _ in 0..n {
            match ctx.slab_alloc(FILP, GFP_SLAB, self.mem_node)? {
                Some(o) => {
                    let due = ctx.now().saturating_add(self.rcu_gp);
                    self.queue_rcu(sh, ctx.cpu() as usize, due, Rcu::Free((FILP, o, ctx.cpu())));
                }
                None => self.counts.failed.add(ctx.cpu(), 1),
            }
        }
        Ok(())
    }

    /// Move `p`, slot `s`'s process, to another slot of its group drawn at random, whose
    /// process moves to `s` in exchange (**assumed**: a swap stands for two moves that leave
    /// every busy CPU one task). Only a process that is faulting takes part; with none
    /// there, nothing moves. Returns the process `s`
    /// now runs. Its later faults and its exit allocate and free on its new CPU, so the
    /// kernel objects and pages it took before are freed away from where they came from.
    fn migrate<S: Shared>(
        &self,
        sh: &S,
        s: usize,
        p: Box<Proc>,
        ctx: &mut Ctx<'_>,
        rng: &mut Rng,
    ) -> Box<Proc> {
        let group = &self.groups[self.slot_group[s] as usize];
        if group.len() < 2 {
            return p;
        }
        let mut there = sh.state(super::other_than(rng, group, s));
        match there.cur.take_if(|q| q.phase == Phase::Fault) {
            Some(q) => {
                there.cur = Some(p);
                self.counts.migrations.add(ctx.cpu(), 2);
                q
            }
            None => p,
        }
    }

    /// The end of `p`'s exit on slot `s`: exit_mmap and __mmdrop; with `fork` the zombie
    /// goes to its parent to be reaped. Its lists are kept in the slot for the next process.
    fn exit_tables<S: Shared>(
        &self,
        sh: &S,
        s: usize,
        p: &mut Proc,
        ctx: &mut Ctx<'_>,
    ) -> Result<()> {
        let b = self.slots[s].build;
        // exit_mmap: free_pgtables unlinks the anon_vmas, then the page tables go,
        // then remove_vma frees each VMA; __mmdrop frees the PGD, then the mm.
        self.free_objects(ctx, &mut p.objs, |c| c == ANON_VMA_CHAIN || c == ANON_VMA)?;
        let mut tables = std::mem::take(&mut p.tables);
        for t in tables.drain(..) {
            self.free(sh, ctx, b, t, Order(0))?;
        }
        p.tables = tables;
        self.free_objects(ctx, &mut p.objs, |c| c == VM_AREA)?;
        if let Some(pgd) = p.pgd.take() {
            self.free(sh, ctx, b, pgd, PGD_ORDER)?;
        }
        self.free_objects(ctx, &mut p.objs, |c| c == MM_STRUCT)?;
        if self.cross {
            // exit_files and exit_fs here; the zombie's task_struct, pid, cred,
            // sighand and signal go to the parent, which reaps it.
            self.free_objects(ctx, &mut p.objs, |c| c == FILES || c == FS)?;
            let zombie = std::mem::take(&mut p.objs);
            sh.requests(p.parent as usize).push_back(Request::Reap(zombie));
            self.wake(p.parent, ctx);
        } else {
            // Then files, fs, sighand, signal, cred, pid and the task_struct itself.
            self.free_objects(ctx, &mut p.objs, |_| true)?;
        }
        let mut st = sh.state(s);
        st.spare = Some((
            std::mem::take(&mut p.anon),
            std::mem::take(&mut p.tables),
            std::mem::take(&mut p.objs),
        ));
        if st.queue.is_empty() {
            self.job_finished(sh, s, &mut st);
        }
        Ok(())
    }
}

impl Workload for Kbuild {
    fn start(&mut self, info: &ModelInfo) -> Result<Vec<u32>> {
        if let Some(n) = self.mem_node {
            if n >= info.nr_nodes {
                bail!("kbuild: mem_node {n} but the machine has {} node(s)", info.nr_nodes);
            }
        }
        self.seed = info.seed;
        let cpus: Vec<u32> = if self.spread {
            (0..info.nr_cpus).collect()
        } else {
            (0..info.nr_cpus).filter(|&c| info.cpu_node[c as usize] == 0).collect()
        };
        if cpus.is_empty() {
            bail!("kbuild: no CPU to place the jobs on");
        }
        let nb = u64::from(self.nr_builds);
        if nb > u64::from(self.parallel) || nb > self.jobs {
            bail!(
                "kbuild: {nb} cgroups need a slot and a job each: parallel is {} and jobs {}",
                self.parallel,
                self.jobs
            );
        }
        // Slot i on the i-th of `parallel` evenly spaced CPUs: one per core when parallel is
        // half the CPUs and siblings are numbered apart, wrapping round when it exceeds them.
        let n = cpus.len() as u64;
        let j = u64::from(self.parallel);
        self.cpu_slots = vec![Vec::new(); info.nr_cpus as usize];
        let slot_cpus: Vec<u32> =
            (0..j).map(|i| cpus[((i % n) * n / j.min(n)) as usize % cpus.len()]).collect();
        for (i, &c) in slot_cpus.iter().enumerate() {
            self.cpu_slots[c as usize].push(i);
        }
        let seed = self.seed;
        self.cpu_part = PerCpu::new((0..u64::from(info.nr_cpus)).map(|c| CpuPart {
            turn: 0,
            rng: Rng::new(seed ^ (c + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        }));
        let mut running = slot_cpus.clone();
        let mut parents = slot_cpus.clone();
        if self.cross {
            parents = parent_cpus(&slot_cpus, &info.cpu_node);
            running.extend(&parents);
            let n = info.nr_cpus as usize;
            self.parts.requests = (0..n).map(|_| Mutex::default()).collect();
            self.parts.rcu = (0..n).map(|_| Mutex::default()).collect();
            self.asleep = (0..n).map(|_| Padded::default()).collect();
        }
        self.slots = slot_cpus
            .iter()
            .zip(&parents)
            .enumerate()
            .map(|(i, (&cpu, &parent))| Slot {
                cpu,
                // Dealt round the builds: make does not pick CPUs, so every build's tasks
                // spread over the machine as one build's do.
                build: (i as u64 % nb) as usize,
                parent,
                done: AtomicBool::new(false),
            })
            .collect();
        self.parts.states = self.slots.iter().map(|_| Mutex::default()).collect();
        (self.slot_group, self.groups) = slot_groups(&self.slots, &info.cpu_node);
        // Build b has jobs b·jobs/n .. (b+1)·jobs/n and its make on its first slot's parent.
        self.make_cpu = parents[..nb as usize].to_vec();
        self.parts.builds = (0..nb)
            .map(|b| {
                let (first, end) = (b * self.jobs / nb, (b + 1) * self.jobs / nb);
                Mutex::new(Build {
                    next_job: first,
                    end_job: end,
                    jobs: end - first,
                    jobs_done: 0,
                    link_done: false,
                    end_ps: 0,
                    memcg: Memcg::new(self.memcg_limit),
                })
            })
            .collect();
        running.sort_unstable();
        running.dedup();
        Ok(running)
    }

    fn step(&self, ctx: &mut Ctx<'_>) -> Result<Next> {
        if self.cross {
            self.asleep[ctx.cpu() as usize].0.store(false, SeqCst);
        }
        let mut part = self.cpu_part.get(ctx.cpu())?;
        self.step_with(ctx, &Locked(&self.parts), &mut part)
    }

    /// The same step without locks: the model owns the workload, so the CPU's part and the
    /// shared parts are taken out of the run for the step and put back after it (nothing
    /// else reads them during its step), and the CPU's sleep flag is cleared in place.
    fn step_alone(&mut self, ctx: &mut Ctx<'_>) -> Result<Next> {
        let cpu = ctx.cpu();
        if self.cross {
            *self.asleep[cpu as usize].0.get_mut() = false;
        }
        let mut part = self.cpu_part.get_mut(cpu)?.clone();
        let alone = Alone::new(std::mem::take(&mut self.parts));
        let next = self.step_with(ctx, &alone, &mut part);
        self.parts = alone.into_parts();
        *self.cpu_part.get_mut(cpu)? = part;
        next
    }

    /// The kernel objects' caches with SLUB's 6.6 slab-order rule (seed 001's kernel).
    fn slab_setup(&self) -> SlabSetup {
        if !self.slab {
            return SlabSetup::default();
        }
        SlabSetup {
            config: SlubConfig::default().with(|c| c.order_rule = OrderRule::Pre6_7),
            caches: OBJECTS
                .iter()
                .map(|&(name, size, align)| {
                    SlabSpec::new(name, size, align, pagealloc_slab::SlabFlags::NONE)
                })
                .collect(),
        }
    }

    fn held(&mut self) -> Vec<(u32, Pfn, Order)> {
        let mut v: Vec<(u32, Pfn, Order)> = Vec::new();
        for b in &mut self.parts.builds {
            let b = part(b);
            v.extend(b.memcg.take_cache().map(|(c, p)| (c, p, Order(0))));
        }
        for (s, state) in self.slots.iter().zip(&mut self.parts.states) {
            let cpu = s.cpu;
            if let Some(p) = part(state).cur.take() {
                v.extend(p.anon[p.freed.min(p.anon.len())..].iter().map(|&q| (cpu, q, Order(0))));
                v.extend(p.tables.iter().map(|&q| (cpu, q, Order(0))));
                v.extend(p.pgd.map(|q| (cpu, q, PGD_ORDER)));
            }
        }
        v
    }

    fn metrics(&self) -> Vec<(String, f64)> {
        let builds: Vec<MutexGuard<'_, Build>> = self.parts.builds.iter().map(lock).collect();
        let sum = |f: fn(&Build) -> u64| builds.iter().map(|b| f(b)).sum::<u64>();
        let count = |t: &Tally| t.get() as f64;
        // LKP's buildtime_per_iteration: the mean over the instances of each one's build time.
        let build_time = sum(|b| b.end_ps) as f64 / 1e12 / builds.len().max(1) as f64;
        let mut m: Vec<(String, f64)> = vec![
            ("build_time".into(), build_time),
            ("jobs".into(), sum(|b| b.jobs_done) as f64),
            ("processes".into(), count(&self.counts.processes)),
            ("faults".into(), count(&self.counts.faults)),
            ("page_cache_pages".into(), count(&self.counts.cache_pages)),
            ("alloc_failures".into(), count(&self.counts.failed)),
            ("rcu_frees".into(), count(&self.counts.rcu_frees)),
            ("remote_frees".into(), count(&self.counts.remote_frees)),
            ("migrations".into(), count(&self.counts.migrations)),
            ("file_opens".into(), count(&self.counts.opens)),
        ];
        if builds.len() > 1 || self.memcg_limit > 0 {
            let peak = builds.iter().map(|b| b.memcg.peak()).max().unwrap_or(0);
            let last = builds.iter().map(|b| b.end_ps).max().unwrap_or(0);
            m.extend([
                ("memcg_reclaim".into(), sum(|b| b.memcg.reclaims()) as f64),
                ("memcg_reclaimed".into(), sum(|b| b.memcg.reclaimed()) as f64),
                ("memcg_overruns".into(), sum(|b| b.memcg.overruns()) as f64),
                ("memcg_peak_mib".into(), peak as f64 / 256.0),
                ("build_time_max".into(), last as f64 / 1e12),
            ]);
        }
        m
    }

    fn progress(&self) -> f64 {
        let link = if self.link_pages > 0 { 1.0 } else { 0.0 };
        let (mut done, mut linked) = (0u64, 0.0);
        for b in &self.parts.builds {
            let b = lock(b);
            done += b.jobs_done;
            linked += if b.link_done { link } else { 0.0 };
        }
        let links = link * self.parts.builds.len() as f64;
        (done as f64 + linked) / (self.jobs as f64 + links).max(1.0)
    }
}

/// The slots a process may migrate among: those on one node in one build (a migration
/// stays within its node's scheduling domains, and a build's memory cgroup with its tasks).
/// Returns each slot's group number and the groups' slots.
fn slot_groups(slots: &[Slot], cpu_node: &[u32]) -> (Vec<u32>, Vec<Vec<usize>>) {
    let mut keys: Vec<(u32, usize)> = Vec::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let of = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let key = (cpu_node.get(slot.cpu as usize).copied().unwrap_or(0), slot.build);
            let g = keys.iter().position(|&k| k == key).unwrap_or_else(|| {
                keys.push(key);
                groups.push(Vec::new());
                keys.len() - 1
            });
            groups[g].push(i);
            g as u32
        })
        .collect();
    (of, groups)
}

/// Each slot's parent CPU (with `fork`, §1.4): the first CPU after the slot's, going round
/// the machine, on the slot's node, that runs no slot and is no other slot's parent — the idle
/// hyperthread sibling on spr-2s-224, whose siblings are numbered side by side; the slot's own
/// CPU when there is none.
fn parent_cpus(slot_cpus: &[u32], cpu_node: &[u32]) -> Vec<u32> {
    let n = cpu_node.len();
    let mut taken = vec![false; n];
    for &c in slot_cpus {
        if let Some(t) = taken.get_mut(c as usize) {
            *t = true;
        }
    }
    slot_cpus
        .iter()
        .map(|&c| {
            let node = cpu_node.get(c as usize);
            let idle = (1..n)
                .map(|k| (c as usize + k) % n)
                .find(|&x| !taken[x] && cpu_node.get(x) == node);
            match idle {
                Some(x) => {
                    taken[x] = true;
                    x as u32
                }
                None => c,
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use pagealloc::Counter;

    use super::*;
    use crate::model::tests::small_setup;
    use crate::model::{Model, RunOutcome};

    /// A small build's parameters: 12 jobs of 2 MiB, two small helpers each, on node 0.
    pub(crate) const SMALL: [&str; 8] = [
        "jobs=12",
        "mem_node=0",
        "job_mib=2",
        "helpers=2",
        "helper_mib=0.25",
        "obj_kib=16",
        "link_mib=1",
        "fault_us=2",
    ];

    /// A small build ([`SMALL`]) on a one-node machine of `cpus` CPUs.
    fn run(preset: &str, cpus: u32, extra: &[&str], seed: u64) -> RunOutcome {
        let mut params: Vec<String> = SMALL.iter().map(|s| s.to_string()).collect();
        params.extend(extra.iter().map(|s| s.to_string()));
        let p = INFO.params(&params, 1.0).unwrap();
        let mut w = (INFO.build)(&p);
        let mut m = Model::new(small_setup(cpus, 256, preset, seed)).unwrap();
        m.run(w.as_mut(), &mut |_| {}).unwrap()
    }

    fn metric(o: &RunOutcome, name: &str) -> f64 {
        o.workload.iter().find(|(k, _)| k == name).unwrap().1
    }

    /// The model's steps, which take the shared parts out of their locks ([`Alone`]), and
    /// the real runner's, which lock them ([`Locked`]), make the same run: with fork, slab
    /// and RCU across CPUs and more slots than CPUs (turns), and with memory cgroups that
    /// reclaim.
    #[test]
    fn steps_alone_and_locked_make_the_same_run() {
        let small: Vec<&str> = SMALL.to_vec();
        let cases: [(&[&str], &str); 4] = [
            (&["parallel=5"], "rcu_frees"),
            (&["parallel=3", "migrations_per_s=20000"], "migrations"),
            (&["parallel=3", "files=1", "opens_compiler=300", "opens_helper=20"], "file_opens"),
            (&["parallel=4", "cgroups=2", "obj_kib=2048", "memcg_limit_mib=10"], "memcg_reclaim"),
        ];
        for (extra, shown) in cases {
            let alone = crate::workload::testing::run("kbuild", &small, extra, 3, "tune-p7", 2);
            let params: Vec<&str> = small.iter().chain(extra).copied().collect();
            let locked = crate::workload::testing::run_locked("kbuild", &params, 3, "tune-p7", 2);
            assert!(metric(&alone, shown) > 0.0, "{extra:?}: {:?}", alone.workload);
            assert_eq!(format!("{alone:?}"), format!("{locked:?}"), "{extra:?}");
        }
    }

    /// A migration swaps two faulting processes between slots: both keep running, each
    /// frees its pages and kernel objects on the CPU it ends on, and its parent, which stays
    /// where it was, still reaps it (the run ends with every object freed).
    #[test]
    fn migrated_processes_finish_elsewhere_and_are_still_reaped() {
        let still = run("tune-base", 8, &["parallel=4"], 5);
        let moved = run("tune-base", 8, &["parallel=4", "migrations_per_s=20000"], 5);
        assert_eq!(metric(&still, "migrations"), 0.0);
        let migrations = metric(&moved, "migrations");
        assert!(migrations > 0.0 && migrations % 2.0 == 0.0, "{migrations}");
        for o in [&still, &moved] {
            assert_eq!(metric(o, "jobs"), 12.0);
            assert_eq!(metric(o, "alloc_failures"), 0.0);
            assert_eq!(metric(o, "processes"), 12.0 * 3.0 + 1.0);
        }
        // The VMAs, anon_vmas and mm of a moved process are freed away from their CPU.
        assert!(
            metric(&moved, "remote_frees") > metric(&still, "remote_frees"),
            "{} vs {}",
            metric(&moved, "remote_frees"),
            metric(&still, "remote_frees")
        );
    }

    /// With `files`, every open of every process but the link takes a `struct file` on its
    /// CPU that an RCU callback frees there: the counts are exact, and every object is back
    /// by the end (the run checks).
    #[test]
    fn each_open_takes_a_file_that_rcu_frees() {
        let opens = ["opens_compiler=100", "opens_helper=10"];
        let off = run("tune-base", 8, &["parallel=4", opens[0], opens[1]], 5);
        let on = run("tune-base", 8, &["parallel=4", "files=1", opens[0], opens[1]], 5);
        assert_eq!(metric(&off, "file_opens"), 0.0);
        // 12 compilers and 2 helpers per job; the link opens nothing.
        assert_eq!(metric(&on, "file_opens"), 12.0 * 100.0 + 12.0 * 2.0 * 10.0);
        assert_eq!(metric(&on, "rcu_frees") - metric(&off, "rcu_frees"), 1440.0);
        assert_eq!(metric(&on, "jobs"), 12.0);
        assert_eq!(metric(&on, "alloc_failures"), 0.0);
    }

    #[test]
    fn every_job_runs_and_every_page_comes_back() {
        // Without slab objects every page allocation and free is the workload's own.
        let o = run("tune-base", 4, &["parallel=4", "slab=0"], 1);
        assert_eq!(metric(&o, "jobs"), 12.0);
        assert_eq!(metric(&o, "alloc_failures"), 0.0);
        // Compiler and two helpers per job, and the link.
        assert_eq!(metric(&o, "processes"), 12.0 * 3.0 + 1.0);
        let faults = metric(&o, "faults");
        let cache = metric(&o, "page_cache_pages");
        assert_eq!(cache, 12.0 * 4.0);
        // The workload frees everything but the page cache itself; the runner frees that.
        assert_eq!(o.ops.allocs as f64 - cache, o.ops.frees as f64);
        // Faults: 2 MiB per job on average (25%..175%) plus the 1 MiB link.
        assert!((12.0 * 512.0 * 0.25..12.0 * 512.0 * 1.75 + 256.0).contains(&faults), "{faults}");
        // The build cannot beat its CPU time spread over the slots, plus the serial link.
        let build = metric(&o, "build_time");
        let floor = (faults - 256.0) * 2e-6 / 4.0 + 256.0 * 2e-6;
        assert!(build > floor && build < 10.0 * floor, "{build} vs {floor}");
        assert_eq!(o.elapsed_ps as f64 / 1e12, build);
    }

    #[test]
    fn processes_free_order0_user_pages_then_an_order1_pgd() {
        let o = run("tune-base", 2, &["parallel=2", "link_mib=0", "slab=0"], 3);
        let procs = metric(&o, "processes") as u64;
        // Order-0 pages and one PGD per process all go through the pagesets (6.6 caches
        // orders 0..3), and the PGDs are the only order-1 blocks.
        assert_eq!(o.events.get(Counter::PcpFree), o.ops.frees);
        assert_eq!(
            o.events.get(Counter::Pgfree) - o.ops.frees,
            procs,
            "each process's PGD frees 2 pages in one call"
        );
    }

    /// Every process allocates its kernel objects and frees them: 8 of its own (and, with
    /// `fork`, the cred exec replaces the forked one with), one per VMA, two per writable VMA;
    /// the run ends with every object freed — the RCU callbacks included, whatever the grace
    /// period — and every slab back (the caches are shrunk before the conservation check,
    /// which passes).
    #[test]
    fn every_process_frees_its_kernel_objects() {
        for (extra, own) in [("fork=0", 8), ("rcu_gp_ms=5", 9), ("rcu_gp_ms=0", 9)] {
            for cpus in [4, 8] {
                let o = run("tune-base", cpus, &["parallel=4", extra], 1);
                let per = |vmas: u64, anon: u64| own + vmas + 2 * anon;
                // 12 jobs of a compiler and 2 helpers, and the link (a compiler's objects).
                let want = 12 * (per(70, 23) + 2 * per(32, 10)) + per(70, 23);
                assert_eq!((o.ops.slab_allocs, o.ops.slab_frees), (want, want), "{extra}");
                assert_eq!(o.ops.slab_alloc_failures, 0);
                assert_eq!(metric(&o, "alloc_failures"), 0.0);
                // RCU frees the forked cred, the pid, the signal, the task_struct and the
                // exec'd cred of every process.
                let rcu = if own == 9 { 5.0 * metric(&o, "processes") } else { 0.0 };
                assert_eq!(metric(&o, "rcu_frees"), rcu, "{extra}");
            }
        }
    }

    /// A long grace period holds the objects of the last exits: the parents' CPUs run their
    /// callbacks after the build's last process, and the run still ends with everything back.
    #[test]
    fn a_long_grace_period_runs_its_callbacks_after_the_build() {
        let o = run("tune-base", 8, &["parallel=4", "rcu_gp_ms=200"], 1);
        assert_eq!(o.ops.slab_allocs, o.ops.slab_frees);
        assert_eq!(metric(&o, "rcu_frees"), 5.0 * metric(&o, "processes"));
        let build = metric(&o, "build_time");
        // The last reap's task_struct callback, then its cred's: two grace periods.
        assert!(o.elapsed_ps as f64 / 1e12 >= build + 0.4, "{} vs {build}", o.elapsed_ps);
    }

    /// With `fork` the process's objects cross CPUs: the parents (on the idle CPU beside each
    /// slot's) allocate them and free some, the children free others; without it every object
    /// is freed where it was allocated.
    #[test]
    fn forked_objects_are_freed_on_other_cpus() {
        let on = run("tune-base", 8, &["parallel=4"], 1);
        let procs = metric(&on, "processes");
        // Per process at least the forked cred, files and fs (allocated by the parent, freed
        // by the child) and the exec'd cred (allocated by the child, freed by the parent).
        assert!(metric(&on, "remote_frees") >= 4.0 * procs, "{}", metric(&on, "remote_frees"));
        let off = run("tune-base", 8, &["parallel=4", "fork=0"], 1);
        assert_eq!(metric(&off, "remote_frees"), 0.0);
        assert_eq!(metric(&off, "rcu_frees"), 0.0);
        // The parents' CPUs run only for the forks and reaps: the build takes as long.
        let (a, b) = (metric(&on, "build_time"), metric(&off, "build_time"));
        assert!((a / b - 1.0).abs() < 0.01, "{a} vs {b}");
    }

    /// `fork = 0` is the old run: with slab off, `fork` changes nothing at all.
    #[test]
    fn fork_needs_slab() {
        let a = run("tune-p7", 8, &["parallel=4", "slab=0"], 3);
        let b = run("tune-p7", 8, &["parallel=4", "slab=0", "fork=0"], 3);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    /// The processes' slabs are taken through the pagesets — task_struct's and mm_struct's
    /// are order 3 here (32 CPUs: `min_objects` 28) — and given back through them. Without
    /// `fork` only at the end of the run, when the caches are shrunk: each CPU allocates and
    /// frees its processes' objects itself, one process at a time, so its active slabs never
    /// fill (the run frees only user pages, page tables and PGDs, as without slab). With
    /// `fork`, make's CPU holds the objects of every slot's first process at once and gets
    /// them back out of order, and objects cross CPUs, so some slabs fill on one CPU, empty on
    /// another and are freed during the run, order-1 and order-3 ones among them.
    #[test]
    fn slabs_above_order0_come_and_go_through_the_pagesets() {
        let (o, freed) = run_slab_frees("fork=0");
        assert_eq!(o.ops.slabs_freed, 0);
        assert_eq!(freed, 0, "no slab above order 0 freed in the run without fork");
        let (o, freed) = run_slab_frees("fork=1");
        assert!(o.ops.slabs_freed > 0 && freed > 0, "{:?}, {freed} pages", o.ops);
    }

    /// A run of 100 jobs on 32 CPUs (16 slots, 16 idle CPUs for their parents) with `extra`,
    /// checked as the test above says; returns the outcome and the pages beyond the first of
    /// the order ≥ 1 slabs freed during the run.
    fn run_slab_frees(extra: &str) -> (RunOutcome, u64) {
        let params: Vec<String> = ["jobs=100", "mem_node=0", "job_mib=2", "helpers=2", extra]
            .iter()
            .chain(&["helper_mib=0.25", "obj_kib=16", "link_mib=0", "fault_us=2", "parallel=16"])
            .map(|s| s.to_string())
            .collect();
        let mut w = (INFO.build)(&INFO.params(&params, 1.0).unwrap());
        let mut m = Model::new(small_setup(32, 512, "tune-base", 1)).unwrap();
        let before = m.allocator().vm_events();
        let o = m.run(w.as_mut(), &mut |_| {}).unwrap();
        let all = m.allocator().vm_events().since(&before);
        // Allocations: more pages than calls beyond the PGDs' second pages: order-3 slabs.
        let procs = metric(&o, "processes") as u64;
        let alloc_pages =
            o.events.get(Counter::PgallocNormal) + o.events.get(Counter::PgallocDma32);
        assert!(
            alloc_pages > o.ops.allocs + procs,
            "{alloc_pages} pages in {} calls",
            o.ops.allocs
        );
        // After the run: the page cache (order 0) and the shrunk slabs, every free on a pageset,
        // more pages than calls.
        let cache = metric(&o, "page_cache_pages") as u64;
        let (calls, pages) = (
            all.get(Counter::PcpFree) - o.events.get(Counter::PcpFree) - cache,
            all.get(Counter::Pgfree) - o.events.get(Counter::Pgfree) - cache,
        );
        assert!(calls > 0 && pages > calls, "shrink: {pages} pages in {calls} pageset frees");
        // In the run: one page beyond the first per PGD, the rest is slabs'.
        let beyond = o.events.get(Counter::Pgfree) - o.ops.frees - procs;
        (o, beyond)
    }

    /// The kernel objects' slab orders on seed 001's 224 CPUs (`min_objects` 36, SLUB's 6.6
    /// rule), as docs/workloads.md §1.4 tabulates them.
    #[test]
    fn slab_orders_on_the_224_cpu_machine() {
        let cfg = SlubConfig::default().with(|c| c.order_rule = OrderRule::Pre6_7);
        let orders: Vec<(&str, u8)> = OBJECTS
            .iter()
            .map(|&(name, size, _)| {
                (name, pagealloc_slab::order::calculate_order(size, 224, &cfg).unwrap().0)
            })
            .collect();
        let want = [
            ("task_struct", 3),
            ("pid", 1),
            ("cred_jar", 1),
            ("files_cache", 3),
            ("fs_cache", 0),
            ("sighand_cache", 3),
            ("signal_cache", 3),
            ("mm_struct", 3),
            ("vm_area_struct", 1),
            ("anon_vma", 0),
            ("anon_vma_chain", 0),
            ("filp", 1),
        ];
        assert_eq!(orders, want);
        assert_eq!(OBJECTS[FILP.0 as usize].0, "filp");
        assert_eq!(
            (OBJECTS[MM_STRUCT.0 as usize].0, OBJECTS[VM_AREA.0 as usize].0),
            ("mm_struct", "vm_area_struct")
        );
        assert_eq!(OBJECTS[ANON_VMA.0 as usize].0, "anon_vma");
        assert_eq!(OBJECTS[ANON_VMA_CHAIN.0 as usize].0, "anon_vma_chain");
    }

    #[test]
    fn same_seed_same_run() {
        for cpus in ["3", "6"] {
            let n = cpus.parse().unwrap();
            let a = run("tune-p7", n, &["parallel=3"], 5);
            let b = run("tune-p7", n, &["parallel=3"], 5);
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{cpus} CPUs");
            let c = run("tune-p7", n, &["parallel=3"], 6);
            assert_ne!(format!("{a:?}"), format!("{c:?}"), "{cpus} CPUs");
        }
    }

    /// Slots spread one per core over both nodes by default, or packed on node 0.
    #[test]
    fn slots_spread_over_the_machine_or_pack_on_node0() {
        let info = ModelInfo {
            nr_cpus: 8,
            nr_nodes: 2,
            cpu_node: vec![0, 0, 0, 0, 1, 1, 1, 1],
            node_managed_pages: vec![1 << 16; 2],
            seed: 1,
        };
        let cpus = |extra: &[&str]| {
            let mut params = vec!["parallel=4".to_string()];
            params.extend(extra.iter().map(|s| s.to_string()));
            let mut w = Kbuild::new(&INFO.params(&params, 1.0).unwrap());
            w.start(&info).unwrap()
        };
        assert_eq!(cpus(&["fork=0"]), vec![0, 2, 4, 6]);
        assert_eq!(cpus(&["placement=1", "fork=0"]), vec![0, 1, 2, 3]);
        // With fork the parents run on the idle CPU beside each slot's, on its node; packed,
        // node 0 has none idle and each slot is its own parent.
        assert_eq!(cpus(&[]), (0..8).collect::<Vec<u32>>());
        assert_eq!(cpus(&["placement=1"]), vec![0, 1, 2, 3]);
        assert_eq!(parent_cpus(&[0, 2, 4, 6], &info.cpu_node), vec![1, 3, 5, 7]);
        assert_eq!(parent_cpus(&[0, 1, 2, 4], &info.cpu_node), vec![3, 1, 2, 5]);
        let mut w = Kbuild::new(&INFO.params(&["mem_node=2".into()], 1.0).unwrap());
        assert!(w.start(&info).is_err(), "node 2 does not exist");
    }

    /// More slots than CPUs: the CPUs share their slots' work and the build still ends.
    #[test]
    fn oversubscribed_slots_share_their_cpu() {
        let o = run("tune-base", 2, &["parallel=5"], 2);
        assert_eq!(metric(&o, "jobs"), 12.0);
        let spread = run("tune-base", 4, &["parallel=5"], 2);
        assert!(metric(&spread, "build_time") < metric(&o, "build_time"));
    }

    /// Two builds in memory cgroups whose limit is below what they write (§1.5): each one's
    /// usage stays within its limit (so within one reclaim batch of it), reclaim runs on the
    /// charging CPUs and frees only page cache: every page the run took comes back, and the
    /// frees during the run are the processes' own plus exactly the reclaimed pages.
    #[test]
    fn builds_in_memcgs_reclaim_page_cache_within_their_limit() {
        let limit_mib = 10.0;
        let extra = ["parallel=4", "cgroups=2", "slab=0", "obj_kib=2048", "memcg_limit_mib=10"];
        let o = run("tune-base", 4, &extra, 1);
        assert_eq!(metric(&o, "jobs"), 12.0);
        assert_eq!(metric(&o, "memcg_overruns"), 0.0);
        let peak = metric(&o, "memcg_peak_mib");
        let batch_mib = crate::workload::kswapd::SWAP_CLUSTER_MAX as f64 / 256.0;
        assert!(peak <= limit_mib + batch_mib, "{peak} MiB");
        // 12 jobs of 2 MiB of objects: 24 MiB written by two cgroups limited to 10 MiB each.
        let (passes, reclaimed) = (metric(&o, "memcg_reclaim"), metric(&o, "memcg_reclaimed"));
        assert!(passes > 0.0 && reclaimed >= 24.0 * 256.0 - 2.0 * limit_mib * 256.0, "{reclaimed}");
        assert!(reclaimed <= passes * 32.0);
        let cache = metric(&o, "page_cache_pages");
        assert_eq!(o.ops.allocs as f64 - (cache - reclaimed), o.ops.frees as f64);
        assert!(metric(&o, "build_time_max") >= metric(&o, "build_time"));
        // The same run without a limit reclaims nothing.
        let free = run("tune-base", 4, &extra[..4], 1);
        assert_eq!(metric(&free, "memcg_reclaim"), 0.0);
        assert_eq!(free.ops.allocs as f64 - cache, free.ops.frees as f64);
    }

    /// `cgroups` needs a job and a slot per build.
    #[test]
    fn more_cgroups_than_slots_is_an_error() {
        let info = ModelInfo {
            nr_cpus: 4,
            nr_nodes: 1,
            cpu_node: vec![0; 4],
            node_managed_pages: vec![1 << 16],
            seed: 1,
        };
        let p = INFO.params(&["parallel=2".into(), "cgroups=3".into()], 1.0).unwrap();
        assert!(Kbuild::new(&p).start(&info).is_err());
    }

    /// Seed 001 patch 1: an exit's order-0 burst followed by the PGD's order-1 free drains the
    /// whole pageset on 6.6 (free_high), and no longer does once two consecutive high-order
    /// frees are required.
    #[test]
    fn exit_bursts_trigger_free_high_on_base_but_not_after_patch1() {
        // Jobs large enough to overflow the small machine's pageset (high 1896 pages).
        let big = ["parallel=2", "jobs=6", "job_mib=12"];
        let base = run("tune-base", 2, &big, 4);
        let p1 = run("tune-p1", 2, &big, 4);
        let (b, p) =
            (base.events.get(Counter::DrainFreeHigh), p1.events.get(Counter::DrainFreeHigh));
        assert!(b > 0, "base drains on exit");
        assert!(p < b / 4, "patch 1: {p} vs base {b}");
    }

    /// Seed 001's machine size: 2 × 112 CPUs, 2 × 256 GiB, a 105 MiB LLC per socket, every
    /// preset of the table. Slow (minutes, release build):
    /// `cargo test --release -p pagealloc-lab kbuild_full_size -- --ignored --nocapture`.
    /// `KBUILD_PRESETS=tune-base,tune-p7` narrows the presets; `KBUILD_PARAMS=jobs=100,…`
    /// overrides parameters.
    #[test]
    #[ignore]
    fn kbuild_full_size_seed001() {
        let presets = std::env::var("KBUILD_PRESETS").unwrap_or_else(|_| {
            "tune-base,tune-p1,tune-p3,tune-p5,tune-p7,tune-p9,tune-p10".into()
        });
        let params: Vec<String> = std::env::var("KBUILD_PARAMS")
            .map(|s| s.split(',').filter(|x| !x.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        for preset in presets.split(',') {
            println!("kbuild {preset} {params:?}");
            let setup = crate::workload::bigtest::numa_setup(2, 112, 256, 105 << 10, preset, 1);
            crate::workload::bigtest::run_and_print("kbuild", &params, setup);
        }
    }
}
