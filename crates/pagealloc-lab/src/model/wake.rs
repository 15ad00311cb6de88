//! This host's wake-up of a parked thread, charged in the model of this host.
//!
//! A machine file `pagealloc calibrate` wrote gives two figures (none of the built-in machines
//! has them, and then nothing here changes a run): `wake_idle_ns`, how long a thread blocked
//! on an idle CPU takes from the wake to running, and `wake_call_ns`, what the waking thread
//! pays for the call. Each may carry the spread calibrate measured (`quantiles`); the model
//! then draws every wake from it, from a random stream of its own, so the same seed gives the
//! same draws and the workload's own random choices are not disturbed. A constant median
//! would put a workload that parks often into one regime for the whole run where the real
//! runner's wakes, tens of per cent apart, move it between regimes.

use pagealloc_testkit::rng::Rng;

use super::{State, VCpu};
use crate::machine::hierarchy::{Hierarchy, Level};

/// One wake figure, ps: a constant, or drawn from a measured distribution.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct WakeDelay {
    /// The median (the figure's value); 0 when the machine does not give it.
    median: u64,
    /// The measured quantiles, the i-th (from 1) of n the i/(n+1) quantile; empty: charge the
    /// median on every wake.
    quantiles: Vec<u64>,
}

impl WakeDelay {
    /// The figure `level` of `h`, in ps (0 when the machine does not give it).
    fn of(h: &Hierarchy, level: Level) -> WakeDelay {
        let ps = |ns: f64| (ns * 1000.0).round() as u64;
        h.get(level).map_or_else(WakeDelay::default, |f| WakeDelay {
            median: ps(f.value),
            quantiles: f.quantiles.iter().map(|&q| ps(q)).collect(),
        })
    }

    /// Is it zero on every wake?
    fn is_zero(&self) -> bool {
        self.median == 0 && self.quantiles.iter().all(|&q| q == 0)
    }

    /// One wake's delay. With quantiles: the inverse of the piecewise-linear distribution
    /// through them at a uniform draw, held at the outermost quantile beyond it (so a draw
    /// never leaves the measured 1/(n+1)..n/(n+1) range: the extreme tail, which a few
    /// thousand samples do not pin down, is left out, and the mean is slightly under the
    /// sample's where its upper tail is long). Without: the median, and no draw is made.
    fn draw(&self, rng: &mut Rng) -> u64 {
        let q = &self.quantiles;
        if q.is_empty() {
            return self.median;
        }
        let n = q.len();
        // u ∈ [0, 1) with 53 bits; its position on the quantiles' scale, where the i-th
        // (from 0) sits at (i + 1) / (n + 1).
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let pos = (u * (n + 1) as f64 - 1.0).clamp(0.0, (n - 1) as f64);
        let lo = pos.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        let (a, b) = (q[lo] as f64, q[hi] as f64);
        (a + (b - a) * (pos - lo as f64)).round() as u64
    }
}

/// The host's wake figures as the model charges them.
#[derive(Clone, Debug, Default)]
pub(super) struct WakeCosts {
    /// A woken blocked CPU runs no sooner than this after the hand-over.
    idle: WakeDelay,
    /// The waking CPU pays this for each blocked CPU it wakes.
    call: WakeDelay,
}

impl WakeCosts {
    /// The machine's wake figures (both zero when it gives none).
    pub(super) fn of(h: &Hierarchy) -> WakeCosts {
        WakeCosts {
            idle: WakeDelay::of(h, Level::WakeIdle),
            call: WakeDelay::of(h, Level::WakeCall),
        }
    }

    /// Does the machine charge wakes at all? Without figures, nothing here runs.
    pub(super) fn charged(&self) -> bool {
        !(self.idle.is_zero() && self.call.is_zero())
    }

    /// Charge CPU `c` the call for each CPU its step woke from a block, and return when the
    /// wakes were handed over (`None`: the machine charges no wake). The real runner hands
    /// a step's wakes over when the step's calls are done and before it spins for the work
    /// the step asked for, so the hand-over starts at `c`'s clock less this step's work (its
    /// work counter was `worked_before` when the step began).
    pub(super) fn hand_over(
        &self,
        cpus: &mut [VCpu],
        c: u32,
        worked_before: u64,
        wakes: &[(u32, u64)],
        rng: &mut Rng,
    ) -> Option<u64> {
        if !self.charged() {
            return None;
        }
        let mut parked: Vec<u32> = wakes
            .iter()
            .map(|w| w.0)
            .filter(|&t| cpus.get(t as usize).is_some_and(|v| v.state == State::Blocked))
            .collect();
        parked.sort_unstable();
        parked.dedup();
        let v = &mut cpus[c as usize];
        let handed_over = v.now - (v.worked - worked_before);
        let calls: u64 = parked.iter().map(|_| self.call.draw(rng)).sum();
        v.now = v.now.saturating_add(calls);
        v.busy = v.busy.saturating_add(calls);
        Some(handed_over)
    }

    /// The earliest a CPU woken from a block by a hand-over at `handed_over` may run (one
    /// draw per woken CPU).
    pub(super) fn woken_at(&self, handed_over: u64, rng: &mut Rng) -> u64 {
        handed_over.saturating_add(self.idle.draw(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::hierarchy::Sourced;

    fn delay(median: u64, quantiles: &[u64]) -> WakeDelay {
        WakeDelay { median, quantiles: quantiles.to_vec() }
    }

    #[test]
    fn without_quantiles_every_wake_is_the_median_and_draws_nothing() {
        let mut rng = Rng::new(7);
        let before = rng.clone().next_u64();
        assert_eq!(delay(47_000, &[]).draw(&mut rng), 47_000);
        assert_eq!(rng.next_u64(), before, "no number was drawn");
    }

    #[test]
    fn draws_follow_the_quantiles_and_stay_inside_them() {
        // Three quantiles: 25th 10, median 20, 75th 60 (a long upper side).
        let d = delay(20, &[10, 20, 60]);
        let mut rng = Rng::new(1);
        let mut xs: Vec<u64> = (0..40_000).map(|_| d.draw(&mut rng)).collect();
        xs.sort_unstable();
        let at = |p: f64| xs[(p * xs.len() as f64) as usize];
        // Held at the outer quantiles below the 25th and above the 75th percentile.
        assert_eq!((xs[0], xs[xs.len() - 1]), (10, 60));
        assert_eq!(at(0.2), 10);
        assert_eq!(at(0.8), 60);
        // Linear between: the 37.5th percentile half way from 10 to 20, the 62.5th from
        // 20 to 60 (one unit of slack for sampling).
        assert!(at(0.375).abs_diff(15) <= 1, "{}", at(0.375));
        assert!(at(0.5).abs_diff(20) <= 1, "{}", at(0.5));
        assert!(at(0.625).abs_diff(40) <= 1, "{}", at(0.625));
    }

    #[test]
    fn the_same_seed_draws_the_same_wakes() {
        let d = delay(20, &[10, 20, 60]);
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| d.draw(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn figures_come_from_the_hierarchy_in_ps() {
        let mut h = Hierarchy::default();
        assert!(!WakeCosts::of(&h).charged());
        let mut idle = Sourced::new(47.0, "measured here");
        idle.quantiles = vec![35.5, 47.0, 60.2];
        h.set(Level::WakeIdle, idle);
        let w = WakeCosts::of(&h);
        assert!(w.charged());
        assert_eq!(w.idle, delay(47_000, &[35_500, 47_000, 60_200]));
        assert_eq!(w.call, WakeDelay::default());
    }
}
