//! The cost profile: what each allocator primitive and each page touch costs in virtual
//! time. Measured on a real machine by `pagealloc calibrate` and shipped as data
//! (`data/cost-default.toml`); never chosen to make a published table come out.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Picoseconds per nanosecond: the model keeps time in integer picoseconds so that sums of
/// small costs neither drift nor depend on float rounding order.
pub const PS_PER_NS: f64 = 1000.0;

/// Costs of the primitives, in nanoseconds, with where they were measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostProfile {
    /// The machine the figures come from (CPU model, CPUs, kernel), as `calibrate` found it.
    pub machine: String,
    /// How they were measured (command, build, repetitions).
    pub method: String,
    /// One allocation call that the CPU's pageset serves, outside any zone lock.
    pub pcp_alloc_ns: f64,
    /// One free call that ends on the CPU's pageset, outside any zone lock.
    pub pcp_free_ns: f64,
    /// The fixed part of one zone-lock hold: taking and releasing the lock uncontended and
    /// the bookkeeping around the list work.
    pub zone_lock_base_ns: f64,
    /// One free-list insertion or removal under the zone lock (merges, splits, refills and
    /// drains are made of these).
    pub zone_list_op_ns: f64,
    /// Moving the lock's cache line to a CPU on another core of the same LLC, paid when the
    /// lock's last holder was another CPU.
    pub lock_handoff_ns: f64,
    /// Writing a whole 4 KiB page that is in the LLC.
    pub page_touch_hot_ns: f64,
    /// Writing a whole 4 KiB page that is not in any cache.
    pub page_touch_cold_ns: f64,
    /// Factor on lock handoffs between LLCs and on list work done by a CPU of another node
    /// than the zone's (a 1-socket machine cannot measure it; see `remote_factor_source`).
    pub remote_factor: f64,
    /// Where `remote_factor` comes from.
    pub remote_factor_source: String,
}

/// The profile shipped with the lab, measured by `pagealloc calibrate` (see the file's header).
const DEFAULT_PROFILE: &str = include_str!("../../data/cost-default.toml");

impl CostProfile {
    /// The shipped profile.
    pub fn default_profile() -> CostProfile {
        toml::from_str(DEFAULT_PROFILE).expect("the shipped cost profile parses (tested)")
    }

    /// Load a profile written by `pagealloc calibrate`.
    pub fn load(path: &Path) -> Result<CostProfile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let p: CostProfile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(0, |s| text[..s.start].matches('\n').count() + 1);
            anyhow::anyhow!("{}:{line}: {}", path.display(), e.message())
        })?;
        p.check().with_context(|| format!("{}", path.display()))?;
        Ok(p)
    }

    /// Every cost must be a finite non-negative number; touching a cold page may not be
    /// cheaper than a hot one; the remote factor is at least 1.
    pub fn check(&self) -> Result<()> {
        let fields = [
            ("pcp_alloc_ns", self.pcp_alloc_ns),
            ("pcp_free_ns", self.pcp_free_ns),
            ("zone_lock_base_ns", self.zone_lock_base_ns),
            ("zone_list_op_ns", self.zone_list_op_ns),
            ("lock_handoff_ns", self.lock_handoff_ns),
            ("page_touch_hot_ns", self.page_touch_hot_ns),
            ("page_touch_cold_ns", self.page_touch_cold_ns),
        ];
        for (name, v) in fields {
            if !v.is_finite() || !(0.0..=1e9).contains(&v) {
                bail!("field `{name}` = {v}: a cost must be a number of nanoseconds in 0..1e9");
            }
        }
        if self.page_touch_cold_ns < self.page_touch_hot_ns {
            bail!("field `page_touch_cold_ns` is below `page_touch_hot_ns`");
        }
        if !(1.0..=100.0).contains(&self.remote_factor) {
            bail!("field `remote_factor` = {}: takes 1..=100", self.remote_factor);
        }
        Ok(())
    }

    /// The same costs in integer picoseconds, as the model charges them.
    pub fn to_ps(&self) -> CostPs {
        let ps = |ns: f64| (ns * PS_PER_NS).round() as u64;
        CostPs {
            pcp_alloc: ps(self.pcp_alloc_ns),
            pcp_free: ps(self.pcp_free_ns),
            lock_base: ps(self.zone_lock_base_ns),
            list_op: ps(self.zone_list_op_ns),
            list_op_remote: ps(self.zone_list_op_ns * self.remote_factor),
            handoff: ps(self.lock_handoff_ns),
            handoff_remote: ps(self.lock_handoff_ns * self.remote_factor),
            touch_hot: ps(self.page_touch_hot_ns),
            touch_cold: ps(self.page_touch_cold_ns),
        }
    }
}

/// [`CostProfile`] in picoseconds, remote variants precomputed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CostPs {
    /// See [`CostProfile::pcp_alloc_ns`].
    pub pcp_alloc: u64,
    /// See [`CostProfile::pcp_free_ns`].
    pub pcp_free: u64,
    /// See [`CostProfile::zone_lock_base_ns`].
    pub lock_base: u64,
    /// See [`CostProfile::zone_list_op_ns`].
    pub list_op: u64,
    /// `list_op` for a CPU of another node than the zone's.
    pub list_op_remote: u64,
    /// See [`CostProfile::lock_handoff_ns`].
    pub handoff: u64,
    /// `handoff` between LLCs.
    pub handoff_remote: u64,
    /// See [`CostProfile::page_touch_hot_ns`].
    pub touch_hot: u64,
    /// See [`CostProfile::page_touch_cold_ns`].
    pub touch_cold: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_profile_parses_and_passes_its_checks() {
        let p = CostProfile::default_profile();
        p.check().unwrap();
        assert!(!p.machine.is_empty() && !p.method.is_empty());
        let ps = p.to_ps();
        assert!(ps.touch_cold >= ps.touch_hot);
        assert!(ps.list_op_remote >= ps.list_op);
    }

    #[test]
    fn bad_profiles_are_refused_naming_the_field() {
        let mut p = CostProfile::default_profile();
        p.zone_list_op_ns = f64::NAN;
        assert!(p.check().unwrap_err().to_string().contains("zone_list_op_ns"));
        let mut p = CostProfile::default_profile();
        p.page_touch_cold_ns = 0.0;
        assert!(p.check().unwrap_err().to_string().contains("page_touch_cold_ns"));
        let mut p = CostProfile::default_profile();
        p.remote_factor = 0.5;
        assert!(p.check().unwrap_err().to_string().contains("remote_factor"));
    }
}
