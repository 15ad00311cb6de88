//! Every citation in the project points at something its readers have.
//!
//! The project's facts come from public sources (kernel commits, mails on lore, repositories,
//! papers) and from its own reference documents in `docs/`. This test walks the text the
//! project ships — `README.md`, `ARCHITECTURE.md`, `docs/`, `scripts/`, `fuzz/fuzz_targets/`
//! and every crate's `src/`, `tests/`, `data/`, `examples/` and `benches/` — and fails, naming
//! file and line, on:
//!
//! - a citation of a document that does not ship with the project (the private notes the
//!   project was started from, their section numbers and source keys, the seed mails' file
//!   names, line numbers of a seed mail);
//! - a `docs/NAME.md` that does not exist;
//! - a section `§N` that the cited document does not have. A document's sections are its
//!   numbered headings (`## 5. …`, `### 5.5 …`). A `§N` refers to the `docs/NAME.md` right
//!   before it, or continues a list of references (`docs/kernel-reference.md §3.4–3.6, §4`),
//!   or else belongs to the last `docs/NAME.md` named earlier on its line ("docs/x.md §5.5,
//!   first trace (§3.5)"). Any other `§N` in `docs/NAME.md` is that file's own; anywhere else
//!   the file must say whose section numbers it uses, with the sentence "Section numbers (§)
//!   in this file are those of `docs/NAME.md`".
//!
//! The walk skips this file, and its patterns are assembled from pieces, so that it cannot
//! match itself.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every text file the project ships, relative to the root, in a stable order.
fn shipped_files(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        ["docs", "scripts", "fuzz/fuzz_targets"].iter().map(|d| root.join(d)).collect();
    let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    for c in crates {
        for sub in ["src", "tests", "data", "examples", "benches"] {
            dirs.push(c.join(sub));
        }
    }
    let mut out = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for d in dirs {
        walk(&d, &mut out);
    }
    out.retain(|p| p.is_file());
    out.iter().map(|p| p.strip_prefix(root).unwrap().to_path_buf()).collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                walk(&p, out);
            }
        } else {
            out.push(p);
        }
    }
}

/// Plain substrings that name documents which do not ship.
fn forbidden_words() -> Vec<String> {
    let j = |a: &str, b: &str| format!("{a}{b}");
    vec![
        j("kernel", "-spec"),
        j("workloads", "-reference"),
        j("presets", "-reference"),
        j("DESIGN", ".md"),
        j("mmtests", "-format"),
        j("hardware", "-latencies"),
        j("shared", "/"),
        j("/wo", "rk/"),
    ]
}

/// What is wrong with one line, as messages (empty if nothing).
fn forbidden_in_line(line: &str, words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        if line.contains(w.as_str()) {
            out.push(format!("cites `{w}`, which does not ship"));
        }
    }
    let b = line.as_bytes();
    let design = concat!("DES", "IGN");
    for (i, _) in line.match_indices(design) {
        let rest = line[i + design.len()..].trim_start_matches(' ');
        if rest.starts_with('§') {
            out.push(format!("cites sections of `{design}`, which does not ship"));
        }
    }
    // Source keys of the private notes: `[M-…]`, `[R-…]`, `[SEED-…]`, also inside a list
    // (`[SEED-001, M-LKP-KBUILD8]`).
    for (i, _) in line.match_indices('-') {
        let key_start = b[..i].iter().rposition(|c| !c.is_ascii_uppercase()).map_or(0, |p| p + 1);
        let key = &line[key_start..i];
        let next_upper = b.get(i + 1).is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        let opened = key_start > 0 && b[key_start - 1] == b'['
            || key_start > 1
                && &b[key_start - 2..key_start] == b", "
                && b[..key_start].contains(&b'[');
        if next_upper && opened && matches!(key, "M" | "R" | "SEED") {
            out.push(format!("cites the source key `{key}-…`, which does not resolve here"));
        }
    }
    // Seed mail file names: three digits, `_`, sixteen hex digits, `.txt`.
    for (i, _) in line.match_indices('_') {
        let digits = i >= 3 && b[i - 3..i].iter().all(u8::is_ascii_digit);
        let hex = line.get(i + 1..i + 17).is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
        if digits && hex && line.get(i + 17..i + 21) == Some(".txt") {
            out.push("names a seed mail's file; cite the mail by subject, author and date".into());
        }
    }
    // Line numbers of a seed mail (archives lay mails out differently).
    let lower = line.to_ascii_lowercase();
    for (i, _) in lower.match_indices("seed 00") {
        let rest = lower[i + 7..]
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '\'' || c == 's');
        let rest = rest.trim_start();
        if rest.starts_with("line ") || rest.starts_with("lines ") || rest.starts_with("(lines") {
            out.push("cites line numbers of a seed mail".into());
        }
    }
    out
}

/// The numbered sections of a markdown document: "5", "5.5", … from `## 5. …`, `### 5.5 …`.
fn sections(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim_start();
        let num: String = title.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let num = num.trim_end_matches('.');
        if !num.is_empty() && title[num.len()..].starts_with(['.', ' ']) {
            out.insert(num.to_string());
        }
    }
    out
}

/// A `§` reference parsed at `at` (the byte index of `§`): the section numbers it names
/// (`§4.6–4.7` names both ends) and the byte index just after it.
fn parse_ref(text: &str, at: usize) -> (Vec<String>, usize) {
    let mut i = at + '§'.len_utf8();
    let number = |i: &mut usize| -> Option<String> {
        let s = &text[*i..];
        let n: String = s.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let n = n.trim_end_matches('.').to_string();
        if n.is_empty() || !n.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        *i += n.len();
        // An item letter (`§1.2c`) belongs to the section.
        let mut after = text[*i..].chars();
        let (letter, next) = (after.next(), after.next());
        if letter.is_some_and(|c| c.is_ascii_lowercase())
            && !next.is_some_and(|c| c.is_ascii_alphabetic())
        {
            *i += 1;
        }
        Some(n)
    };
    let mut out = Vec::new();
    if let Some(n) = number(&mut i) {
        out.push(n);
        // A range: `–4.7`, `-4.7`, `–§4.7`.
        for dash in ["–§", "-§", "–", "-"] {
            if text[i..].starts_with(dash) {
                let mut j = i + dash.len();
                if let Some(m) = number(&mut j) {
                    out.push(m);
                    i = j;
                }
                break;
            }
        }
    }
    (out, i)
}

/// True if `between` only separates two references of one list (", ", " and ", comment
/// leaders at a line break).
fn continues_list(between: &str) -> bool {
    let rest: String = between
        .chars()
        .filter(|c| !matches!(c, ',' | ';' | ' ' | '\n' | '/' | '!' | '#' | '*' | '`' | '\\' | '"'))
        .collect();
    rest.is_empty() || rest == "and" || rest == "or"
}

/// The docs file a `docs/NAME.md` mention ending at `end` names, if the text before `end`
/// ends with one.
fn docs_mention_before(text: &str, end: usize) -> Option<(String, usize)> {
    let head = &text[..end];
    let head = head.strip_suffix('`').unwrap_or(head);
    let stem = head.strip_suffix(".md")?;
    let name_start = stem.rfind("docs/")?;
    let name = &stem[name_start + 5..];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return None;
    }
    Some((format!("docs/{name}.md"), name_start))
}

/// The last `docs/NAME.md` mentioned on the line of `at`, before it: a bare `§` after
/// "docs/x.md §1.2 (item d) and §3.7" or "docs/x.md §5.5, first trace (§3.5)" is that file's.
fn last_mention_in_line(text: &str, at: usize) -> Option<String> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..at];
    line.rmatch_indices("docs/").find_map(|(i, _)| {
        let tail = &line[i + 5..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        (!name.is_empty() && tail[name.len()..].starts_with(".md"))
            .then(|| format!("docs/{name}.md"))
    })
}

const MARKER: &str = "Section numbers (§) in this file are those of `docs/";

fn check_file(
    rel: &Path,
    text: &str,
    words: &[String],
    docs: &HashMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    for (n, line) in text.lines().enumerate() {
        for p in forbidden_in_line(line, words) {
            problems.push(format!("{}:{}: {p}: {}", rel.display(), n + 1, line.trim()));
        }
    }
    // Every `docs/NAME.md` mentioned exists.
    for (at, _) in text.match_indices("docs/") {
        let tail = &text[at + 5..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        if !name.is_empty() && tail[name.len()..].starts_with(".md") {
            let file = format!("docs/{name}.md");
            if !docs.contains_key(&file) {
                problems.push(format!("{}:{}: {file} does not exist", rel.display(), line_of(at)));
            }
        }
    }
    // Every `§N` resolves.
    let own = rel.to_str().unwrap().replace('\\', "/");
    let default_doc = if docs.contains_key(&own) {
        Some(own.clone())
    } else {
        text.find(MARKER).map(|at| {
            let tail = &text[at + MARKER.len() - 5..];
            tail[..tail.find('`').unwrap()].to_string()
        })
    };
    let mut last: Option<(String, usize)> = None;
    for (at, _) in text.match_indices('§') {
        if last.as_ref().is_some_and(|(_, end)| at < *end) {
            continue; // the second end of a range (`§1–§3`), already checked
        }
        let (nums, end) = parse_ref(text, at);
        if nums.is_empty() {
            continue;
        }
        // A line break (with its comment leader) may separate the path from its `§`.
        let before = text[..at].trim_end_matches([' ', '\n', '/', '!', '#', '*']);
        let doc = if let Some((doc, _)) = docs_mention_before(before, before.len()) {
            Some(doc)
        } else if let Some((doc, _)) = last.as_ref().filter(|(_, e)| continues_list(&text[*e..at]))
        {
            Some(doc.clone())
        } else if let Some(doc) = last_mention_in_line(text, at) {
            Some(doc)
        } else {
            default_doc.clone()
        };
        let Some(doc) = doc else {
            problems.push(format!(
                "{}:{}: a bare §{} with no document: write `docs/NAME.md §N`, or say \"{MARKER}NAME.md`\"",
                rel.display(),
                line_of(at),
                nums[0]
            ));
            continue;
        };
        match docs.get(&doc) {
            None => {
                problems.push(format!("{}:{}: {doc} does not exist", rel.display(), line_of(at)))
            }
            Some(secs) => {
                for n in &nums {
                    if !secs.contains(n) {
                        problems.push(format!(
                            "{}:{}: {doc} has no section {n}",
                            rel.display(),
                            line_of(at)
                        ));
                    }
                }
            }
        }
        last = Some((doc, end));
    }
    problems
}

#[test]
fn every_citation_points_at_something_that_ships() {
    let root = root();
    let files = shipped_files(&root);
    let this = Path::new("crates/pagealloc-lab/tests/citations.rs");
    assert!(files.iter().any(|f| f == this), "the walk must see this crate's tests");
    let texts: Vec<(PathBuf, String)> = files
        .into_iter()
        .filter(|f| f != this)
        .filter_map(|f| fs::read_to_string(root.join(&f)).ok().map(|t| (f, t)))
        .collect();
    let docs: HashMap<String, BTreeSet<String>> = texts
        .iter()
        .filter(|(f, _)| f.starts_with("docs") && f.extension().is_some_and(|e| e == "md"))
        .map(|(f, t)| (f.to_str().unwrap().replace('\\', "/"), sections(t)))
        .collect();
    assert!(docs.contains_key("docs/kernel-reference.md"), "{:?}", docs.keys());
    let words = forbidden_words();
    let problems: Vec<String> =
        texts.iter().flat_map(|(f, t)| check_file(f, t, &words, &docs)).collect();
    assert!(
        problems.is_empty(),
        "{} dangling citation(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_checks_catch_what_they_are_for() {
    let words = forbidden_words();
    let docs: HashMap<String, BTreeSet<String>> = [(
        "docs/x.md".to_string(),
        sections("# X\n## 1. One\n### 1.2 Two\n```\n## 9. fenced\n```\n## 3 Three\n"),
    )]
    .into();
    assert_eq!(docs["docs/x.md"], ["1", "1.2", "3"].map(String::from).into());
    let check = |text: &str| check_file(Path::new("src/a.rs"), text, &words, &docs);
    let ok = [
        "see docs/x.md §1.2",
        "(`docs/x.md` §1, §1.2c and §3)",
        "docs/x.md §1–§3, §1.2",
        "// docs/x.md §1,\n// §3",
        "/// see docs/x.md\n/// §1.2",
        "docs/x.md §1.2 (item c) and §3, a bare §1 on the same line",
        "Section numbers (§) in this file are those of `docs/x.md`.\n(§1.2)",
        "seed 000 (the bulk-free series)",
    ];
    for t in ok {
        assert_eq!(check(t), Vec::<String>::new(), "{t}");
    }
    let j = |a: &str, b: &str| format!("{a}{b}");
    let bad = [
        "docs/x.md §2".to_string(),
        "docs/x.md §1, §1.3".to_string(),
        "docs/y.md §1".to_string(),
        "a bare §1".to_string(),
        "docs/x.md §1\nand a bare §3 on the next line".to_string(),
        "docs/x.md §1 and (§2)".to_string(),
        j("kernel", "-spec §1"),
        j("DESIGN ", "§3"),
        j("[M", "-PCP-REPLY]"),
        j("[SEED-001, M", "-LKP-KBUILD8]"),
        j("[R", "-WIS main.c]"),
        j("000_04f04a773e3a9315", ".txt"),
        j("seed 004 ", "line 47"),
        j("../sha", "red/realdata/"),
    ];
    for t in &bad {
        assert!(!check(t).is_empty(), "{t}");
    }
}
