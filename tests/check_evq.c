/* check_evq: event ordering, tombstones, and the hash map beneath. */
#include <check.h>
#include <stdint.h>

#include "sim/evq.h"
#include "sim/hmap.h"
#include "tests/suites.h"

START_TEST(equal_times_pop_in_insertion_order)
{
	struct evq q;
	evq_init(&q);
	/* 100 events at 5 distinct times, pushed in a scrambled time order. */
	for (int i = 0; i < 100; i++)
		ck_assert_uint_ne(evq_push(&q, (int64_t)((i * 7) % 5) * 10, 0, i, NULL), 0);
	struct event ev;
	int64_t last_t = -1;
	int last_node = -1, popped = 0;
	while (evq_pop(&q, &ev)) {
		if (ev.time_ns == last_t)
			ck_assert_int_gt(ev.node, last_node); /* inserted earlier -> first */
		else
			ck_assert_int_gt(ev.time_ns, last_t);
		last_t = ev.time_ns;
		last_node = ev.node;
		popped++;
	}
	ck_assert_int_eq(popped, 100);
	evq_free(&q);
}
END_TEST

/* Time order; a popped event pushed again under its own seq keeps its
 * place among equal times and is counted as delivered once. */
START_TEST(time_order_and_repush)
{
	struct evq q;
	evq_init(&q);
	evq_push(&q, 30, 1, 0, NULL);
	evq_push(&q, 10, 2, 0, NULL);
	evq_push(&q, 20, 3, 0, NULL);
	evq_push(&q, 10, 4, 0, NULL);
	struct event ev;
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert_int_eq(ev.kind, 2);
	ck_assert_int_eq(evq_repush(&q, &ev, 20), 0); /* seq 2: before kind 3's seq 3 */
	int kinds[4], n = 0;
	while (evq_pop(&q, &ev))
		kinds[n++] = ev.kind;
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(kinds[0], 4);
	ck_assert_int_eq(kinds[1], 2);
	ck_assert_int_eq(kinds[2], 3);
	ck_assert_int_eq(kinds[3], 1);
	ck_assert_uint_eq(q.popped, 4);
	evq_free(&q);
}
END_TEST

START_TEST(hmap_put_get_del_many)
{
	struct hmap m;
	hmap_init(&m);
	for (uint64_t k = 1; k <= 20000; k++)
		ck_assert_int_eq(hmap_put(&m, k * 64, k), 1); /* clustered keys */
	ck_assert_int_eq(hmap_put(&m, 64, 99), 0);
	ck_assert_uint_eq(m.count, 20000);
	for (uint64_t k = 2; k <= 20000; k += 2)
		ck_assert_int_eq(hmap_del(&m, k * 64), 1);
	ck_assert_int_eq(hmap_del(&m, 128), 0);
	ck_assert_uint_eq(m.count, 10000);
	for (uint64_t k = 1; k <= 20000; k++) {
		uint64_t *v = hmap_get(&m, k * 64);
		if (k % 2 == 0) {
			ck_assert_ptr_null(v);
		} else {
			ck_assert_ptr_nonnull(v);
			ck_assert_uint_eq(*v, k == 1 ? 99 : k);
		}
	}
	hmap_free(&m);
}
END_TEST

Suite *evq_suite(void)
{
	Suite *s = suite_create("evq");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, equal_times_pop_in_insertion_order);
	tcase_add_test(tc, time_order_and_repush);
	tcase_add_test(tc, hmap_put_get_del_many);
	suite_add_tcase(s, tc);
	return s;
}
