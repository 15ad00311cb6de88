//! The Pareto front of a sweep: the points no other point beats on both of the trade-off's
//! sides at once — less memory held in the pagesets, and a better objective (the workload's
//! result, or a lower zone-lock share).

use crate::mmtests::Better;

/// Does `a` dominate `b`: no worse on both sides and strictly better on one? Memory (`.0`) is
/// better lower; the objective (`.1`) as `better` says.
pub fn dominates(a: (f64, f64), b: (f64, f64), better: Better) -> bool {
    let obj_le = if better.higher() { a.1 >= b.1 } else { a.1 <= b.1 };
    a.0 <= b.0 && obj_le && (a.0 < b.0 || a.1 != b.1)
}

/// The indices of `points` (memory, objective) on the Pareto front, in index order. A point
/// with a non-finite side is on no front and dominates nothing; points equal on both sides
/// are all on the front (neither dominates the other).
pub fn front(points: &[(f64, f64)], better: Better) -> Vec<usize> {
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    (0..points.len())
        .filter(|&i| finite(&points[i]))
        .filter(|&i| {
            !points.iter().any(|&other| finite(&other) && dominates(other, points[i], better))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dominated_points_are_left_out() {
        // (memory, throughput): b holds more memory for less throughput than a.
        let pts = [(1.0, 10.0), (2.0, 5.0), (3.0, 20.0), (0.5, 1.0)];
        assert_eq!(front(&pts, Better::Higher), [0, 2, 3]);
        // The same points with a lower-is-better objective (zone-lock share).
        assert_eq!(front(&pts, Better::Lower), [3]);
    }

    #[test]
    fn ties_stay_and_a_tie_on_one_side_is_decided_by_the_other() {
        let pts = [(1.0, 10.0), (1.0, 10.0), (1.0, 9.0), (2.0, 10.0)];
        // The two equal points both stay; (1, 9) and (2, 10) are each beaten by them.
        assert_eq!(front(&pts, Better::Higher), [0, 1]);
        assert_eq!(front(&pts, Better::Lower), [2]);
    }

    #[test]
    fn one_point_is_its_own_front_and_nan_is_on_none() {
        assert_eq!(front(&[(3.0, 4.0)], Better::Lower), [0]);
        assert_eq!(front(&[], Better::Lower), Vec::<usize>::new());
        let pts = [(f64::NAN, 1.0), (1.0, f64::INFINITY), (2.0, 2.0)];
        assert_eq!(front(&pts, Better::Higher), [2]);
        assert!(!dominates((1.0, 1.0), (1.0, 1.0), Better::Higher));
    }
}
