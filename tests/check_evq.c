/* check_evq: event ordering, payloads, timers, the hash map and the huge-page tunable. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "base/evq.h"
#include "base/hmap.h"
#include "base/hugepages.h"
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
/* An event's payload (tag, node or id, ptr) comes back as pushed, through
 * the heap's moves and a repush; a timer's event has tag 0 and its slot. */
START_TEST(payload_survives_heap_and_repush)
{
	struct evq q;
	evq_init(&q);
	ck_assert_int_eq(evq_timers(&q, 4, 7), 0);
	int x;
	/* ids past 2^20 (nodes go to a million) and the largest tag */
	for (uint32_t i = 0; i < 50; i++)
		ck_assert_uint_ne(evq_push_tag(&q, (int64_t)(50 - i), 3, (uint16_t)(i * 1000 + 535),
					       (int32_t)(i * 40000 + 1048577), i == 7 ? &x : NULL),
				  0);
	ck_assert_uint_ne(evq_push_tag(&q, 100, 2, UINT16_MAX, -1, NULL), 0);
	ck_assert_uint_ne(evq_timer_set(&q, 3, 25), 0);
	struct event ev;
	uint32_t seen = 0;
	while (evq_pop(&q, &ev)) {
		if (ev.kind == 7) { /* the timer, at 25 before the push there */
			ck_assert(ev.time_ns == 25 && ev.tag == 0 && ev.node == 3 && !ev.ptr);
			evq_timer_cancel(&q, 3);
			continue;
		}
		if (ev.kind == 2) {
			ck_assert(ev.tag == UINT16_MAX && ev.node == -1);
			continue;
		}
		uint32_t i = ev.time_ns == 60 ? 9 : 50 - (uint32_t)ev.time_ns; /* 60: repushed */
		ck_assert_uint_eq(ev.tag, i * 1000 + 535);
		ck_assert_uint_eq(ev.id, i * 40000 + 1048577);
		ck_assert_ptr_eq(ev.ptr, i == 7 ? &x : NULL);
		if (i == 9 && !(seen & 1u << 31)) {
			seen |= 1u << 31; /* once: later, with the same payload */
			ck_assert_int_eq(evq_repush(&q, &ev, 60), 0);
			continue;
		}
		seen++;
	}
	ck_assert_uint_eq(seen & 0xffff, 50);
	evq_free(&q);
}
END_TEST

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

/* Timers pop among pushed events by time, before pushed events of the
 * same time and in slot order among themselves (so that when two nodes'
 * steps end at once the order does not depend on when each was set, which
 * differs between decode spans and one event per iteration); setting one
 * again replaces its event, a popped one set again at once or repushed
 * keeps to the same rule, and a cancelled one never pops. */
START_TEST(timers_replace_in_place)
{
	struct evq q;
	evq_init(&q);
	ck_assert_int_eq(evq_timers(&q, 3, 9), 0);
	ck_assert_uint_eq(evq_timer_set(&q, 3, 5), 0); /* no slot 3 */
	evq_push(&q, 20, 1, -1, NULL);                   /* seq 1 */
	ck_assert_uint_eq(evq_timer_set(&q, 0, 50), 2);
	ck_assert_uint_eq(evq_timer_set(&q, 1, 20), 3); /* before seq 1 at 20 */
	ck_assert_uint_eq(evq_timer_set(&q, 2, 40), 4);
	ck_assert_uint_eq(evq_timer_set(&q, 0, 10), 5); /* replaces 50 */
	evq_timer_cancel(&q, 2);
	ck_assert_uint_eq(evq_size(&q), 3);
	struct event ev;
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 10 && ev.kind == 9 && ev.node == 0 && ev.seq == 5);
	ck_assert_uint_eq(evq_size(&q), 2);
	ck_assert_uint_eq(evq_timer_set(&q, 0, 20), 6); /* at once: slot 0 before slot 1 */
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 20 && ev.node == 0 && ev.kind == 9 && ev.seq == 6);
	/* timer 0 fired and is not set again: it pops no more */
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 20 && ev.node == 1 && ev.seq == 3);
	ck_assert_int_eq(evq_repush(&q, &ev, 30), 0); /* timer 1 again, seq 3 */
	evq_push(&q, 30, 2, -1, NULL);                 /* seq 7: after it */
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 20 && ev.kind == 1 && ev.seq == 1);
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 30 && ev.node == 1 && ev.seq == 3);
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.time_ns == 30 && ev.kind == 2 && ev.seq == 7);
	ck_assert_int_eq(evq_pop(&q, &ev), 0);
	ck_assert_uint_eq(evq_size(&q), 0);
	ck_assert_uint_eq(q.popped, 5); /* the repushed pop is not a delivery */
	evq_free(&q);
}
END_TEST

/* The tree's winners start inside their subtrees: a slot set late in one
 * half pops before an earlier-set slot of the other half set again later. */
START_TEST(timers_in_both_halves)
{
	struct evq q;
	evq_init(&q);
	ck_assert_int_eq(evq_timers(&q, 8, 3), 0);
	evq_timer_set(&q, 0, 10);
	evq_timer_set(&q, 5, 20);
	struct event ev;
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.node == 0 && ev.time_ns == 10);
	evq_timer_set(&q, 0, 30);
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.node == 5 && ev.time_ns == 20);
	ck_assert_int_eq(evq_pop(&q, &ev), 1);
	ck_assert(ev.node == 0 && ev.time_ns == 30);
	ck_assert_int_eq(evq_pop(&q, &ev), 0);
	evq_free(&q);
}
END_TEST

/* Random sets, cancels, repushes and pushes against a reference list
 * popped by scanning: the earliest time; at equal times timers first, in
 * slot order, then pushed events in seq order. */
struct ref_ev {
	int64_t time_ns;
	uint64_t seq;
	int kind;
	int32_t node;
};

static int ref_before(const struct ref_ev *a, const struct ref_ev *b, int timer_kind)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	int ta = a->kind == timer_kind, tb = b->kind == timer_kind;
	if (ta != tb)
		return ta;
	return ta ? a->node < b->node : a->seq < b->seq;
}

START_TEST(timers_match_pushed_events_with_stale_skipping)
{
	enum { SLOTS = 37, OPS = 20000, CAP = 4096 };
	struct evq a;
	evq_init(&a);
	ck_assert_int_eq(evq_timers(&a, SLOTS, 7), 0);
	static struct ref_ev ref[CAP];
	size_t n_ref = 0;
	int32_t timer_at[SLOTS]; /* the slot's entry in ref, or -1 */
	for (int i = 0; i < SLOTS; i++)
		timer_at[i] = -1;
	uint64_t x = 88172645463325252ull;
	int64_t now = 0;
	size_t delivered = 0, tied = 0;
	for (int op = 0; op < OPS; op++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t slot = (uint32_t)(x % SLOTS), what = (uint32_t)(x >> 32) % 10;
		int64_t t = now + (int64_t)((x >> 16) % 64); /* ties happen */
		if (what < 4) {
			uint64_t sa = evq_timer_set(&a, slot, t);
			ck_assert_uint_ne(sa, 0);
			struct ref_ev e = {t, sa, 7, (int32_t)slot};
			if (timer_at[slot] >= 0) {
				ref[timer_at[slot]] = e;
			} else {
				ck_assert_uint_lt(n_ref, CAP);
				timer_at[slot] = (int32_t)n_ref;
				ref[n_ref++] = e;
			}
		} else if (what == 4) {
			evq_timer_cancel(&a, slot);
			if (timer_at[slot] >= 0) {
				uint32_t k = (uint32_t)timer_at[slot];
				ref[k] = ref[--n_ref];
				if (ref[k].kind == 7 && k < n_ref)
					timer_at[ref[k].node] = (int32_t)k;
				timer_at[slot] = -1;
			}
		} else if (what < 7) {
			uint64_t sa = evq_push(&a, t, 1, (int32_t)slot, NULL);
			ck_assert_uint_ne(sa, 0);
			ck_assert_uint_lt(n_ref, CAP);
			ref[n_ref++] = (struct ref_ev){t, sa, 1, (int32_t)slot};
		} else {
			struct event ea;
			int got_a = evq_pop(&a, &ea);
			ck_assert_int_eq(got_a, n_ref > 0);
			if (!got_a)
				continue;
			size_t best = 0;
			for (size_t k = 1; k < n_ref; k++)
				if (ref_before(&ref[k], &ref[best], 7))
					best = k;
			struct ref_ev eb = ref[best];
			for (size_t k = 0; k < n_ref; k++)
				tied += k != best && ref[k].time_ns == eb.time_ns;
			ref[best] = ref[--n_ref];
			if (best < n_ref && ref[best].kind == 7)
				timer_at[ref[best].node] = (int32_t)best;
			if (eb.kind == 7)
				timer_at[eb.node] = -1;
			ck_assert(ea.time_ns == eb.time_ns && ea.seq == eb.seq && ea.kind == eb.kind &&
				  ea.node == eb.node);
			now = ea.time_ns;
			delivered++;
			if (ea.kind == 7 && what == 9) { /* a span goes on: the same seq, later */
				ck_assert_int_eq(evq_repush(&a, &ea, now + 5), 0);
				timer_at[ea.node] = (int32_t)n_ref;
				ref[n_ref++] = (struct ref_ev){now + 5, ea.seq, 7, ea.node};
				delivered--;
			}
		}
	}
	ck_assert_uint_gt(delivered, 1000);
	ck_assert_uint_gt(tied, 1000); /* ties were there to order */
	evq_free(&a);
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

/* GLIBC_TUNABLES gains glibc.malloc.hugetlb=1 after what it held, unless
 * it names that tunable already (any value: the user's choice stands). */
START_TEST(hugepage_tunable_added_once)
{
	char out[64];
	ck_assert_int_eq(hp_tunables(NULL, out, sizeof out), 0);
	ck_assert_str_eq(out, "glibc.malloc.hugetlb=1");
	ck_assert_int_eq(hp_tunables("", out, sizeof out), 0);
	ck_assert_str_eq(out, "glibc.malloc.hugetlb=1");
	ck_assert_int_eq(hp_tunables("glibc.malloc.tcache_count=0", out, sizeof out), 0);
	ck_assert_str_eq(out, "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1");
	/* a longer name that merely ends in the tunable's is another one */
	ck_assert_int_eq(hp_tunables("x.glibc.malloc.hugetlb=0", out, sizeof out), 0);
	ck_assert_str_eq(out, "x.glibc.malloc.hugetlb=0:glibc.malloc.hugetlb=1");
	strcpy(out, "untouched");
	ck_assert_int_eq(hp_tunables("glibc.malloc.hugetlb=0", out, sizeof out), -1);
	ck_assert_int_eq(hp_tunables("a=1:glibc.malloc.hugetlb=2:b=3", out, sizeof out), -1);
	ck_assert_str_eq(out, "untouched");
	/* 22 characters and the terminator do not fit in 22 bytes */
	ck_assert_int_eq(hp_tunables(NULL, out, 22), -1);
	ck_assert_int_eq(hp_tunables(NULL, out, 23), 0);
}
END_TEST

Suite *evq_suite(void)
{
	Suite *s = suite_create("evq");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, equal_times_pop_in_insertion_order);
	tcase_add_test(tc, payload_survives_heap_and_repush);
	tcase_add_test(tc, time_order_and_repush);
	tcase_add_test(tc, timers_replace_in_place);
	tcase_add_test(tc, timers_in_both_halves);
	tcase_add_test(tc, timers_match_pushed_events_with_stale_skipping);
	tcase_add_test(tc, hmap_put_get_del_many);
	tcase_add_test(tc, hugepage_tunable_added_once);
	suite_add_tcase(s, tc);
	return s;
}
