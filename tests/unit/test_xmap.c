// SPDX-License-Identifier: MIT
/*
 * Unit tests of the ordered map: an empty map, floor/successor at the
 * edges, duplicates refused, and a long random run of inserts and
 * removals checked after every step against a plain sorted array (with
 * enough entries to split and merge many chunks).
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "xmap.h"

static void test_empty_and_edges(void)
{
	struct xmap m;
	uint64_t k;
	void *v;
	int a, b;

	xmap_init(&m);
	CHECK(!xmap_floor(&m, 5, &k, &v));
	CHECK(!xmap_higher(&m, 5, &k, &v));
	CHECK(xmap_remove(&m, 5) == NULL);
	CHECK_INT(xmap_insert(&m, 10, &a), 0);
	CHECK_INT(xmap_insert(&m, 20, &b), 0);
	CHECK_INT(xmap_insert(&m, 10, &b), -EEXIST);
	CHECK(!xmap_floor(&m, 9, &k, &v));
	CHECK(xmap_floor(&m, 10, &k, &v) && k == 10 && v == &a);
	CHECK(xmap_floor(&m, 19, &k, &v) && k == 10);
	CHECK(xmap_floor(&m, UINT64_MAX, &k, &v) && k == 20 && v == &b);
	CHECK(xmap_higher(&m, 0, &k, &v) && k == 10);
	CHECK(xmap_higher(&m, 10, &k, &v) && k == 20);
	CHECK(!xmap_higher(&m, 20, &k, &v));
	CHECK(xmap_remove(&m, 10) == &a);
	CHECK(xmap_remove(&m, 10) == NULL);
	CHECK_INT((int)xmap_count(&m), 1);
	xmap_release(&m);
}

/* The reference: a sorted array of keys. */
static size_t ref_upper(const uint64_t *r, size_t n, uint64_t k)
{
	size_t i = 0;

	while (i < n && r[i] <= k)
		i++;
	return i;
}

static void check_against(const struct xmap *m, const uint64_t *r, size_t n,
			  uint64_t probe, int *bad)
{
	size_t u = ref_upper(r, n, probe);
	uint64_t k = 0;
	void *v = NULL;
	bool f = xmap_floor(m, probe, &k, &v);

	if (f != (u > 0) || (f && (k != r[u - 1] || v != (void *)(uintptr_t)k)))
		(*bad)++;
	f = xmap_higher(m, probe, &k, &v);
	if (f != (u < n) || (f && (k != r[u] || v != (void *)(uintptr_t)k)))
		(*bad)++;
	if (xmap_count(m) != n)
		(*bad)++;
}

static void test_random_against_array(void)
{
	enum { N = 4000, KEYS = 6000 };
	uint64_t *r = calloc(N, sizeof(*r));
	struct xmap m;
	size_t n = 0;
	int bad = 0;

	xmap_init(&m);
	srand(7);
	for (int step = 0; step < 60000; step++) {
		uint64_t k = (uint64_t)(rand() % KEYS) * 4096 + 1;
		size_t u = ref_upper(r, n, k);
		bool present = u > 0 && r[u - 1] == k;
		/* Grow to about N entries, then hover there. */
		bool add = n < N / 2 ? rand() % 4 != 0 : rand() % 2 == 0;

		if (add && !present && n < N) {
			if (xmap_insert(&m, k, (void *)(uintptr_t)k) != 0)
				bad++;
			memmove(&r[u + 1], &r[u], (n - u) * sizeof(*r));
			r[u] = k;
			n++;
		} else if (!add) {
			void *v = xmap_remove(&m, k);

			if (present != (v != NULL))
				bad++;
			if (present) {
				memmove(&r[u - 1], &r[u], (n - u) * sizeof(*r));
				n--;
			}
		}
		check_against(&m, r, n, (uint64_t)(rand() % KEYS) * 4096, &bad);
		check_against(&m, r, n, k, &bad);
	}
	CHECK_INT(bad, 0);
	/* Empty it completely: every chunk goes away. */
	while (n > 0) {
		if (xmap_remove(&m, r[n - 1]) == NULL)
			bad++;
		n--;
	}
	CHECK_INT(bad, 0);
	CHECK_INT((int)m.nc, 0);
	xmap_release(&m);
	free(r);
}

int main(void)
{
	test_empty_and_edges();
	test_random_against_array();
	return check_summary("xmap");
}
