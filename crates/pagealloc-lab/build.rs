//! Embeds the source revision the lab is built from (`git describe --always --dirty` of this
//! tree) as `PAGEALLOC_REVISION`, for `--version` and the result rows: a result says which code
//! made it, wherever the command is run from. "unknown" when the tree is not a git checkout.

use std::path::Path;
use std::process::Command;

fn main() {
    let crate_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let root = Path::new(&crate_dir).join("../..");
    let revision = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=PAGEALLOC_REVISION={revision}");
    // Describe again when a commit, a checkout, a staged change or any source file changes (a
    // path that does not exist, as `.git/HEAD` in a worktree, makes it run every build).
    for p in [".git/HEAD", ".git/index", ".git/refs", "crates"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
}
