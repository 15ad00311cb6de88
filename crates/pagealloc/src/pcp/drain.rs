//! Pages leaving a pageset over time and on demand: `decay_pcp_high` and the remote-node
//! `expire` drain behind [`PageAllocator::tick`], `drain_pages_zone`, `drain_pages` and
//! `drain_all_pages` (docs/kernel-reference.md §5, docs/preset-history.md §3.7, §3.9).

use crate::memory_map::CacheInfo;
use crate::sync::Ordering::Relaxed;
use crate::sync::RawLock;

use crate::events::EventSink;
use crate::pcp::free::Flush;
use crate::pcp::remote::PendingTo;
use crate::pcp::{PcpSlot, PerCpuPages, PCPF_FREE_HIGH_BATCH};
use crate::policy::{BulkFreeCallers, HighDecay};
use crate::stats::{Counter, DrainReason};
use crate::types::{CpuId, ZoneIdx};
use crate::zone::Zone;
use crate::{Cpu, PageAllocator};

/// Ticks a remote-node pageset stays untouched before it loses a batch (kernel: 3 vmstat
/// intervals).
const EXPIRE_TICKS: u8 = 3;

impl PerCpuPages {
    /// Lower `high` towards `high_min` (kernel `decay_pcp_high`'s first half). Returns how
    /// many pages are now above `high` and must be drained, and whether high can decay more.
    pub(crate) fn decay_high(&mut self, decay: HighDecay, s: u8) -> (i32, bool) {
        let floor = self.count - (self.batch << s.min(20));
        let mut more = false;
        if decay != HighDecay::Off && self.high > self.high_min {
            let lowered = match decay {
                HighDecay::Off => self.high,
                HighDecay::FourFifths => self.high * 4 / 5,
                HighDecay::SevenEighths => self.high - self.high / 8,
                HighDecay::CountMinLimited => self.high - self.count_min.min(self.high / 5),
            };
            self.set_high(floor.max(lowered).max(self.high_min));
            more = self.high > self.high_min;
        }
        (self.count - self.high, more)
    }
}

impl<E: EventSink, L: RawLock> PageAllocator<E, L> {
    /// One vmstat interval on `cpu` (kernel `refresh_cpu_vm_stats` with pagesets): decay each
    /// of its pagesets' `high` every `decay_period_ticks` ticks, and drain a batch from a
    /// pageset of a remote node's zone that has sat idle for three ticks. Returns the work
    /// left (the kernel re-arms its per-CPU worker while this is non-zero). A CPU handle of
    /// another allocator does nothing.
    pub fn tick(&self, cpu: Cpu) -> u32 {
        let (Some(state), true) = (self.cpu_ticks.get(cpu.id.index()), self.owns(cpu)) else {
            return 0;
        };
        let tick = state.fetch_add(1, Relaxed) + 1;
        let decay_now = tick % u64::from(self.tunables.decay_period_ticks.max(1)) == 0;
        let s = self.tunables.pcp_batch_scale_max;
        let mut todo = 0;
        for zone in self.zones.iter().filter(|z| z.is_populated()) {
            let slot = &zone.pcp[cpu.id.index()];
            let mut pcp = slot.pcp.lock();
            if self.policy.remote_free {
                // A CPU that has stopped freeing still sends its pending blocks home, and an
                // owner that has stopped allocating still takes its blocks back.
                self.remote_pending_flush(cpu, zone, slot, &mut pcp, PendingTo::Owner);
                self.remote_free_collect(cpu, zone, slot, &mut pcp);
            }
            if core::mem::take(&mut pcp.active) {
                // The kernel re-arms expire when this CPU folds non-zero counter deltas for
                // the zone; using the pageset since the last tick is our stand-in for that.
                pcp.expire = EXPIRE_TICKS;
            }
            if decay_now && self.policy.high_decay != HighDecay::Off {
                let (to_drain, more) = pcp.decay_high(self.policy.high_decay, s);
                todo += u32::from(more);
                if to_drain > 0 {
                    self.decay_drain(cpu, zone, slot, &mut pcp, to_drain);
                    todo += 1;
                }
                if self.policy.high_decay == HighDecay::CountMinLimited {
                    pcp.count_min = pcp.count;
                }
            }
            if pcp.expire == 0 || pcp.count == 0 {
                continue;
            }
            if zone.node == cpu.node {
                pcp.expire = 0;
                continue;
            }
            pcp.expire -= 1;
            if pcp.expire > 0 {
                todo += 1;
                continue;
            }
            // drain_zone_pages: an idle remote pageset loses one batch.
            let n = pcp.batch.min(pcp.count);
            self.free_pcppages_bulk(cpu.id, zone, slot, &mut pcp, n, 0, DrainReason::Remote);
            todo += 1;
        }
        todo
    }

    /// Free the `n` pages a decay of `high` left above it: in one bulk free, or with a
    /// batched [`BulkFreeCallers`] form in chunks of `batch` (every posted version chunked the
    /// decay the same way, freeing the same pages).
    fn decay_drain(
        &self,
        cpu: Cpu,
        zone: &Zone<L>,
        slot: &PcpSlot<L>,
        pcp: &mut PerCpuPages,
        n: i32,
    ) {
        let form = if self.policy.bulk_free_callers.chunks() {
            BulkFreeCallers::Batched
        } else {
            BulkFreeCallers::Whole
        };
        let flush =
            Flush { start: 0, reason: DrainReason::Decay, high: pcp.high, free_high: false };
        self.free_pcppages_by(cpu.id, zone, slot, pcp, n, form, flush);
    }

    /// Empty `cpu`'s pageset for `zone` (kernel `drain_pages_zone`): in chunks of at most
    /// `batch << S` pages per lock hold when the policy says so, else in one go. May run on any
    /// CPU (the kernel drains remote pagesets from the caller since 6.0). An unknown zone or
    /// CPU, or a `caller` handle of another allocator, does nothing.
    pub fn drain_pages_zone(&self, caller: Cpu, cpu: CpuId, zone: ZoneIdx) {
        let known = cpu.index() < self.cpu_ticks.len() && self.owns(caller);
        let (Some(z), true) = (self.zones.get(zone.index()), known) else {
            return;
        };
        self.drain_slot(caller, z, &z.pcp[cpu.index()]);
    }

    fn drain_slot(&self, caller: Cpu, zone: &Zone<L>, slot: &PcpSlot<L>) {
        let s = self.tunables.pcp_batch_scale_max;
        loop {
            let mut pcp = slot.pcp.lock();
            if self.policy.remote_free {
                // A drain empties the pending chain and the remote-free list too (both go
                // through the pageset): no page stays waiting once every pageset is drained.
                self.remote_pending_flush(caller, zone, slot, &mut pcp, PendingTo::Here);
                self.remote_free_collect(caller, zone, slot, &mut pcp);
            }
            let n = if self.policy.drain_pages_chunked {
                // v1/v2 of the batched-callers series chunked by batch, not batch << S.
                let shift = match self.policy.bulk_free_callers {
                    BulkFreeCallers::BatchedRecheckHighBatchDrains => 0,
                    _ => s.min(20),
                };
                pcp.count.min(pcp.batch << shift)
            } else {
                pcp.count
            };
            if n <= 0 {
                return;
            }
            self.free_pcppages_bulk(caller.id, zone, slot, &mut pcp, n, 0, DrainReason::Explicit);
        }
    }

    /// Empty every pageset of `cpu` (kernel `drain_pages`). An unknown CPU, or a `caller`
    /// handle of another allocator, does nothing.
    pub fn drain_pages(&self, caller: Cpu, cpu: CpuId) {
        if cpu.index() >= self.cpu_ticks.len() || !self.owns(caller) {
            return;
        }
        for zone in self.zones.iter() {
            self.drain_slot(caller, zone, &zone.pcp[cpu.index()]);
        }
    }

    /// Empty the pagesets of every CPU for `zone`, or for all zones (kernel
    /// `drain_all_pages`). Drains of all zones are serialised: one that finds another running
    /// returns at once, as the kernel's does; a single-zone drain waits its turn. A `caller`
    /// handle of another allocator does nothing.
    pub fn drain_all_pages(&self, caller: Cpu, zone: Option<ZoneIdx>) {
        if !self.owns(caller) {
            return;
        }
        let _serialised = match zone {
            Some(_) => self.drain_mutex.lock(),
            None => match self.drain_mutex.try_lock() {
                Some(g) => g,
                None => return,
            },
        };
        self.counters.add_shared(Counter::DrainAll, 1);
        let zones = self.zones.iter().filter(|z| zone.is_none_or(|i| z.idx == i));
        for z in zones {
            for slot in z.pcp.iter() {
                // Only pagesets that hold something (read racily, as the kernel's cpumask).
                if slot.held_pages() > 0 {
                    self.drain_slot(caller, z, slot);
                }
            }
        }
    }

    /// Tell the allocator what `cpu`'s caches look like: re-evaluates FREE_HIGH_BATCH on each
    /// of its pagesets (kernel: the cacheinfo CPU-online hook). Not re-evaluated when batch
    /// changes later, as in the kernel.
    pub fn set_cpu_cache(&self, cpu: CpuId, cache: CacheInfo) {
        if cpu.index() >= self.cpu_ticks.len() {
            return;
        }
        for zone in self.zones.iter().filter(|z| z.is_populated()) {
            let mut pcp = zone.pcp[cpu.index()].pcp.lock();
            let on = self.policy.free_high_batch.flag(
                cache.data_slices_bytes,
                cache.llc_slice_bytes,
                pcp.batch.max(0) as u32,
            );
            if on {
                pcp.flags |= PCPF_FREE_HIGH_BATCH;
            } else {
                pcp.flags &= !PCPF_FREE_HIGH_BATCH;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::PcpSizes;

    fn pcp(count: i32, high: i32) -> PerCpuPages {
        let mut p = PerCpuPages::new();
        p.update(PcpSizes { batch: 63, high_min: 3132, high_max: 20480 }, 5, true);
        p.count = count;
        p.set_high(high);
        p
    }

    /// docs/kernel-reference.md §5.5: an empty pageset decays from 20480 to 3132 in 15 ticks.
    #[test]
    fn decay_of_an_empty_pageset_takes_fifteen_ticks() {
        let mut p = pcp(0, 20480);
        let mut highs = std::vec::Vec::new();
        while p.high > p.high_min {
            let (to_drain, _) = p.decay_high(HighDecay::SevenEighths, 5);
            assert!(to_drain <= 0);
            highs.push(p.high);
        }
        assert_eq!(
            highs,
            [
                17920, 15680, 13720, 12005, 10505, 9192, 8043, 7038, 6159, 5390, 4717, 4128, 3612,
                3161, 3132
            ]
        );
    }

    /// docs/kernel-reference.md §5.5: decay after a burst of frees left 20097 pages on the pageset.
    #[test]
    fn decay_after_a_free_burst_follows_the_reference_trace() {
        let mut p = pcp(20097, 20480);
        let (mut highs, mut drained, mut more) =
            (std::vec::Vec::new(), std::vec::Vec::new(), std::vec::Vec::new());
        for _ in 0..16 {
            let (to_drain, m) = p.decay_high(HighDecay::SevenEighths, 5);
            highs.push(p.high);
            let d = to_drain.max(0);
            drained.push(d);
            more.push(u32::from(m) + u32::from(d > 0));
            p.count -= d;
        }
        assert_eq!(
            highs[..15],
            [
                18081, 16065, 14057, 12300, 10763, 9418, 8241, 7211, 6310, 5522, 4832, 4228, 3700,
                3238, 3132
            ]
        );
        assert_eq!(
            drained[..15],
            [2016, 2016, 2008, 1757, 1537, 1345, 1177, 1030, 901, 788, 690, 604, 528, 462, 106]
        );
        let mut want = [2u32; 16];
        want[14] = 1;
        want[15] = 0;
        assert_eq!(more, want);
    }

    #[test]
    fn decay_variants() {
        let mut p = pcp(0, 10000);
        p.decay_high(HighDecay::FourFifths, 5);
        assert_eq!(p.high, 8000);
        // count_min limits how much may decay: a pageset emptied during the interval keeps high.
        let mut p = pcp(500, 10000);
        p.count_min = 0;
        p.decay_high(HighDecay::CountMinLimited, 5);
        assert_eq!(p.high, 10000);
        p.count_min = 400;
        p.decay_high(HighDecay::CountMinLimited, 5);
        assert_eq!(p.high, 9600);
        let mut p = pcp(0, 10000);
        assert_eq!(p.decay_high(HighDecay::Off, 5), (-10000, false));
        assert_eq!(p.high, 10000);
    }
}
