/*
 * Where does this host have the machine's CPUs? The probe behind docs/performance.md,
 * "Where the slow spells come from".
 *
 *   gcc -O2 -pthread -o placement-probe scripts/placement-probe.c
 *   ./placement-probe          # one CPU's speed, then a line's trip between CPUs 0 and 1
 *
 * Part one times one CPU alone: a multiply-add loop, a loop over an array the size of a
 * quarter L2 (256 KiB), and a sweep of one word per line over 256 MiB. Part two pins two
 * threads to CPUs 0 and 1 and ping-pongs a flag between them 200 000 times: the mean time of
 * a one-way trip. On the lab's VM part one read the same whether its host had put the two
 * CPUs on cores that share a cache or on cores that do not, and part two read 46-69 ns in
 * the first case and 207-225 ns in the second.
 *
 * The lab's own probe of the same thing is `calibrate::core_to_core_ns` (the median of
 * windows, the method of `c2c_same_llc_ns`), which `validate`, `run --runner real` and
 * `bench` take around their runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIPS 200000L

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static _Alignas(64) atomic_long flag;

static void *partner(void *unused)
{
	(void)unused;
	pin(1);
	for (long i = 0; i < TRIPS; i++) {
		while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

int main(void)
{
	volatile uint64_t sink = 0;

	/* Part one: one CPU alone. */
	double t0 = now();
	uint64_t x = 1;
	for (long i = 0; i < 200000000L; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink += x;
	double t1 = now();

	size_t n = 256 * 1024 / 8;
	uint64_t *a = malloc(n * 8);
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		a[i] = i;
	double t2 = now();
	for (int r = 0; r < 2000; r++)
		for (size_t i = 0; i < n; i++) {
			a[i] += r;
			s += a[i];
		}
	sink += s;
	double t3 = now();

	size_t m = 256UL * 1024 * 1024 / 8;
	uint64_t *b = malloc(m * 8);
	for (size_t i = 0; i < m; i++)
		b[i] = i;
	double t4 = now();
	for (int r = 0; r < 2; r++)
		for (size_t i = 0; i < m; i += 8)
			b[i] += r;
	double t5 = now();
	printf("one CPU: %.3f ns an iteration, %.3f ns a word (L2), %.2f ns a line (256 MiB)\n",
	       (t1 - t0) / 2e8 * 1e9, (t3 - t2) / (2000.0 * n) * 1e9,
	       (t5 - t4) / (2.0 * m / 8) * 1e9);

	/* Part two: a line between CPUs 0 and 1. */
	pthread_t t;
	pthread_create(&t, NULL, partner, NULL);
	pin(0);
	double t6 = now();
	for (long i = 0; i < TRIPS; i++) {
		atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2)
			;
	}
	double t7 = now();
	pthread_join(t, NULL);
	printf("between CPUs 0 and 1: %.1f ns one way (mean of %ld round trips)\n",
	       (t7 - t6) / TRIPS / 2 * 1e9, TRIPS);
	free(a);
	free(b);
	return sink == 42 ? 1 : 0;
}
