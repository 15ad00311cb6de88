/*
 * What does a whole-page write cost on this host, written as the lab's workloads write
 * pages: a few at a time, with other work between? The probe behind docs/performance.md,
 * "The real runner writes its pages whole" (what is left).
 *
 *   gcc -O2 -pthread -o page-write-probe scripts/page-write-probe.c
 *   ./page-write-probe one REGION_PAGES BURST SPIN BURSTS [whole]
 *   ./page-write-probe two REGION_PAGES BURST TURNS [whole]
 *
 * `one`: one thread writes the pages of a region in a shuffled order (memset, which glibc
 * does with `rep stosb` for a 4 KiB page on a CPU with ERMS), BURST pages at a time, each
 * burst timed between two fences, then spins SPIN iterations; the region is written twice
 * first. 64 pages stay in a 1 MiB L2; 1024 (4 MiB) are four L2s, in the LLC.
 * `two`: two threads take turns writing BURST pages of the region each, the timed thread's
 * pages always the ones the other wrote just before (a line from another core's cache).
 * With `whole`, a burst is BURST contiguous pages written by one memset (one fast string, as
 * the kernel copies a packet of several pages), the region cut into slots of BURST pages in
 * a shuffled order; without it, each page is its own memset, as `calibrate` writes them.
 * Each prints the 10th, 50th and 90th percentiles of ns per page, less an empty timed
 * window. The clock is CLOCK_MONOTONIC; on the lab's VM its reads come in 10 ns steps, so
 * time bursts of 4 pages or more.
 *
 * On the lab's VM (2026-11-29 12:50-13:05 UTC, its two CPUs on cores that share a cache):
 * `one 64 4 0` 30 ns, `one 1024 4 0` and `one 1024 16 2000` 45 ns, `two 64 4 20000` and
 * `two 64 64 5000` 62.5-70 ns a page (40 ns for one minute; 225-253 ns with the CPUs
 * apart). The lab's real runner, timed in place, wrote pages the other CPU had written last
 * at 37-45 ns, four pages to one fast string. With `whole` (13:48-13:50): `two 64 4 5000
 * whole` 47.5 ns a page against 70.0 without, `one 1024 4 0 20000 whole` 35.0 against
 * 45.2, `one 1024 8 0 20000 whole` 33.8 against 46.2 (docs/performance.md).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 4096

static char *region;
static size_t *order;
static long region_pages, burst, rounds;
static int whole;
static _Atomic int turn;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void fence(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Write BURST pages from position *at of the shuffled order, moving *at on: one memset
 * each, or with `whole` one memset over the BURST contiguous pages of slot order[*at]. */
static void write_burst(size_t *at, int value)
{
	if (whole) {
		memset(region + order[*at] * burst * PAGE, value, burst * PAGE);
		*at = (*at + 1) % (region_pages / burst);
		return;
	}
	for (long i = 0; i < burst; i++) {
		memset(region + order[*at] * PAGE, value, PAGE);
		*at = (*at + 1) % region_pages;
	}
}

/* The median cost of an empty fenced window, ns. */
static double empty_window(void)
{
	double e[1001];
	for (int i = 0; i < 1001; i++) {
		fence();
		double a = now();
		fence();
		e[i] = now() - a;
	}
	qsort(e, 1001, sizeof e[0], by_value);
	return e[500];
}

static void *partner(void *unused)
{
	size_t at = 0;
	(void)unused;
	for (long t = 0; t < rounds; t++) {
		while (atomic_load_explicit(&turn, memory_order_acquire) != 1)
			;
		write_burst(&at, (int)t);
		atomic_store_explicit(&turn, 0, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	whole = argc > 1 && strcmp(argv[argc - 1], "whole") == 0;
	int args = argc - whole;
	int two = args == 5 && strcmp(argv[1], "two") == 0;
	if (!two && !(args == 6 && strcmp(argv[1], "one") == 0)) {
		fprintf(stderr, "usage: %s one REGION_PAGES BURST SPIN BURSTS [whole]\n"
				"       %s two REGION_PAGES BURST TURNS [whole]\n", argv[0], argv[0]);
		return 2;
	}
	region_pages = atol(argv[2]);
	burst = atol(argv[3]);
	long spin = two ? 0 : atol(argv[4]);
	rounds = atol(argv[two ? 4 : 5]);
	if (region_pages < 1 || burst < 1 || rounds < 10 || spin < 0 || burst > region_pages) {
		fprintf(stderr, "region, burst and spin must be positive, the burst at most the "
				"region, rounds at least 10\n");
		return 2;
	}
	long slots = whole ? region_pages / burst : region_pages;
	region = aligned_alloc(PAGE, region_pages * PAGE);
	order = malloc(region_pages * sizeof *order);
	double *ns = malloc(rounds * sizeof *ns);
	if (!region || !order || !ns)
		return 1;
	for (long i = 0; i < slots; i++)
		order[i] = i;
	srand(1);
	for (long i = slots - 1; i > 0; i--) {
		long j = rand() % (i + 1);
		size_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (int pass = 0; pass < 2; pass++)
		memset(region, pass + 1, region_pages * PAGE);
	double empty = empty_window();
	pthread_t other;
	if (two) {
		atomic_store(&turn, 1);
		pthread_create(&other, NULL, partner, NULL);
	}
	size_t at = 0;
	volatile long sink = 0;
	for (long r = 0; r < rounds; r++) {
		if (two)
			while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
				;
		fence();
		double a = now();
		write_burst(&at, (int)r + 100);
		fence();
		ns[r] = (now() - a - empty) / burst;
		if (two)
			atomic_store_explicit(&turn, 1, memory_order_release);
		for (long k = 0; k < spin; k++)
			sink += k;
	}
	if (two)
		pthread_join(other, NULL);
	qsort(ns, rounds, sizeof ns[0], by_value);
	printf("%s: region %ld KiB, %ld pages a burst: ns a page p10 %.1f median %.1f p90 %.1f\n",
	       two ? "two threads" : "one thread", region_pages * 4, burst, ns[rounds / 10],
	       ns[rounds / 2], ns[rounds * 9 / 10]);
	return 0;
}
