//! The C examples of `pagealloc-ffi` (`examples/c/demo.c` and the one in its README), compiled
//! by this crate's build script against the checked-in header and run by its tests: what CI
//! proves of the C ABI is that C programs using only `pagealloc.h` build, link and run.
//!
//! The demo is linked as this crate's own native library, so on the test binary's link line it
//! comes before the `pagealloc_ffi` rlib that defines the symbols it calls (a static archive
//! only resolves symbols wanted by what precedes it). Nothing here is published.

#[cfg(test)]
mod tests {
    #![allow(unsafe_code)] // Calling the C function is `unsafe`.

    use std::ffi::c_int;

    // Link the rlib whose `#[no_mangle]` functions the C code calls; nothing in Rust uses it.
    use pagealloc_ffi as _;

    extern "C" {
        /// `examples/c/demo.c`: 0 when every step held, else the first step that did not.
        fn pagealloc_demo() -> c_int;
        /// The README's example, its `main` renamed: 0 when it ran to the end.
        fn pagealloc_readme_main() -> c_int;
    }

    #[test]
    fn the_c_demo_runs() {
        // SAFETY: a C function of no arguments that calls only the C API, correctly.
        let failed_step = unsafe { pagealloc_demo() };
        assert_eq!(failed_step, 0, "demo.c failed at step {failed_step} (its stderr says why)");
    }

    #[test]
    fn the_readme_example_runs() {
        // SAFETY: a C `main` of no arguments that calls only the C API, correctly.
        assert_eq!(unsafe { pagealloc_readme_main() }, 0);
    }
}
