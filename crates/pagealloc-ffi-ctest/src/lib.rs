//! The C example of `pagealloc-ffi` (`examples/c/demo.c`), compiled by this crate's build
//! script against the checked-in header and run by its test: what CI proves of the C ABI is
//! that a C program using only `pagealloc.h` builds, links and runs.
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
    }

    #[test]
    fn the_c_demo_runs() {
        // SAFETY: a C function of no arguments that calls only the C API, correctly.
        let failed_step = unsafe { pagealloc_demo() };
        assert_eq!(failed_step, 0, "demo.c failed at step {failed_step} (its stderr says why)");
    }
}
