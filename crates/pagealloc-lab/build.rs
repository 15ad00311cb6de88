//! Embeds the source revision the lab is built from (`git describe --always --dirty` of this
//! tree) as `PAGEALLOC_REVISION`, for `--version` and the result rows: a result says which code
//! made it, wherever the command is run from. "unknown" when the tree is not a git checkout.

use std::path::Path;
use std::process::Command;

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let root = Path::new(&crate_dir).join("../..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let revision = git(&["describe", "--always", "--dirty"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PAGEALLOC_REVISION={revision}");
    // Describe again when a commit or a checkout moves HEAD (this worktree's HEAD, the
    // repository's refs) or a source file changes; not on every touch of the index, which
    // would rebuild the lab after a `git status`.
    println!("cargo:rerun-if-changed={}", root.join("crates").display());
    if let (Some(dir), Some(common)) =
        (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"]))
    {
        let abs = |p: String| if Path::new(&p).is_absolute() { p.into() } else { root.join(p) };
        println!("cargo:rerun-if-changed={}", abs(dir).join("HEAD").display());
        println!("cargo:rerun-if-changed={}", abs(common).join("refs").display());
    }
}
