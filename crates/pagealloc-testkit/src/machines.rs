//! Memory-map shapes that exercise the allocator's corners: every zone type, holes, unaligned
//! edges, several nodes, CMA and ZONE_MOVABLE. Small enough that a validator pass after every
//! operation stays cheap.

use pagealloc::{MemoryMap, NodeId, Pfn};

const MIB: u64 = 1 << 20;

/// A named shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One node, 2 CPUs: DMA with a hole and unaligned edges, DMA32 and a little Normal.
    Zoned,
    /// Two nodes of 2 CPUs each, Normal memory only.
    TwoNodes,
    /// One node with a CMA area and a ZONE_MOVABLE range.
    CmaMovable,
    /// A single 8 MiB zone: tight memory, where watermarks and reserves decide.
    Tiny,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 4] = [Shape::Zoned, Shape::TwoNodes, Shape::CmaMovable, Shape::Tiny];

    /// Build the memory map.
    pub fn map(self) -> MemoryMap {
        let mut m = MemoryMap::new();
        let ok = "shape ranges are valid";
        match self {
            Shape::Zoned => {
                m.add_range(NodeId(0), 0x1800..0x9f800).expect(ok);
                m.add_range(NodeId(0), MIB..(6 * MIB)).expect(ok);
                m.add_range(NodeId(0), (16 * MIB)..(24 * MIB + 0x3000)).expect(ok);
                m.add_range(NodeId(0), (4096 * MIB)..(4100 * MIB)).expect(ok);
                m.set_cpus(NodeId(0), 2).expect(ok);
            }
            Shape::TwoNodes => {
                m.add_range(NodeId(0), (4096 * MIB)..(4104 * MIB)).expect(ok);
                m.add_range(NodeId(1), (4104 * MIB)..(4112 * MIB)).expect(ok);
                m.set_cpus(NodeId(0), 2).expect(ok).set_cpus(NodeId(1), 2).expect(ok);
            }
            Shape::CmaMovable => {
                m.add_range(NodeId(0), (16 * MIB)..(28 * MIB)).expect(ok);
                m.add_movable_range(NodeId(0), (4096 * MIB)..(4100 * MIB)).expect(ok);
                m.add_cma_range(Pfn(4096 + 1024)..Pfn(4096 + 2048)).expect(ok);
                m.set_cpus(NodeId(0), 2).expect(ok);
            }
            Shape::Tiny => {
                m.add_range(NodeId(0), (4096 * MIB)..(4104 * MIB)).expect(ok);
                m.set_cpus(NodeId(0), 1).expect(ok);
            }
        }
        m
    }
}
