//! Bytes to a machine, a preset and an op program, and the checked run of them: the body of
//! the fuzz target in `fuzz/` and of its smoke test on stable (`tests/fuzz_smoke.rs`), so what
//! CI runs is what the fuzzer runs.
//!
//! Every byte string decodes to a runnable case, so the fuzzer never wastes an input on a
//! parse error: byte 0 picks the machine shape, byte 1 the preset, and each op after that
//! starts with a tag byte (low 5 bits: the kind, weighted like [`Mix`](crate::program::Mix);
//! high 3 bits: the CPU) followed by at most one argument byte. Bytes missing at the end read
//! as zero. A mutation of one byte changes one op, which keeps libFuzzer's mutations local.
//!
//! Kinds 12, 13, 24 and 25 are the page_frag ops (a fragment request; a fragment free; a
//! drain, a second free, a `free_pages` of a page_frag page or a fragment free, by the
//! argument's low 2 bits). They were allocations (12, 13) and frees (24, 25) before the
//! page_frag ops came, so inputs using them decode to something else now. Kind 23 is a
//! compaction (argument: zone in the low 2 bits, mode in the next 2, order in the high 4,
//! above 10 the whole zone); it was a free before compaction came. Every other tag decodes
//! as it did.

use pagealloc::policy::PRESET_NAMES;
use pagealloc::{PageAllocator, Policy, Tunables};

use crate::machines::Shape;
use crate::program::{BadFree, GfpKind, Op};
use crate::runner::{run, Failure, RunOptions, RunStats};

/// Ops decoded from one input at most: longer inputs are cut, so one execution stays short
/// (the validator runs after every op and walks every frame).
pub const MAX_OPS: usize = 256;

/// Orders an allocation op may ask for, indexed by 4 bits of its argument: every order
/// 0..=10, the PCP orders twice as often.
const ORDERS: [u8; 16] = [0, 0, 0, 0, 1, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10];

/// Fragment sizes a page_frag request may ask for, indexed by 4 bits of its argument: zero
/// (allowed: a reference and no bytes), small and MTU-sized ones, a page and just above (which
/// an order-0 fallback page cannot hold), the largest (32 KiB, a whole order-3 page) and one
/// byte more (refused).
const FRAG_SIZES: [u32; 16] =
    [0, 1, 7, 64, 100, 256, 512, 1000, 1500, 2048, 4000, 4096, 4097, 9000, 32768, 32769];

/// Fragment alignments, indexed by the argument's high 4 bits: none (1) most often, powers of
/// two up to a page, and five the cache must refuse — 0, 3, 8192, 2^31 and `u32::MAX` (an
/// alignment above 2^31 used to divide by zero).
const FRAG_ALIGNS: [u32; 16] =
    [1, 1, 1, 1, 2, 8, 64, 256, 1024, 2048, 4096, 0, 3, 8192, 1 << 31, u32::MAX];

/// One decoded input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuzzCase {
    /// The machine.
    pub shape: Shape,
    /// The preset (one of [`PRESET_NAMES`]).
    pub preset: &'static str,
    /// The program.
    pub ops: Vec<Op>,
}

/// Decode `data` (any bytes) into a case.
pub fn decode(data: &[u8]) -> FuzzCase {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let shape = Shape::ALL[usize::from(byte(0)) % Shape::ALL.len()];
    let preset = PRESET_NAMES[usize::from(byte(1)) % PRESET_NAMES.len()];
    let mut ops = Vec::new();
    let mut i = 2;
    while i < data.len() && ops.len() < MAX_OPS {
        let tag = data[i];
        let arg = byte(i + 1);
        let (op, used) = decode_op(tag, arg);
        ops.push(op);
        i += 1 + used;
    }
    FuzzCase { shape, preset, ops }
}

/// One op from its tag byte and the byte after it; returns the op and how many argument bytes
/// it used (0 or 1).
fn decode_op(tag: u8, arg: u8) -> (Op, usize) {
    let cpu = u32::from(tag >> 5);
    match tag & 0x1f {
        0..=11 => {
            let gfp = GfpKind::ALL[usize::from(arg & 0x7) % GfpKind::ALL.len()];
            let order = ORDERS[usize::from(arg >> 4)];
            (Op::Alloc { cpu, gfp, order }, 1)
        }
        12 | 13 => {
            let size = FRAG_SIZES[usize::from(arg & 0xf)];
            (Op::FragAlloc { cpu, size, align: FRAG_ALIGNS[usize::from(arg >> 4)] }, 1)
        }
        14..=22 => (Op::Free { cpu, slot: u32::from(arg) }, 1),
        23 => {
            let (zone, mode, order) = (u16::from(arg & 0x3), (arg >> 2) & 0x3, arg >> 4);
            (Op::Compact { cpu, zone, order, mode }, 1)
        }
        24 => (Op::FragFree { cpu, slot: u32::from(arg) }, 1),
        25 => {
            let slot = u32::from(arg >> 2);
            let op = match arg & 0x3 {
                0 => Op::FragDrain { cpu },
                1 => Op::FragFreeTwice { cpu, slot },
                2 => Op::FragFreePages { cpu, slot },
                _ => Op::FragFree { cpu, slot },
            };
            (op, 1)
        }
        26 | 27 => {
            let kind = BadFree::ALL[usize::from(arg & 0x7) % BadFree::ALL.len()];
            (Op::BadFree { cpu, slot: u32::from(arg >> 3), kind }, 1)
        }
        28 => (Op::Tick { cpu }, 0),
        29 => (Op::DrainAll { cpu }, 0),
        30 => (Op::DrainCpu { cpu, target: u32::from(arg) }, 1),
        _ => (Op::ReclaimActive { zone: u16::from(arg & 0x7f), on: arg & 0x80 != 0 }, 1),
    }
}

/// Build the case's allocator and run its program with every check the runner has: the
/// oracle on every answer, the validator after every op, and at the end every block freed,
/// every pageset drained and every page back.
pub fn run_case(case: &FuzzCase) -> Result<RunStats, Failure> {
    let fail = |what: String| Failure { step: 0, op: None, what };
    let policy = Policy::preset(case.preset)
        .ok_or_else(|| fail(format!("preset {} is not built in", case.preset)))?;
    let pa = PageAllocator::new(case.shape.map(), Tunables::default(), policy)
        .map_err(|e| fail(format!("{:?} does not build: {e}", case.shape)))?;
    let opts = RunOptions { validate_every: 1, free_all_at_end: true };
    run(&pa, &case.ops, opts).map(|(stats, _)| stats)
}

/// Decode and run `data`: what the fuzz target calls for every input.
pub fn run_bytes(data: &[u8]) -> Result<RunStats, Failure> {
    run_case(&decode(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_ops_decode_as_documented() {
        let case = decode(&[5, 1, 0x23, 0xa1, 14 | 0x40, 7, 28, 29 | 0xe0, 30, 3, 31, 0x82]);
        assert_eq!(case.shape, Shape::ALL[1]);
        assert_eq!(case.preset, PRESET_NAMES[1]);
        assert_eq!(
            case.ops,
            [
                Op::Alloc { cpu: 1, gfp: GfpKind::Movable, order: 5 },
                Op::Free { cpu: 2, slot: 7 },
                Op::Tick { cpu: 0 },
                Op::DrainAll { cpu: 7 },
                Op::DrainCpu { cpu: 0, target: 3 },
                Op::ReclaimActive { zone: 2, on: true },
            ]
        );
    }

    #[test]
    fn page_frag_ops_decode_as_documented() {
        let case = decode(&[
            0,
            0,
            12,
            0x00,
            13 | 0x20,
            0xef,
            24,
            9,
            25,
            0x10,
            25,
            0x11,
            25,
            0x12,
            25,
            0x13,
        ]);
        assert_eq!(
            case.ops,
            [
                Op::FragAlloc { cpu: 0, size: 0, align: 1 },
                Op::FragAlloc { cpu: 1, size: 32769, align: 1 << 31 },
                Op::FragFree { cpu: 0, slot: 9 },
                Op::FragDrain { cpu: 0 },
                Op::FragFreeTwice { cpu: 0, slot: 4 },
                Op::FragFreePages { cpu: 0, slot: 4 },
                Op::FragFree { cpu: 0, slot: 4 },
            ]
        );
    }

    #[test]
    fn any_input_decodes_and_long_ones_are_cut() {
        assert_eq!(decode(&[]).ops, []);
        assert_eq!(decode(&[9]).ops, []);
        // A trailing tag without its argument reads the argument as zero.
        assert_eq!(
            decode(&[0, 0, 26]).ops,
            [Op::BadFree { cpu: 0, slot: 0, kind: BadFree::Double }]
        );
        assert_eq!(decode(&[0u8; 4096]).ops.len(), MAX_OPS);
    }
}
