//! The C API called as C calls it, from Rust: every error code a bad call can earn, and the
//! allocator left valid and unchanged after each.
#![allow(unsafe_code)] // Calling the C API is `unsafe`; every pointer passed here is live.

use std::ffi::{c_char, c_int, CStr};
use std::ptr::{null, null_mut};

use pagealloc_ffi::*;

/// Every test's machine: one node, 4 CPUs, 64 MiB from address 0.
fn build(preset: &CStr) -> *mut Pagealloc {
    unsafe {
        let map = pagealloc_map_new();
        assert!(!map.is_null());
        assert_eq!(pagealloc_map_add_range(map, 0, 0, 64 << 20), PAGEALLOC_OK);
        assert_eq!(pagealloc_map_set_cpus(map, 0, 4), PAGEALLOC_OK);
        let mut pa = null_mut();
        assert_eq!(pagealloc_new(map, preset.as_ptr(), &mut pa), PAGEALLOC_OK);
        pagealloc_map_free(map);
        pa
    }
}

fn code(e: PageallocError) -> c_int {
    e as c_int
}

fn last_error() -> String {
    let mut buf = [0 as c_char; 256];
    let n = unsafe { pagealloc_last_error_message(buf.as_mut_ptr(), buf.len()) };
    assert!(n >= 0);
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned()
}

fn free_pages(pa: *const Pagealloc) -> u64 {
    let mut n = 0;
    assert_eq!(unsafe { pagealloc_nr_free_pages(pa, &mut n) }, PAGEALLOC_OK);
    n
}

fn counter(pa: *const Pagealloc, name: &CStr) -> u64 {
    let mut v = 0;
    assert_eq!(unsafe { pagealloc_counter(pa, name.as_ptr(), &mut v) }, PAGEALLOC_OK);
    v
}

#[test]
fn allocate_free_drain_and_count() {
    let pa = build(c"modern");
    unsafe {
        let (mut managed, mut cpus) = (0, 0);
        assert_eq!(pagealloc_managed_pages(pa, &mut managed), PAGEALLOC_OK);
        assert_eq!(pagealloc_nr_cpus(pa, &mut cpus), PAGEALLOC_OK);
        assert_eq!(cpus, 4);
        assert_eq!(free_pages(pa), managed);

        let mut pfn = u64::MAX;
        assert_eq!(pagealloc_alloc(pa, 1, PAGEALLOC_GFP_KERNEL, 3, &mut pfn), PAGEALLOC_OK);
        assert_eq!(pfn % 8, 0);
        assert_eq!(counter(pa, c"pgalloc_normal") + counter(pa, c"pgalloc_dma32"), 8);
        assert_eq!(pagealloc_free(pa, 1, pfn, 3), PAGEALLOC_OK);
        // An order-3 free goes to CPU 1's pageset: free once drained.
        assert!(counter(pa, c"pcp_free") > 0);
        assert!(free_pages(pa) < managed);
        assert_eq!(pagealloc_drain_cpu(pa, 1), PAGEALLOC_OK);
        assert_eq!(free_pages(pa), managed);

        let mut dma = 0;
        let gfp = PAGEALLOC_GFP_KERNEL | PAGEALLOC_GFP_DMA;
        assert_eq!(pagealloc_alloc(pa, 0, gfp, 0, &mut dma), PAGEALLOC_OK);
        assert!(dma * PAGEALLOC_PAGE_SIZE < 16 << 20);
        assert_eq!(pagealloc_free(pa, 2, dma, 0), PAGEALLOC_OK);
        assert_eq!(pagealloc_drain_all(pa, 3), PAGEALLOC_OK);
        assert_eq!(free_pages(pa), managed);
        assert_eq!(pagealloc_validate(pa), PAGEALLOC_OK);
        pagealloc_destroy(pa);
    }
}

/// Each bad free earns its own code and changes nothing: the block stays allocated with its
/// order, the counts stay, and every invariant holds.
#[test]
fn every_bad_free_has_its_code_and_changes_nothing() {
    let pa = build(c"modern");
    unsafe {
        let mut block = 0;
        assert_eq!(pagealloc_alloc(pa, 0, PAGEALLOC_GFP_KERNEL, 2, &mut block), PAGEALLOC_OK);
        let mut other = 0;
        assert_eq!(pagealloc_alloc(pa, 0, PAGEALLOC_GFP_KERNEL, 0, &mut other), PAGEALLOC_OK);
        assert_eq!(pagealloc_free(pa, 0, other, 0), PAGEALLOC_OK);
        let before = (free_pages(pa), counter(pa, c"pgfree"));

        let cases: [(u32, u64, u32, PageallocError, &str); 8] = [
            (0, other, 0, PageallocError::DoubleFree, "double free"),
            (0, block, 1, PageallocError::WrongOrder, "allocated as order 2"),
            (0, block + 1, 0, PageallocError::TailPage, "tail page"),
            (0, block + 2, 1, PageallocError::TailPage, "tail page"),
            (0, block + 1, 2, PageallocError::Misaligned, "not aligned"),
            (0, 1 << 40, 0, PageallocError::ForeignFrame, "belongs to no zone"),
            (9, block, 2, PageallocError::BadCpu, "cpu 9"),
            (0, block, 11, PageallocError::BadOrder, "order 11"),
        ];
        for (cpu, pfn, order, want, message) in cases {
            assert_eq!(pagealloc_free(pa, cpu, pfn, order), code(want), "{want:?}");
            assert!(last_error().contains(message), "{want:?}: {}", last_error());
            assert_eq!((free_pages(pa), counter(pa, c"pgfree")), before, "{want:?}");
            assert_eq!(pagealloc_validate(pa), PAGEALLOC_OK, "{want:?}");
        }
        // An order too large for the core's type is refused, not truncated to a valid one.
        assert_eq!(pagealloc_free(pa, 0, block, 258), code(PageallocError::BadOrder));
        assert_eq!(pagealloc_free(pa, 0, block, 2), PAGEALLOC_OK);
        assert_eq!(pagealloc_free(pa, 0, block, 2), code(PageallocError::DoubleFree));
        pagealloc_destroy(pa);
    }
}

#[test]
fn bad_allocations_have_their_codes() {
    let pa = build(c"modern");
    unsafe {
        let mut pfn = 7;
        let k = PAGEALLOC_GFP_KERNEL;
        assert_eq!(pagealloc_alloc(pa, 4, k, 0, &mut pfn), code(PageallocError::BadCpu));
        assert_eq!(pagealloc_alloc(pa, 0, k, 11, &mut pfn), code(PageallocError::BadOrder));
        assert_eq!(pagealloc_alloc(pa, 0, k, 256, &mut pfn), code(PageallocError::BadOrder));
        let both = PAGEALLOC_GFP_DMA | PAGEALLOC_GFP_DMA32;
        assert_eq!(pagealloc_alloc(pa, 0, both, 0, &mut pfn), code(PageallocError::BadGfp));
        assert_eq!(pagealloc_alloc(pa, 0, k, 0, null_mut()), code(PageallocError::NullPointer));
        assert_eq!(pfn, 7, "a failed allocation leaves *pfn alone");
        assert_eq!(last_error(), "`pfn` is NULL");

        let mut held = Vec::new();
        let err = loop {
            match pagealloc_alloc(pa, 0, k, 10, &mut pfn) {
                PAGEALLOC_OK => held.push(pfn),
                err => break err,
            }
        };
        assert_eq!(err, code(PageallocError::OutOfMemory));
        assert!(!held.is_empty());
        for p in held {
            assert_eq!(pagealloc_free(pa, 0, p, 10), PAGEALLOC_OK);
        }
        assert_eq!(pagealloc_validate(pa), PAGEALLOC_OK);
        pagealloc_destroy(pa);
    }
}

#[test]
fn null_handles_and_unknown_names_are_refused() {
    unsafe {
        let mut v = 0u64;
        let null_pa: *const Pagealloc = null();
        let np = code(PageallocError::NullPointer);
        assert_eq!(pagealloc_alloc(null_pa, 0, 0, 0, &mut v), np);
        assert_eq!(pagealloc_free(null_pa, 0, 0, 0), np);
        assert_eq!(pagealloc_drain_cpu(null_pa, 0), np);
        assert_eq!(pagealloc_drain_all(null_pa, 0), np);
        assert_eq!(pagealloc_nr_free_pages(null_pa, &mut v), np);
        assert_eq!(pagealloc_managed_pages(null_pa, &mut v), np);
        assert_eq!(pagealloc_counter(null_pa, c"pgfree".as_ptr(), &mut v), np);
        assert_eq!(pagealloc_validate(null_pa), np);
        assert_eq!(pagealloc_map_add_range(null_mut(), 0, 0, 1 << 20), np);
        assert_eq!(pagealloc_map_set_cpus(null_mut(), 0, 1), np);
        pagealloc_destroy(null_mut());
        pagealloc_map_free(null_mut());

        let map = pagealloc_map_new();
        assert_eq!(pagealloc_map_add_range(map, 0, 0, 16 << 20), PAGEALLOC_OK);
        assert_eq!(pagealloc_map_set_cpus(map, 0, 1), PAGEALLOC_OK);
        let mut pa = 1usize as *mut Pagealloc;
        let unknown = code(PageallocError::UnknownPreset);
        assert_eq!(pagealloc_new(map, c"linux-9.9".as_ptr(), &mut pa), unknown);
        assert!(pa.is_null(), "a failed build sets *out to NULL");
        assert_eq!(pagealloc_new(map, null(), &mut pa), np);
        assert_eq!(pagealloc_new(null(), c"modern".as_ptr(), &mut pa), np);
        assert_eq!(pagealloc_new(map, c"modern".as_ptr(), null_mut()), np);
        let not_utf8 = [0xffu8 as c_char, 0];
        let bad = code(PageallocError::BadArgument);
        assert_eq!(pagealloc_new(map, not_utf8.as_ptr(), &mut pa), bad);
        assert_eq!(pagealloc_new(map, c"frag-vanilla".as_ptr(), &mut pa), PAGEALLOC_OK);
        pagealloc_map_free(map);

        let uc = code(PageallocError::UnknownCounter);
        assert_eq!(pagealloc_counter(pa, c"pgsteal".as_ptr(), &mut v), uc);
        assert_eq!(pagealloc_counter(pa, null(), &mut v), np);
        assert_eq!(pagealloc_counter(pa, c"pgfree".as_ptr(), null_mut()), np);
        assert_eq!(pagealloc_drain_cpu(pa, 1), code(PageallocError::BadCpu));
        pagealloc_destroy(pa);
    }
}

/// A refused map change leaves the map as it was: the machine built afterwards is the one
/// the accepted calls described.
#[test]
fn map_errors_have_their_codes_and_leave_the_map_alone() {
    unsafe {
        let map = pagealloc_map_new();
        let mut pa = null_mut();
        assert_eq!(pagealloc_new(map, c"modern".as_ptr(), &mut pa), code(PageallocError::NoCpus));
        assert_eq!(pagealloc_map_set_cpus(map, 0, 2), PAGEALLOC_OK);
        assert_eq!(pagealloc_new(map, c"modern".as_ptr(), &mut pa), code(PageallocError::NoMemory));
        assert_eq!(pagealloc_map_add_range(map, 0, 0, 32 << 20), PAGEALLOC_OK);
        let cases = [
            (pagealloc_map_add_range(map, 0, 16 << 20, 48 << 20), PageallocError::Overlap),
            (pagealloc_map_add_range(map, 0, 0x10_0800, 0x10_0fff), PageallocError::BadRange),
            (pagealloc_map_add_range(map, 1024, 64 << 20, 96 << 20), PageallocError::BadNode),
            (pagealloc_map_add_pfn_range(map, 0, 1 << 60, (1 << 60) + 1), PageallocError::BadRange),
            (pagealloc_map_set_cpus(map, 1, u32::MAX), PageallocError::TooManyCpus),
            (pagealloc_map_add_cma_range(map, 100, 200), PageallocError::BadMap),
            (pagealloc_map_set_zone_limits(map, 4096, 1024), PageallocError::BadArgument),
        ];
        for (got, want) in cases {
            assert_eq!(got, code(want), "{want:?}");
        }
        assert_eq!(pagealloc_map_add_movable_range(map, 1, 64 << 20, 96 << 20), PAGEALLOC_OK);
        assert_eq!(pagealloc_map_set_cpus(map, 1, 1), PAGEALLOC_OK);
        assert_eq!(pagealloc_map_add_cma_range(map, 2048, 4096), PAGEALLOC_OK);
        assert_eq!(pagealloc_new(map, c"modern".as_ptr(), &mut pa), PAGEALLOC_OK);
        pagealloc_map_free(map);
        let (mut managed, mut cpus) = (0, 0);
        assert_eq!(pagealloc_managed_pages(pa, &mut managed), PAGEALLOC_OK);
        assert_eq!(pagealloc_nr_cpus(pa, &mut cpus), PAGEALLOC_OK);
        assert_eq!(cpus, 3);
        assert!(managed > (32 << 20) / 4096 && managed <= (64 << 20) / 4096, "{managed}");
        // Movable memory serves movable requests.
        let mut pfn = 0;
        let gfp = PAGEALLOC_GFP_HIGHUSER_MOVABLE;
        assert_eq!(pagealloc_alloc(pa, 2, gfp, 9, &mut pfn), PAGEALLOC_OK);
        assert_eq!(pagealloc_validate(pa), PAGEALLOC_OK);
        pagealloc_destroy(pa);
    }
}

#[test]
fn names_are_listed_and_copied_as_snprintf_does() {
    unsafe {
        let mut buf = [0 as c_char; 64];
        assert_eq!(pagealloc_preset_name(0, buf.as_mut_ptr(), buf.len()), 6);
        assert_eq!(CStr::from_ptr(buf.as_ptr()), c"modern");
        assert_eq!(pagealloc_counter_name(0, null_mut(), 0), "pgalloc_dma".len() as c_int);
        assert_eq!(pagealloc_counter_name(0, buf.as_mut_ptr(), 5), 11);
        assert_eq!(CStr::from_ptr(buf.as_ptr()), c"pgal");
        assert_eq!(pagealloc_counter_name(0, null_mut(), 5), code(PageallocError::NullPointer));

        // Every counter named by the list can be read, and every preset built.
        let pa = build(c"modern");
        let mut i = 0;
        while pagealloc_counter_name(i, buf.as_mut_ptr(), buf.len()) >= 0 {
            let mut v = u64::MAX;
            assert_eq!(pagealloc_counter(pa, buf.as_ptr(), &mut v), PAGEALLOC_OK);
            i += 1;
        }
        assert!(i > 40, "{i} counters");
        pagealloc_destroy(pa);
        let mut i = 0;
        while pagealloc_preset_name(i, buf.as_mut_ptr(), buf.len()) >= 0 {
            pagealloc_destroy(build(CStr::from_ptr(buf.as_ptr())));
            i += 1;
        }
        assert_eq!(
            pagealloc_preset_name(i, buf.as_mut_ptr(), 64),
            code(PageallocError::BadArgument)
        );
        assert_eq!(CStr::from_ptr(pagealloc_version()).to_str(), Ok(env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn every_code_has_a_name() {
    let name = |c: c_int| unsafe { CStr::from_ptr(pagealloc_strerror(c)) }.to_str().unwrap();
    assert_eq!(name(PAGEALLOC_OK), "success");
    assert_eq!(name(code(PageallocError::DoubleFree)), "double free");
    assert_eq!(name(1), "unknown error code");
    assert_eq!(name(c_int::MIN), "unknown error code");
    let mut seen = std::collections::HashSet::new();
    for c in -27..=-1 {
        assert_ne!(name(c), "unknown error code", "{c}");
        assert!(seen.insert(name(c)), "{c}: {} twice", name(c));
    }
    assert_eq!(name(-28), "unknown error code");
}

/// The allocator is shared by threads, each on its own CPU, as the header promises; the last
/// error message is each thread's own.
#[test]
fn threads_share_an_allocator() {
    struct Shared(*mut Pagealloc);
    // SAFETY: the header says a `struct pagealloc` may be used from any thread at once.
    unsafe impl Sync for Shared {}
    let pa = Shared(build(c"modern"));
    std::thread::scope(|s| {
        for cpu in 0..4u32 {
            let pa = &pa;
            s.spawn(move || unsafe {
                let mut pfns = Vec::new();
                for i in 0..500u32 {
                    let mut pfn = 0;
                    let order = i % 4;
                    assert_eq!(
                        pagealloc_alloc(pa.0, cpu, PAGEALLOC_GFP_KERNEL, order, &mut pfn),
                        0
                    );
                    pfns.push((pfn, order));
                    if i % 3 == 0 {
                        let (p, o) = pfns.swap_remove(pfns.len() / 2);
                        assert_eq!(pagealloc_free(pa.0, cpu, p, o), PAGEALLOC_OK);
                    }
                }
                // A bad free on this thread: its message is this thread's.
                let mut b = 0;
                assert_eq!(pagealloc_alloc(pa.0, cpu, PAGEALLOC_GFP_KERNEL, 1, &mut b), 0);
                let tail = code(PageallocError::TailPage);
                assert_eq!(pagealloc_free(pa.0, cpu, b + 1, 0), tail);
                assert_eq!(
                    last_error(),
                    format!("pfn {:#x} is a tail page of the block at {b:#x}", b + 1)
                );
                pfns.push((b, 1));
                for (p, o) in pfns {
                    assert_eq!(pagealloc_free(pa.0, (cpu + 1) % 4, p, o), PAGEALLOC_OK);
                }
            });
        }
    });
    unsafe {
        assert_eq!(pagealloc_drain_all(pa.0, 0), PAGEALLOC_OK);
        let mut managed = 0;
        assert_eq!(pagealloc_managed_pages(pa.0, &mut managed), PAGEALLOC_OK);
        assert_eq!(free_pages(pa.0), managed);
        assert_eq!(pagealloc_validate(pa.0), PAGEALLOC_OK);
        pagealloc_destroy(pa.0);
    }
}
