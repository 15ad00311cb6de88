//! [`Tunables`]: the kernel's sysctls and its one Kconfig value the mechanisms read.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Settings a user or administrator chooses: the kernel's sysctls and Kconfig value that the
/// seeds' mechanisms read. Independent of [`Policy`] (see the module docs for why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Tunables {
    /// `vm.percpu_pagelist_high_fraction`: 0 (default) sizes high from the LOW watermark (and
    /// lets auto-tuning run up to managed / 8); f ≥ 8 sizes high from managed / f split over
    /// the node's CPUs and turns auto-tuning off. 1..=7 is refused, as by the sysctl. Ignored by
    /// [`PcpHigh::SixTimesBatch`].
    pub percpu_pagelist_high_fraction: u32,
    /// S = `CONFIG_PCP_BATCH_SCALE_MAX`, 0..=6, default 5. Bounds `batch << S` (2016 pages for
    /// batch 63): the capped free_factor and free_count, alloc_factor, free_high drains and
    /// their high reduction, the decay floor `count − (batch << S)`, chunked drains. The
    /// posted v1 series (tune-p*) had the constant 5; uncapped forms ignore it.
    pub pcp_batch_scale_max: u8,
    /// Ticks between two decay passes over a CPU's pagesets, ≥ 1 (default 1). The kernel runs
    /// decay on each vmstat refresh (vm.stat_interval, 1 s), so with one tick per simulated
    /// second the default matches it.
    pub decay_period_ticks: u32,
    /// `vm.min_free_kbytes`, KiB, 0..=i32::MAX. `None`: the kernel's boot value (square-root
    /// rule clamped to 128..=262144 KiB, raised to the THP recommendation).
    pub min_free_kbytes: Option<u64>,
    /// `vm.watermark_scale_factor`, in 1/10000 of a zone's managed pages: 1..=3000, default 10.
    pub watermark_scale_factor: u64,
    /// `vm.watermark_boost_factor`, in 1/10000 of the HIGH watermark: default 15000, 0
    /// disables boosting; ignored unless [`Policy::watermark_boost`].
    pub watermark_boost_factor: u64,
    /// `vm.lowmem_reserve_ratio`, indexed by `ZoneType::index` (DMA, DMA32, Normal, Movable):
    /// a zone keeps 1/ratio of the higher zones' managed pages from allocations that could
    /// have used them; 0 = no reserve. Default `[256, 256, 32, 0]`; each ≤ i32::MAX.
    pub lowmem_reserve_ratio: [u64; NR_ZONE_TYPES],
    /// `vm.compaction_proactiveness`, 0..=100, default 20: kcompactd compacts a node whose
    /// fragmentation score is above `100 - p + 10` down to `100 - p`; 0 turns proactive
    /// compaction off.
    pub compaction_proactiveness: u32,
    /// `vm.extfrag_threshold`, 0..=1000, default 500: a costly-order compaction is skipped
    /// when the zone's fragmentation index is at or below it (the failure is lack of memory).
    pub extfrag_threshold: u32,
}

/// Largest value of the kernel's `int` sysctls.
pub(super) const INT_MAX: i64 = i32::MAX as i64;

impl Tunables {
    /// These tunables with `change` applied (`Tunables` is `#[non_exhaustive]`: start from
    /// [`Tunables::default`] and set what differs).
    ///
    /// ```
    /// use pagealloc::Tunables;
    ///
    /// let t = Tunables::default().with(|t| t.min_free_kbytes = Some(65_536));
    /// assert_eq!(t.min_free_kbytes, Some(65_536));
    /// assert_eq!(t.watermark_scale_factor, Tunables::default().watermark_scale_factor);
    /// ```
    #[must_use]
    pub fn with(mut self, change: impl FnOnce(&mut Tunables)) -> Tunables {
        change(&mut self);
        self
    }

    /// Every tunable key, in field order.
    pub const KEYS: &'static [&'static str] = &[
        "percpu_pagelist_high_fraction",
        "pcp_batch_scale_max",
        "decay_period_ticks",
        "min_free_kbytes",
        "watermark_scale_factor",
        "watermark_boost_factor",
        "lowmem_reserve_ratio",
        "compaction_proactiveness",
        "extfrag_threshold",
    ];

    /// The kernel's defaults (docs/kernel-reference.md §2).
    pub const DEFAULT: Tunables = Tunables {
        percpu_pagelist_high_fraction: 0,
        pcp_batch_scale_max: 5,
        decay_period_ticks: 1,
        min_free_kbytes: None,
        watermark_scale_factor: 10,
        watermark_boost_factor: 15_000,
        lowmem_reserve_ratio: [256, 256, 32, 0],
        compaction_proactiveness: 20,
        extfrag_threshold: 500,
    };

    /// What [`Tunables::set`] accepts for `key`, or `None` if there is no such tunable.
    pub fn accepted(key: &str) -> Option<Accepted> {
        Some(match key {
            "percpu_pagelist_high_fraction" => Accepted::ZeroOrInt { min: 8, max: INT_MAX },
            "pcp_batch_scale_max" => Accepted::Int { min: 0, max: 6 },
            "decay_period_ticks" => Accepted::Int { min: 1, max: u32::MAX as i64 },
            "min_free_kbytes" => Accepted::DefaultOrInt { min: 0, max: INT_MAX },
            "watermark_scale_factor" => Accepted::Int { min: 1, max: 3000 },
            "watermark_boost_factor" => Accepted::Int { min: 0, max: INT_MAX },
            "lowmem_reserve_ratio" => Accepted::IntList { len: NR_ZONE_TYPES, max: INT_MAX },
            "compaction_proactiveness" => Accepted::Int { min: 0, max: 100 },
            "extfrag_threshold" => Accepted::Int { min: 0, max: 1000 },
            _ => return None,
        })
    }

    /// The value of tunable `key`, or `None` if there is no such tunable. `min_free_kbytes`
    /// reads `"default"` when unset.
    pub fn get(&self, key: &str) -> Option<SwitchValue> {
        Some(match self.raw(key)? {
            RawTunable::Int(n) => SwitchValue::Int(n),
            RawTunable::Default => SwitchValue::Str(DEFAULT_WORD.to_owned()),
            RawTunable::List(v) => SwitchValue::List(v.to_vec()),
        })
    }

    /// [`get`](Self::get) without the heap: what `validate` reads, so that building an
    /// allocator allocates nothing.
    fn raw(&self, key: &str) -> Option<RawTunable> {
        Some(RawTunable::Int(match key {
            "percpu_pagelist_high_fraction" => self.percpu_pagelist_high_fraction.into(),
            "pcp_batch_scale_max" => self.pcp_batch_scale_max.into(),
            "decay_period_ticks" => self.decay_period_ticks.into(),
            "min_free_kbytes" => match self.min_free_kbytes {
                Some(kb) => saturate_i64(kb),
                None => return Some(RawTunable::Default),
            },
            "watermark_scale_factor" => saturate_i64(self.watermark_scale_factor),
            "watermark_boost_factor" => saturate_i64(self.watermark_boost_factor),
            "lowmem_reserve_ratio" => {
                return Some(RawTunable::List(self.lowmem_reserve_ratio.map(saturate_i64)))
            }
            "compaction_proactiveness" => self.compaction_proactiveness.into(),
            "extfrag_threshold" => self.extfrag_threshold.into(),
            _ => return None,
        }))
    }

    /// Every tunable with its value, in [`Tunables::KEYS`] order.
    pub fn values(&self) -> impl Iterator<Item = (&'static str, SwitchValue)> + '_ {
        Tunables::KEYS.iter().filter_map(move |&k| self.get(k).map(|v| (k, v)))
    }

    /// Set tunable `key` from an integer ([`SwitchValue::Int`]); `min_free_kbytes` also takes
    /// `"default"`, `lowmem_reserve_ratio` a list of one ratio per zone type, where values below
    /// 1 mean 0 as the sysctl stores them.
    ///
    /// # Errors
    /// [`PolicyError::UnknownKey`], [`PolicyError::WrongKind`] or [`PolicyError::OutOfRange`];
    /// the tunables are then unchanged. A successful set leaves [`Tunables::validate`] passing
    /// if it passed before.
    pub fn set(&mut self, key: &str, value: SwitchValue) -> Result<(), PolicyError> {
        let Some((&key, accepted)) =
            Tunables::KEYS.iter().find(|&&k| k == key).zip(Tunables::accepted(key))
        else {
            return Err(PolicyError::UnknownKey { key: key.to_owned(), known: KeySet::Tunables });
        };
        let out_of_range = || PolicyError::OutOfRange { key, got: value.clone(), accepted };
        let wrong_kind = || PolicyError::WrongKind { key, got: value.kind(), accepted };
        match (key, &value) {
            ("min_free_kbytes", SwitchValue::Str(s)) if s == DEFAULT_WORD => {
                self.min_free_kbytes = None;
            }
            ("lowmem_reserve_ratio", SwitchValue::List(v)) => {
                if v.len() != NR_ZONE_TYPES || v.iter().any(|&r| r > INT_MAX) {
                    return Err(out_of_range());
                }
                for (slot, &r) in self.lowmem_reserve_ratio.iter_mut().zip(v) {
                    *slot = if r < 1 { 0 } else { r as u64 };
                }
            }
            ("lowmem_reserve_ratio", _) => return Err(wrong_kind()),
            (_, SwitchValue::Int(n)) => {
                if !accepted.admits(*n) {
                    return Err(out_of_range());
                }
                // admits() bounded n to the field's range, so none of these casts truncate.
                let n = *n;
                match key {
                    "percpu_pagelist_high_fraction" => {
                        self.percpu_pagelist_high_fraction = n as u32
                    }
                    "pcp_batch_scale_max" => self.pcp_batch_scale_max = n as u8,
                    "decay_period_ticks" => self.decay_period_ticks = n as u32,
                    "min_free_kbytes" => self.min_free_kbytes = Some(n as u64),
                    "watermark_scale_factor" => self.watermark_scale_factor = n as u64,
                    "compaction_proactiveness" => self.compaction_proactiveness = n as u32,
                    "extfrag_threshold" => self.extfrag_threshold = n as u32,
                    _ => self.watermark_boost_factor = n as u64,
                }
            }
            ("min_free_kbytes", SwitchValue::Str(_)) => return Err(out_of_range()),
            _ => return Err(wrong_kind()),
        }
        Ok(())
    }

    /// Check every field against the range its sysctl (or Kconfig) accepts.
    ///
    /// # Errors
    /// [`PolicyError::OutOfRange`] naming the first field (in key order) that is out of range.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for &key in Tunables::KEYS {
            let (Some(accepted), Some(value)) = (Tunables::accepted(key), self.raw(key)) else {
                continue;
            };
            let ok = match value {
                RawTunable::Int(n) => accepted.admits(n),
                RawTunable::List(v) => v.iter().all(|&r| (0..=INT_MAX).contains(&r)),
                RawTunable::Default => true,
            };
            if !ok {
                let got = self.get(key).expect("a key of KEYS");
                return Err(PolicyError::OutOfRange { key, got, accepted });
            }
        }
        Ok(())
    }
}

/// A tunable's value as the fields hold it ([`SwitchValue`] without the heap).
pub(super) enum RawTunable {
    Int(i64),
    /// `min_free_kbytes` unset: the kernel computes it.
    Default,
    List([i64; NR_ZONE_TYPES]),
}

impl Default for Tunables {
    fn default() -> Tunables {
        Tunables::DEFAULT
    }
}

/// The word that stands for "kernel default" where a tunable is optional.
pub(super) const DEFAULT_WORD: &str = "default";

/// `v` as an i64, saturating (a u64 above i64::MAX is out of every range anyway).
pub(super) fn saturate_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Set a switch or a tunable, whichever has the name `key` (for preset files that mix both).
///
/// # Errors
/// As [`Policy::set`] and [`Tunables::set`]; an unknown key reports both key sets.
pub fn set_key(
    policy: &mut Policy,
    tunables: &mut Tunables,
    key: &str,
    value: SwitchValue,
) -> Result<(), PolicyError> {
    if Policy::KEYS.contains(&key) {
        policy.set(key, value)
    } else if Tunables::KEYS.contains(&key) {
        tunables.set(key, value)
    } else {
        Err(PolicyError::UnknownKey { key: key.to_owned(), known: KeySet::Any })
    }
}
