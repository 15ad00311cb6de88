//! Every kind of malformed lab input, given to the model's verbs (`run`, `compare`): machine
//! files, preset files, workload parameters and cost profiles. Each must fail with a message
//! naming the file, the line and the field (or the parameter) and what it accepts — never a
//! panic, never a run.

use std::path::Path;

mod common;
use common::{pagealloc, stderr, stdout};

/// `pagealloc run trunc --quick` (unless `args` sets `--scale`) with `args`: must fail with
/// exit code 1; its stderr.
fn run_fails(args: &[&str]) -> String {
    let quick: &[&str] = if args.contains(&"--scale") { &[] } else { &["--quick"] };
    let out = pagealloc()
        .args(["run", "trunc", "--no-save"])
        .args(quick)
        .args(args)
        .assert()
        .failure()
        .code(1);
    let err = stderr(&out);
    assert!(out.get_output().stdout.is_empty(), "{args:?}: a run happened");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

/// Write `text` as `dir/name`; its path as a string.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// Check every (file text, wanted `LINE: rest`) case given with `flag`.
fn check_files(flag: &str, cases: &[(&str, &str)], extra: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = file(dir.path(), &format!("case{i}.toml"), text);
        let mut args = vec![flag, path.as_str()];
        args.extend_from_slice(extra);
        let err = run_fails(&args);
        assert!(err.contains(&format!("{path}{want}")), "{text:?}:\n{err}\nlacks {path}{want}");
    }
}

const MACHINE: &str = "name = \"mine\"\n[hierarchy]\nlike = \"lab-2cpu\"\n[[node]]\ncpus = 2\nmemory_gib = 4\nllc_mib = 32\nl2_kib = 512\n";

#[test]
fn the_example_machine_file_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "mine.toml", MACHINE);
    pagealloc()
        .args(["run", "trunc", "--quick", "--no-save", "--machine", &path])
        .assert()
        .success();
}

#[test]
fn malformed_machine_files() {
    let cases: &[(&str, &str)] = &[
        (
            "name = \"mine\"\n[[node]]\ncpus = 2\nmemory_gib = 4\nllc_mib = 32\nllc_shared_by = 3\n",
            ":6: field `node[0].llc_shared_by`: 3 CPUs share the LLC but the node has only 2",
        ),
        (
            "name = \"mine\"\n[[node]]\ncpus = \"two\"\nmemory_gib = 4\nllc_mib = 32\n",
            ":3: field `node[0].cpus`: takes an integer",
        ),
        (
            "name = \"mine\"\n[[node]]\ncpus = 2\nmemory_gb = 4\nllc_mib = 32\n",
            ":4: field `node[0].memory_gb`: unknown key; a [[node]] has cpus, memory_gib",
        ),
        ("name = \"mine\"\n[[node]\ncpus = 2\n", ":2: malformed TOML"),
        ("", ":1: field `node`: a machine needs at least one node"),
        (
            "name = \"mine\"\n[[node]]\ncpus = 2\nmemory_kib = 6\nllc_mib = 32\n",
            ":4: field `node[0].memory_kib`: 6144 bytes is not a whole number of 4096-byte pages",
        ),
        (
            "name = \"mine\"\nmin_free_kbytes = -1\n[[node]]\ncpus = 2\nmemory_gib = 4\nllc_mib = 32\n",
            ":2: field `min_free_kbytes`: -1 is out of range; it takes an integer in 0..=",
        ),
    ];
    check_files("--machine", cases, &[]);
    let err = run_fails(&["--machine", "no/such/machine.toml"]);
    assert!(err.contains("cannot read machine file `no/such/machine.toml`"), "{err}");
}

/// The memory hierarchy: every figure sourced, every figure the shape needs present, and a
/// machine the model cannot price refused by the model with the file and the field.
#[test]
fn machine_files_with_a_missing_or_unsourced_latency() {
    let node = "[[node]]\ncpus = 2\nmemory_gib = 4\nllc_mib = 32\nl2_kib = 512\n";
    let two_nodes = format!("{node}{node}");
    let cases: &[(&str, &str)] = &[
        (
            &format!("[hierarchy]\nlike = \"lab-2cpu\"\nl2_hit_ns = {{ value = 4.0 }}\n{node}"),
            ":3: field `hierarchy.l2_hit_ns`: missing `source`: a figure is { value = NUMBER (ns), \
             source = \"where it was published\" }",
        ),
        (
            &format!(
                "[hierarchy]\nlike = \"lab-2cpu\"\nllc_hit_ns = {{ value = 20, source = \" \" }}\n{node}"
            ),
            ":3: field `hierarchy.llc_hit_ns`: has no source",
        ),
        (
            &format!(
                "[hierarchy]\nlike = \"lab-2cpu\"\ndram_local_ns = {{ value = -5, source = \"x\" }}\n{node}"
            ),
            ":3: field `hierarchy.dram_local_ns`: -5 is out of range",
        ),
        (
            &format!("[hierarchy]\nlike = \"lab-2cpu\"\n{two_nodes}"),
            ":1: field `hierarchy.c2c_remote_ns`: missing (load of a line modified on another \
             node: this machine has more than one node)",
        ),
        (
            &format!("[hierarchy]\nlike = \"my-box\"\n{node}"),
            ":2: field `hierarchy.like`: \"my-box\" is not a built-in machine",
        ),
        (
            &format!("frame_bytes = 48\n[hierarchy]\nlike = \"lab-2cpu\"\n{node}"),
            ":1: field `frame_bytes`: 48 is not a frame size the model knows",
        ),
        (
            &format!("[hierarchy]\nl3_hit_ns = {{ value = 9, source = \"x\" }}\n{node}"),
            ":2: field `hierarchy.l3_hit_ns`: unknown key; [hierarchy] has like, l2_hit_ns",
        ),
        (
            &format!(
                "[hierarchy]\nlike = \"lab-2cpu\"\n\
                 dram_local_ns = {{ value = 80, quantiles = [70, 90], source = \"x\" }}\n{node}"
            ),
            ":3: field `hierarchy.dram_local_ns.quantiles`: only a host's wake figures",
        ),
        (
            &format!(
                "[hierarchy]\nlike = \"lab-2cpu\"\n\
                 wake_idle_ns = {{ value = 47, quantiles = \"35..60\", source = \"x\" }}\n{node}"
            ),
            ":3: field `hierarchy.wake_idle_ns.quantiles`: takes an array of numbers of ns",
        ),
        (
            &format!(
                "[hierarchy]\nlike = \"lab-2cpu\"\n\
                 wake_idle_ns = {{ value = 47, quantiles = [60, 47, 35], source = \"x\" }}\n{node}"
            ),
            ":3: field `hierarchy.wake_idle_ns`: quantiles are not ascending",
        ),
    ];
    check_files("--machine", cases, &[]);
    // A machine file without a [hierarchy] is a machine (for sizing and views), but the model
    // cannot price it.
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "bare.toml", &format!("name = \"bare\"\n{node}"));
    let err = run_fails(&["--machine", &path]);
    assert!(err.contains(&format!("{path}: field `hierarchy`: missing")), "{err}");
    // Nor one without an L2, the model's private cache.
    let path = file(
        dir.path(),
        "no-l2.toml",
        "name = \"no-l2\"\n[hierarchy]\nlike = \"lab-2cpu\"\n[[node]]\ncpus = 2\nmemory_gib = 4\nllc_mib = 32\n",
    );
    let err = run_fails(&["--machine", &path]);
    assert!(err.contains(&format!("{path}: field `node[0].l2_kib`: missing")), "{err}");
}

#[test]
fn malformed_preset_files() {
    let cases: &[(&str, &str)] = &[
        (
            "base = \"modern\"\n[tunables]\npcp_batch_scale_max = 9\n",
            ":3: [tunables]: `pcp_batch_scale_max` = 9 is not accepted; it takes an integer in 0..=6",
        ),
        ("base = \"modren\"\n", ":1: `base` = \"modren\" is not a built-in preset"),
        (
            "base = \"modern\"\n[switches]\nhigh_decy = \"off\"\n",
            ":3: [switches]: unknown switch `high_decy`",
        ),
        (
            "base = \"modern\"\n[switches]\nhigh_decay = \"fast\"\n",
            ":3: [switches]: `high_decay` = \"fast\" is not accepted",
        ),
        ("name = \"x\"\n", ":1: missing key `base`"),
        ("base = \"modern\"\n[switches\n", ":2: malformed TOML"),
    ];
    check_files("--preset", cases, &["--machine", "lab-2cpu"]);
    let err = run_fails(&["--machine", "lab-2cpu", "--preset", "no/such/preset.toml"]);
    assert!(err.contains("cannot read preset file `no/such/preset.toml`"), "{err}");
}

#[test]
fn workload_parameters_out_of_range_or_unknown() {
    let cases: &[(&[&str], &str)] = &[
        (&["--param", "files=0"], "--param files=0: out of range; `files` takes 1 to 1000 (files)"),
        (&["--param", "files=1001"], "--param files=1001: out of range; `files` takes 1 to 1000"),
        (&["--param", "files=-3"], "out of range"),
        (&["--param", "files=1e400"], "--param files=1e400: out of range"),
        (&["--param", "files=NaN"], "--param files=NaN: out of range"),
        (&["--param", "files=abc"], "--param files=abc: `abc` is not a number (files)"),
        (&["--param", "files"], "--param `files`: write NAME=VALUE"),
        (
            &["--param", "files=1.5"],
            "--param files=1.5: `files` takes a whole number (files); files=1 or files=2 does",
        ),
        (
            &["--param", "nope=1"],
            "workload `trunc` has no parameter `nope`; its parameters are: files, file_mib",
        ),
        (&["--scale", "0"], "--scale 0: takes a number from 0.001 to 1000"),
        (&["--scale", "5000"], "--scale 5000: takes a number from 0.001 to 1000"),
        (&["--scale", "1e-300"], "--scale 1e-300: takes a number from 0.001 to 1000"),
        (
            &["--param", "files=1000", "--scale", "1000"],
            "--scale 1000: `files` = 1000 × 1000 = 1000000 is above its range, 1 to 1000",
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["--machine", "lab-2cpu"];
        a.extend_from_slice(args);
        let err = run_fails(&a);
        assert!(err.contains(want), "{args:?}:\n{err}");
    }
    // `compare` checks its parameters the same way.
    let out = pagealloc()
        .args(["compare", "trunc", "--presets", "modern,tune-base", "--machine", "lab-2cpu"])
        .args(["--quick", "--no-save", "--param", "pagevec=0"])
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("--param pagevec=0: out of range; `pagevec` takes 1 to 4096"), "{err}");
}

/// `--scale` that makes a count fractional runs the rounded count and says so, in the text
/// and in `--json`; the parameters printed are the ones that ran (`files=1.5` printed 1.5
/// and ran 2).
#[test]
fn scaled_counts_run_rounded_and_say_so() {
    let args = ["run", "trunc", "--machine", "lab-2cpu", "--no-save", "--scale", "0.15"];
    let out = pagealloc().args(args).args(["--param", "file_mib=16"]).assert().success();
    let text = stdout(&out);
    assert!(text.contains("parameters: files=2 file_mib=16 "), "{text}");
    assert!(
        text.contains(
            "scaled by 0.15: files=2 (10 × 0.15 = 1.5, rounded to a whole number of files)"
        ),
        "{text}"
    );
    let out = pagealloc().args(args).args(["--param", "file_mib=16", "--json"]).assert().success();
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["params"]["files"], 2.0);
    assert_eq!(doc["scaled"][0], "files=2 (10 × 0.15 = 1.5, rounded to a whole number of files)");
}

/// The shipped cost profile's text with `field`'s line replaced by `line` (or dropped).
fn cost_with(field: &str, line: &str) -> (String, usize) {
    let text = include_str!("../data/cost-default.toml");
    let at = text.lines().position(|l| l.starts_with(&format!("{field} ="))).unwrap() + 1;
    let out: Vec<&str> = text
        .lines()
        .filter_map(|l| match l.starts_with(&format!("{field} =")) {
            true if line.is_empty() => None,
            true => Some(line),
            false => Some(l),
        })
        .collect();
    (out.join("\n") + "\n", at)
}

#[test]
fn malformed_cost_profiles() {
    let cases = [
        cost_with("pcp_alloc_ns", "pcp_alloc_ns = \"fast\""),
        cost_with("zone_list_op_ns", "zone_list_op_ns = -3.0"),
        cost_with("zone_lock_base_ns", "zone_lock_base_ns = nan"),
        cost_with("pcp_free_ns", "pcp_free_nss = 21.3"),
        cost_with("method", "method = \"x"),
    ];
    let wanted = [
        "field `pcp_alloc_ns`: takes a number of nanoseconds in 0..=1e9, not a string",
        "field `zone_list_op_ns`: -3 is out of range; it takes a number of nanoseconds in 0..=1e9",
        "field `zone_lock_base_ns`: NaN is out of range",
        "unknown field `pcp_free_nss`; a cost profile has machine, method",
        "malformed TOML",
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, ((text, line), want)) in cases.iter().zip(wanted).enumerate() {
        let path = file(dir.path(), &format!("cost{i}.toml"), text);
        let err = run_fails(&["--machine", "lab-2cpu", "--cost", &path]);
        assert!(
            err.contains(&format!("{path}:{line}: {want}")),
            "{err}\nlacks {path}:{line}: {want}"
        );
    }
    let (text, _) = cost_with("pcp_free_ns", "");
    let path = file(dir.path(), "short.toml", &text);
    let err = run_fails(&["--machine", "lab-2cpu", "--cost", &path]);
    assert!(err.contains(&format!("{path}: missing field `pcp_free_ns`")), "{err}");
    let err = run_fails(&["--machine", "lab-2cpu", "--cost", "no/such/cost.toml"]);
    assert!(err.contains("cannot read cost profile `no/such/cost.toml`"), "{err}");
    // The shipped profile itself loads from a file.
    let (text, _) = cost_with("pcp_alloc_ns", "pcp_alloc_ns = 16.9");
    let path = file(dir.path(), "good.toml", &text);
    pagealloc()
        .args(["run", "trunc", "--quick", "--no-save", "--machine", "lab-2cpu", "--cost", &path])
        .assert()
        .success();
}

/// A user error is one line on stderr and exit status 1, with no backtrace even when
/// `RUST_BACKTRACE` asks for one (backtraces are for bugs).
#[test]
fn user_errors_print_without_backtraces() {
    let out = pagealloc()
        .env("RUST_BACKTRACE", "1")
        .args(["run", "trunc", "--machine", "no-such-machine"])
        .assert()
        .code(1);
    let err = stderr(&out);
    assert!(err.starts_with("Error: unknown machine `no-such-machine`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("backtrace") && !err.contains("Backtrace"), "{err}");
}

/// `help` is a command like the others: it has its own `--help`, prints a command's help, and
/// names the commands when asked for one that does not exist.
#[test]
fn help_is_a_command() {
    let out = pagealloc().args(["help", "--help"]).assert().success();
    let text = stdout(&out);
    assert!(text.contains("Usage: pagealloc help"), "{text}");
    let out = pagealloc().args(["help", "reproduce"]).assert().success();
    let text = stdout(&out);
    assert!(text.contains("Usage: pagealloc reproduce"), "{text}");
    let out = pagealloc().args(["help", "nope"]).assert().code(1);
    let err = stderr(&out);
    assert!(err.contains("no command `nope`; the commands are: exercise"), "{err}");
}

/// `pagealloc ARGS` must fail with exit code `code`; its stderr.
fn fails(args: &[&str], code: i32) -> String {
    let out = pagealloc().args(args).assert().failure().code(code);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    err
}

/// Every file input refuses a special file before reading it: /dev/zero (endless) as a
/// machine, preset or cost file (through a `.toml` link, as `resolve` reads any `.toml`), a
/// trace, a zoneinfo or result rows; the message names the file and what it is.
#[test]
fn special_files_are_refused_as_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let link = link.to_str().unwrap();
    let device = "it is a character device, not a regular file";
    let run = ["run", "trunc", "--quick", "--no-save"];
    let out = dir.path().to_str().unwrap();
    for (args, code, names) in [
        ([&run[..], &["--machine", link]].concat(), 1, format!("machine file `{link}`")),
        ([&run[..], &["--preset", link]].concat(), 1, format!("preset file `{link}`")),
        ([&run[..], &["--cost", "/dev/zero"]].concat(), 1, "cost profile `/dev/zero`".into()),
        (vec!["machines", link], 1, format!("machine file `{link}`")),
        (vec!["replay", "/dev/zero"], 1, "trace `/dev/zero`".into()),
        (vec!["plot", "/dev/zero", "--out", out], 1, "result rows `/dev/zero`".into()),
        (vec!["sizing", "--zoneinfo", "/dev/zero"], 2, "/dev/zero".into()),
    ] {
        let err = fails(&args, code);
        assert!(err.contains(&format!("cannot read {names}: {device}")), "{args:?}: {err}");
    }
    // A directory and a FIFO are no regular files either (a FIFO is not opened: that would
    // wait for a writer).
    let err = fails(&["replay", dir.path().to_str().unwrap()], 1);
    assert!(err.contains("it is a directory, not a regular file"), "{err}");
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let err = fails(&["sizing", "--zoneinfo", fifo.to_str().unwrap()], 2);
    assert!(err.contains("it is a FIFO (named pipe), not a regular file"), "{err}");
}

/// A file over its kind's cap is refused with the file and the cap named, and how to raise it;
/// standard input is cut at the cap too. The flag and the variable set the cap.
#[test]
fn oversized_inputs_are_refused_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    // 1 MiB + 1 byte of comment: over the machine files' default cap.
    let big = "#".repeat(1 << 20) + "\n";
    let path = file(dir.path(), "big.toml", &big);
    let err = fails(&["machines", &path], 1);
    assert!(
        err.contains(&format!("cannot read machine file `{path}`: it is larger than 1 MiB, the limit of machine, preset and cost files; raise it with --max-input-mib N or PAGEALLOC_MAX_INPUT_MIB=N")),
        "{err}"
    );
    // Raised, it is read (and is no machine: no node).
    let err = fails(&["machines", &path, "--max-input-mib", "2"], 1);
    assert!(err.contains("a machine needs at least one node"), "{err}");
    let out = pagealloc()
        .env("PAGEALLOC_MAX_INPUT_MIB", "2")
        .args(["machines", &path])
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("a machine needs at least one node"), "{err}");
    // Lowered, a trace file and a trace on standard input over 1 MiB are refused.
    let trace = file(dir.path(), "trace.txt", &big);
    let err = fails(&["replay", &trace, "--max-input-mib", "1"], 1);
    assert!(
        err.contains(&format!(
            "cannot read trace `{trace}`: it is larger than 1 MiB, the limit --max-input-mib set"
        )),
        "{err}"
    );
    let out = pagealloc()
        .env("PAGEALLOC_MAX_INPUT_MIB", "1")
        .args(["replay", "-"])
        .write_stdin(big.clone())
        .assert()
        .failure()
        .code(1);
    let err = stderr(&out);
    assert!(
        err.contains("cannot read the trace on standard input: it is larger than 1 MiB, the limit PAGEALLOC_MAX_INPUT_MIB set"),
        "{err}"
    );
    let out = pagealloc()
        .env("PAGEALLOC_MAX_INPUT_MIB", "lots")
        .args(["machines", &path])
        .assert()
        .failure();
    let err = stderr(&out);
    assert!(err.contains("PAGEALLOC_MAX_INPUT_MIB=\"lots\": takes a whole number of MiB"), "{err}");
}

/// Result rows holding values near f64::MAX: `plot` drew an infinite axis and hung, its
/// memory growing. Now it writes its charts, with no infinite coordinate in them.
#[test]
fn plot_draws_values_near_f64_max() {
    let dir = tempfile::tempdir().unwrap();
    let row = |metric: &str, t: &str| {
        format!(
            "{{\"workload\":\"trunc\",\"preset\":\"modern\",\"runner\":\"model\",\"machine\":\"m\",\
             \"seed\":1,\"params\":{{}},\"metric\":\"{metric}\",\"sample\":0,\"value\":1.7e308,\
             \"unit\":\"MiB\",\"better\":\"lower\"{t},\"revision\":\"x\",\"wall_s\":0}}\n"
        )
    };
    let rows = row("series:pcp_mib", ",\"t\":1")
        + &row("series:pcp_mib", ",\"t\":2")
        + &row("elapsed", "");
    let path = file(dir.path(), "rows.jsonl", &rows);
    let out = dir.path().join("plots");
    pagealloc()
        .args(["plot", &path, "--out", out.to_str().unwrap()])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let svgs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    assert_eq!(svgs.len(), 2, "{svgs:?}");
    for p in svgs {
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.len() < 64 << 10 && !svg.contains("inf"), "{}: {svg}", p.display());
    }
}

/// Machines on which every allocation fails are refused before the run (they ran, failed
/// every allocation and exited 0): one of a single page, one whose MIN watermark takes all
/// of its 128 KiB, one whose `min_free_kbytes` is above its memory (named with its line).
#[test]
fn machines_that_cannot_allocate_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let machine = |mem: &str, extra: &str| {
        format!(
            "name = \"tiny\"\n{extra}[hierarchy]\nlike = \"lab-2cpu\"\n[[node]]\ncpus = 2\n{mem}\n\
             llc_mib = 32\nl2_kib = 512\n"
        )
    };
    for mem in ["memory_kib = 4", "memory_kib = 128"] {
        let path = file(dir.path(), "tiny.toml", &machine(mem, ""));
        let err = run_fails(&["--machine", &path]);
        assert!(
            err.contains("machine `tiny` cannot grant a single page: no zone has free pages above its MIN watermark (node 0 zone DMA:"),
            "{mem}: {err}"
        );
        assert!(err.contains("min_free_kbytes 128 KiB); give it more memory"), "{err}");
    }
    let path =
        file(dir.path(), "mfk.toml", &machine("memory_gib = 4", "min_free_kbytes = 8000000\n"));
    let err = run_fails(&["--machine", &path]);
    assert!(
        err.contains(&format!("{path}:2: field `min_free_kbytes`: 8000000 KiB is not below the machine's memory (4194304 KiB)")),
        "{err}"
    );
    // A quarter of a MiB is enough for a page or two: it runs.
    let path = file(dir.path(), "small.toml", &machine("memory_kib = 256", ""));
    pagealloc()
        .args(["run", "trunc", "--quick", "--no-save", "--machine", &path])
        .assert()
        .success();
}

/// The real runner refuses what the model refuses, in the same words: an arena whose MIN
/// watermark takes every page (it ran every workload with every allocation failing, printed
/// zeros and exited 0) and no CPU thread (refused as "a node without CPUs has no CPU
/// caches"), or more than a machine has.
#[test]
fn the_real_runner_refuses_unusable_machines_as_the_model_does() {
    let dir = tempfile::tempdir().unwrap();
    // min_free_kbytes = 1024 takes all of a 1 MiB arena, and all of a 1 MiB model machine.
    let preset =
        file(dir.path(), "mfk.toml", "base = \"modern\"\n[tunables]\nmin_free_kbytes = 1024\n");
    let real = run_fails(&["--runner", "real", "--memory-mib", "1", "--preset", &preset]);
    assert!(
        real.contains("machine `host` cannot grant a single page: no zone has free pages above its MIN watermark (node 0 zone Normal: "),
        "{real}"
    );
    assert!(
        real.contains("min_free_kbytes 1024 KiB); give it more memory (--memory-mib) or a lower min_free_kbytes"),
        "{real}"
    );
    let machine = file(
        dir.path(),
        "tiny.toml",
        "name = \"tiny\"\n[hierarchy]\nlike = \"lab-2cpu\"\n[[node]]\ncpus = 2\nmemory_kib = 1024\n\
         llc_mib = 32\nl2_kib = 512\n",
    );
    let model = run_fails(&["--machine", &machine, "--preset", &preset]);
    assert!(model.contains("machine `tiny` cannot grant a single page: no zone has free pages above its MIN watermark (node 0 zone "), "{model}");
    assert!(
        model.contains("min_free_kbytes 1024 KiB); give it more memory or a lower min_free_kbytes"),
        "{model}"
    );
    for n in ["0", "1048577"] {
        let err = run_fails(&["--runner", "real", "--memory-mib", "16", "--cpus", n]);
        assert!(
            err.contains(&format!("--cpus {n}: the real runner runs one thread per CPU and needs between 1 and 1048576 CPUs")),
            "{err}"
        );
        let err = run_fails(&["--machine", "lab-2cpu", "--cpus", n]);
        assert!(err.contains(&format!("--cpus {n}: machine `lab-2cpu` needs between 1")), "{err}");
    }
}

/// A CPU thread the OS will not start ended the real runner with a panic. Under an address
/// space of about 3 GB, threads with 1 GiB stacks cannot all start: the run must end with an
/// error naming the CPU and the way out, and no thread left waiting.
///
/// The stacks are that large so that the OS refuses the second or third thread's stack with
/// hundreds of MiB of address space still free. With default 2 MiB stacks the space ran out
/// near the 700th thread, where a thread that had started could fail instead to map its
/// signal stack (which the Rust runtime aborts on, outside the runner's reach): the test failed
/// on a slower machine.
#[test]
fn the_real_runner_says_when_the_os_refuses_a_thread() {
    let bin = assert_cmd::cargo::cargo_bin("pagealloc");
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 3000000 && exec \"$0\" \"$@\""])
        .env("RUST_MIN_STACK", (1u64 << 30).to_string())
        .arg(bin)
        .args(["run", "page-fault1", "--runner", "real", "--no-save", "--memory-mib", "512"])
        .args(["--cpus", "2000", "--param", "processes=2000", "--param", "threads_per_core=1"])
        .args(["--param", "mmap_mib=0.004"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("cannot start the thread of cpu "), "{err}");
    assert!(err.contains("the real runner runs one thread per CPU, so give it fewer (--cpus)"));
}

/// `--iterations 0` ran nothing and succeeded (reproduce reported the table as skipped);
/// a count beyond 1000 made every run's spec up front.
#[test]
fn iterations_out_of_range_are_refused() {
    for (cmd, n) in
        [("reproduce", "0"), ("compare", "0"), ("compare", "1001"), ("reproduce", "4000000000")]
    {
        let mut args = vec![cmd];
        if cmd == "compare" {
            args.extend(["trunc", "--presets", "modern,tune-base"]);
        } else {
            args.push("000-trunc@v2");
        }
        args.extend(["--quick", "--no-save", "--iterations", n]);
        let out = pagealloc().args(&args).assert().failure().code(1);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("--iterations {n}: takes 1 to 1000 samples per preset")),
            "{args:?}: {err}"
        );
        assert!(out.get_output().stdout.is_empty(), "{args:?}: a run happened");
    }
}
