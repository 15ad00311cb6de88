/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * demo.c: the C API of pagealloc from C, through include/pagealloc.h alone. It describes a
 * machine, builds an allocator, allocates and frees, provokes a double free and checks its
 * code, reads counters and destroys the allocator.
 *
 * pagealloc_demo() returns 0 when every step did what the header promises, or the number of
 * the first step that did not (and says why on stderr). Built on its own it is a program:
 *
 *   cargo build --release -p pagealloc-ffi
 *   cc -std=c99 -Wall -Wextra -I crates/pagealloc-ffi/include \
 *       crates/pagealloc-ffi/examples/c/demo.c target/release/libpagealloc_ffi.a \
 *       -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o demo && ./demo
 *
 * The workspace's tests compile it with PAGEALLOC_DEMO_NO_MAIN and call pagealloc_demo()
 * (crates/pagealloc-ffi-ctest).
 */

#include <inttypes.h>
#include <stdio.h>

#include "pagealloc.h"

/* Step `n` must hold, or the demo stops there and says which call broke its promise. */
#define CHECK(n, cond)                                                                   \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            char msg_[256];                                                              \
            pagealloc_last_error_message(msg_, sizeof msg_);                             \
            fprintf(stderr, "demo.c step %d: %s failed (last error: %s)\n", (n), #cond, \
                    msg_);                                                               \
            return (n);                                                                  \
        }                                                                                \
    } while (0)

static int run(struct pagealloc *pa)
{
    uint64_t managed, free_pages, pfn, dma, counter;
    char msg[256];
    int err;

    CHECK(10, pagealloc_managed_pages(pa, &managed) == PAGEALLOC_OK);
    CHECK(11, pagealloc_nr_free_pages(pa, &free_pages) == PAGEALLOC_OK);
    CHECK(12, free_pages == managed);

    /* Eight contiguous frames on CPU 1, aligned to eight frames. */
    CHECK(20, pagealloc_alloc(pa, 1, PAGEALLOC_GFP_KERNEL, 3, &pfn) == PAGEALLOC_OK);
    CHECK(21, pfn % 8 == 0);
    /* One frame a 24-bit DMA engine can reach: below 16 MiB. */
    CHECK(22, pagealloc_alloc(pa, 0, PAGEALLOC_GFP_KERNEL | PAGEALLOC_GFP_DMA, 0, &dma)
                  == PAGEALLOC_OK);
    CHECK(23, dma * PAGEALLOC_PAGE_SIZE < (16u << 20));

    /* Bad frees are refused with their own codes and change nothing. */
    CHECK(30, pagealloc_free(pa, 1, pfn, 2) == PAGEALLOC_ERR_WRONG_ORDER);
    CHECK(31, pagealloc_free(pa, 1, pfn + 1, 0) == PAGEALLOC_ERR_TAIL_PAGE);
    CHECK(32, pagealloc_free(pa, 7, pfn, 3) == PAGEALLOC_ERR_BAD_CPU);
    CHECK(33, pagealloc_validate(pa) == PAGEALLOC_OK);

    CHECK(40, pagealloc_free(pa, 1, pfn, 3) == PAGEALLOC_OK);
    CHECK(41, pagealloc_free(pa, 0, dma, 0) == PAGEALLOC_OK);

    /* The double free. */
    err = pagealloc_free(pa, 1, pfn, 3);
    CHECK(50, err == PAGEALLOC_ERR_DOUBLE_FREE);
    pagealloc_last_error_message(msg, sizeof msg);
    printf("demo.c: freeing pfn %" PRIu64 " again: %d, %s (%s)\n", pfn, err,
           pagealloc_strerror(err), msg);
    CHECK(51, pagealloc_validate(pa) == PAGEALLOC_OK);

    /* Small frees wait on the CPUs' pagesets; a drain gives every page back. */
    CHECK(60, pagealloc_drain_all(pa, 0) == PAGEALLOC_OK);
    CHECK(61, pagealloc_nr_free_pages(pa, &free_pages) == PAGEALLOC_OK);
    CHECK(62, free_pages == managed);
    CHECK(63, pagealloc_counter(pa, "pgfree", &counter) == PAGEALLOC_OK);
    CHECK(64, counter == 9);
    CHECK(65, pagealloc_counter(pa, "no_such_counter", &counter)
                  == PAGEALLOC_ERR_UNKNOWN_COUNTER);
    return 0;
}

int pagealloc_demo(void)
{
    struct pagealloc_map *map = pagealloc_map_new();
    struct pagealloc *pa = NULL;
    int result;

    CHECK(1, map != NULL);
    /* Node 0: low memory below the ISA hole, then 1 MiB to 64 MiB; two CPUs. */
    CHECK(2, pagealloc_map_add_range(map, 0, 0x1000, 0x9f000) == PAGEALLOC_OK);
    CHECK(3, pagealloc_map_add_range(map, 0, 0x100000, 64u << 20) == PAGEALLOC_OK);
    CHECK(4, pagealloc_map_add_range(map, 0, 0x80000, 0x200000) == PAGEALLOC_ERR_OVERLAP);
    CHECK(5, pagealloc_map_set_cpus(map, 0, 2) == PAGEALLOC_OK);
    CHECK(6, pagealloc_new(map, "linux-9.9", &pa) == PAGEALLOC_ERR_UNKNOWN_PRESET && !pa);
    CHECK(7, pagealloc_new(map, "modern", &pa) == PAGEALLOC_OK && pa);
    pagealloc_map_free(map); /* the allocator keeps its own copy */

    result = run(pa);
    pagealloc_destroy(pa);
    return result;
}

#ifndef PAGEALLOC_DEMO_NO_MAIN
int main(void)
{
    int result = pagealloc_demo();
    printf("demo.c: %s\n", result == 0 ? "ok" : "FAILED");
    return result;
}
#endif
