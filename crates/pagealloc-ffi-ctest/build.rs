//! Compiles `crates/pagealloc-ffi/examples/c/demo.c`, and the C example of that crate's README,
//! against the checked-in header into a static library, `pagealloc_demo`, that this crate's
//! test links and calls. Warnings are errors: the header and the examples must compile
//! cleanly as C99 with every warning on.

use std::path::{Path, PathBuf};

fn main() {
    let ffi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pagealloc-ffi");
    let demo = ffi.join("examples/c/demo.c");
    let readme = ffi.join("README.md");
    for input in [&demo, &readme, &ffi.join("include/pagealloc.h")] {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    cc::Build::new()
        .file(&demo)
        .file(readme_example(&readme))
        .include(ffi.join("include"))
        // demo.c's `main` is left out; the README's is renamed, so the test can call both.
        .define("PAGEALLOC_DEMO_NO_MAIN", None)
        .define("main", "pagealloc_readme_main")
        .flag_if_supported("-std=c99")
        .flag_if_supported("-pedantic")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("pagealloc_demo");
}

/// The README's first ```` ```c ```` block, written to a file of its own.
fn readme_example(readme: &Path) -> PathBuf {
    let text = std::fs::read_to_string(readme).expect("pagealloc-ffi's README");
    let block: String = text
        .split("```c\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the README has a ```c block")
        .to_owned();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("readme.c");
    std::fs::write(&out, block + "\n").expect("write readme.c");
    out
}
