/* check_kv: block pool accounting, prefix hits, LRU eviction order. */
#include <check.h>

#include "sim/kv.h"
#include "tests/suites.h"

static void assert_conserved(const struct kv_pool *p)
{
	ck_assert_uint_eq(p->n_free + p->n_lru + p->n_used, p->n_blocks);
}

START_TEST(alloc_free_hit_evict)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 4), 0);
	uint32_t a = kv_alloc(&p), b = kv_alloc(&p);
	ck_assert_uint_eq(a, 0);
	ck_assert_uint_eq(b, 1);
	ck_assert_uint_eq(p.n_used, 2);
	ck_assert_uint_eq(kv_available(&p), 2);
	ck_assert_int_eq(kv_register(&p, a, 111), 1);
	ck_assert_int_eq(kv_register(&p, b, 222), 1);
	ck_assert_int_eq(kv_register(&p, b, 333), 0); /* already hashed */
	/* Release in reverse order, as a finished request does: b, then a. */
	kv_release(&p, b);
	kv_release(&p, a);
	ck_assert_uint_eq(p.n_used, 0);
	ck_assert_uint_eq(p.n_lru, 2);
	ck_assert_uint_eq(p.n_free, 2);
	assert_conserved(&p);

	uint64_t chain[3] = {111, 222, 444};
	uint32_t in_lru;
	ck_assert_uint_eq(kv_match(&p, chain, 3, &in_lru, NULL), 2);
	ck_assert_uint_eq(in_lru, 2);
	uint64_t broken[2] = {999, 222};
	ck_assert_uint_eq(kv_match(&p, broken, 2, NULL, NULL), 0); /* prefix, not set, match */

	kv_ref(&p, kv_lookup(&p, 111)); /* a prefix hit on block a */
	ck_assert_uint_eq(p.n_lru, 1);
	ck_assert_uint_eq(p.n_used, 1);
	ck_assert_uint_eq(kv_alloc(&p), 2);
	ck_assert_uint_eq(kv_alloc(&p), 3);
	ck_assert_uint_eq(p.evictions, 0);
	/* Free list empty: the LRU block (b, released first) is evicted. */
	ck_assert_uint_eq(kv_alloc(&p), 1);
	ck_assert_uint_eq(p.evictions, 1);
	ck_assert_uint_eq(kv_lookup(&p, 222), KV_NONE);
	ck_assert_uint_eq(kv_lookup(&p, 111), 0);
	ck_assert_uint_eq(kv_alloc(&p), KV_NONE);
	ck_assert_uint_eq(p.n_used, 4);
	assert_conserved(&p);
	kv_free(&p);
}
END_TEST

START_TEST(duplicate_hash_stays_unhashed_and_frees)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 3), 0);
	uint32_t a = kv_alloc(&p), b = kv_alloc(&p);
	ck_assert_int_eq(kv_register(&p, a, 7), 1);
	ck_assert_int_eq(kv_register(&p, b, 7), 0); /* same content computed twice */
	kv_release(&p, b);
	ck_assert_uint_eq(p.n_free, 2); /* unhashed -> free, not cached */
	kv_release(&p, a);
	ck_assert_uint_eq(p.n_lru, 1);
	/* A shared block: two references, cached only when both are gone. */
	kv_ref(&p, a);
	kv_ref(&p, a);
	ck_assert_uint_eq(p.blk[a].ref, 2);
	kv_release(&p, a);
	ck_assert_uint_eq(p.n_lru, 0);
	kv_release(&p, a);
	ck_assert_uint_eq(p.n_lru, 1);
	ck_assert_int_eq(kv_insert_cached(&p, 7), 0);
	ck_assert_int_eq(kv_insert_cached(&p, 8), 1);
	ck_assert_uint_eq(p.n_lru, 2);
	assert_conserved(&p);
	kv_free(&p);
}
END_TEST

Suite *kv_suite(void)
{
	Suite *s = suite_create("kv");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, alloc_free_hit_evict);
	tcase_add_test(tc, duplicate_hash_stays_unhashed_and_frees);
	suite_add_tcase(s, tc);
	return s;
}
