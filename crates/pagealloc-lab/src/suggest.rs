//! "Did you mean": the known name closest to a mistyped one, for the errors that list what a
//! command accepts (tables, workloads, presets, machines, a workload's parameters).

/// Edits between `a` and `b`, ignoring case: insertions, deletions, substitutions and swaps
/// of two neighbouring characters, each one edit (the optimal string alignment distance).
fn edits(a: &str, b: &str) -> usize {
    strsim::osa_distance(&a.to_lowercase(), &b.to_lowercase())
}

/// The candidate closest to `name`, if it is close enough to be what was meant: at most one
/// edit in four characters of the longer of the two (at least one edit), and not `name`
/// itself. Ties go to the first candidate.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edits(name, c), c))
        .filter(|&(d, c)| d > 0 && d <= (name.chars().count().max(c.chars().count()) / 4).max(1))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// " (did you mean `x`?)" when a candidate is close to `name`, else "".
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, candidates).map_or_else(String::new, |c| format!(" (did you mean `{c}`?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_count_insertions_deletions_substitutions_and_swaps() {
        assert_eq!(edits("kbuild", "kbuild"), 0);
        assert_eq!(edits("kbuil", "kbuild"), 1);
        assert_eq!(edits("kbuildd", "kbuild"), 1);
        assert_eq!(edits("kbiuld", "kbuild"), 1);
        assert_eq!(edits("modren", "modern"), 1);
        assert_eq!(edits("KBuild", "kbuild"), 0);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("trunc", "hackbench"), 7);
    }

    #[test]
    fn a_close_name_is_suggested_and_a_far_one_is_not() {
        let workloads = ["kbuild", "trunc", "page-fault1", "netperf-tcp", "netperf-udp"];
        assert_eq!(closest("kbuil", workloads), Some("kbuild"));
        assert_eq!(closest("tranc", workloads), Some("trunc"));
        assert_eq!(closest("page_fault1", workloads), Some("page-fault1"));
        assert_eq!(closest("netperf-upd", workloads), Some("netperf-udp"));
        // One edit from two names: the first listed wins.
        assert_eq!(closest("netperf-ucp", workloads), Some("netperf-tcp"));
        // Two edits in five characters is another word, and an exact name needs no hint.
        assert_eq!(closest("xyunc", workloads), None);
        assert_eq!(closest("kbuild", workloads), None);
        assert_eq!(closest("bogus", workloads), None);
        assert_eq!(
            did_you_mean("001-kbuld", ["000-trunc", "001-kbuild"]),
            " (did you mean `001-kbuild`?)"
        );
        assert_eq!(did_you_mean("zzz", ["000-trunc"]), "");
    }
}
