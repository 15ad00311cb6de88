//! Compiles `crates/pagealloc-ffi/examples/c/demo.c` against the checked-in header into a
//! static library, `pagealloc_demo`, that this crate's test links and calls. Warnings are
//! errors: the header must compile cleanly as C99 with every warning on.

use std::path::Path;

fn main() {
    let ffi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pagealloc-ffi");
    let demo = ffi.join("examples/c/demo.c");
    let header = ffi.join("include/pagealloc.h");
    println!("cargo:rerun-if-changed={}", demo.display());
    println!("cargo:rerun-if-changed={}", header.display());
    cc::Build::new()
        .file(&demo)
        .include(ffi.join("include"))
        .define("PAGEALLOC_DEMO_NO_MAIN", None)
        .flag_if_supported("-std=c99")
        .flag_if_supported("-pedantic")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("pagealloc_demo");
}
