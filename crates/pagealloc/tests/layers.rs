//! The core's modules form layers that only point down: the graph of `crate::` imports between
//! its files has no cycle, apart from the two documented in ARCHITECTURE.md ("The core, layer
//! by layer"):
//!
//! - `hot.rs`, the one audited module of unchecked accessors, extends the zone's, the
//!   pagesets' and the allocator's types and is called from their own code: edges *into* it
//!   are not counted (its own imports are);
//! - `compaction.rs` holds `impl PageAllocator` blocks (compaction is part of the allocator's
//!   API, in a file of its own for size), so it and `page_alloc.rs` count as one node.
//!
//! Every `crate::` path counts, doc links included (a link up the layers sends a reader up
//! them too). A file is a node (`pcp/alloc.rs` is `pcp/alloc`); `crate::pcp::X` names `pcp/mod` unless
//! `X` is one of its files, and `super::` inside `pcp/` or `policy/` names that directory's
//! `mod.rs`. The crate root re-exports everything and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, as (node name, text).
fn sources(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            sources(&path, &format!("{prefix}{name}/"), out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            out.push((format!("{prefix}{stem}"), std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// The node a `crate::a::b` path names, given the nodes that exist.
fn target(a: &str, b: Option<&str>, nodes: &BTreeSet<String>) -> Option<String> {
    if let Some(b) = b {
        let sub = format!("{a}/{b}");
        if nodes.contains(&sub) {
            return Some(sub);
        }
    }
    let dir = format!("{a}/mod");
    [a.to_owned(), dir].into_iter().find(|n| nodes.contains(n))
}

/// Nodes merged into one: `compaction` is part of the allocator.
fn node_of(name: &str) -> &str {
    match name {
        "compaction" => "page_alloc",
        other => other,
    }
}

/// The import graph: node -> the nodes it imports (without the excluded edges).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, "", &mut files);
    let nodes: BTreeSet<String> = files.iter().map(|(n, _)| n.clone()).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, text) in &files {
        if name == "lib" || name.ends_with("/tests") {
            continue;
        }
        let from = node_of(name).to_owned();
        let edges = g.entry(from.clone()).or_default();
        let mut add = |to: String| {
            let to = node_of(&to).to_owned();
            if to != from && to != "hot" {
                edges.insert(to);
            }
        };
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            let seg = |s: &str| -> String {
                s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
            };
            let a = seg(rest);
            let b = rest[a.len()..].strip_prefix("::").map(seg);
            if let Some(t) = target(&a, b.as_deref(), &nodes) {
                add(t);
            }
        }
        if let Some((dir, _)) = name.split_once('/') {
            if !name.ends_with("/mod") && text.contains("super::") {
                add(format!("{dir}/mod"));
            }
        }
    }
    g
}

/// A cycle in `g`, if any, as the path that closes it.
fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let start = path.iter().position(|p| p == n).unwrap();
                let mut cycle = path[start..].to_vec();
                cycle.push(n.to_owned());
                return Some(cycle);
            }
            Some(_) => return None,
            None => {}
        }
        state.insert(n.to_owned(), 1);
        path.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    g.keys().find_map(|n| visit(n, g, &mut state, &mut Vec::new()))
}

#[test]
fn the_core_imports_only_point_down() {
    let g = graph();
    assert!(g.len() > 20, "the walk found the sources: {:?}", g.keys());
    assert!(g["zone"].contains("pcp/mod"), "zone holds its pagesets: {:?}", g["zone"]);
    if let Some(cycle) = find_cycle(&g) {
        panic!("an import cycle: {}", cycle.join(" -> "));
    }
}

/// The checker finds a cycle when there is one (so the test above can fail).
#[test]
fn a_cycle_is_found() {
    let mut g = graph();
    g.get_mut("types").unwrap().insert("zone".to_owned());
    let cycle = find_cycle(&g).expect("types -> zone -> ... -> types");
    assert_eq!(cycle.first(), cycle.last());
    assert!(cycle.iter().any(|n| n == "types"), "{cycle:?}");
}
