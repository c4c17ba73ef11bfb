/* check_kv: block accounting, prefix hits, splits, merges, LRU eviction order. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctree.h"
#include "base/hmap.h"
#include "base/hset.h"
#include "model/kv.h"
#include "base/prefix_index.h"
#include "policies/prompt_index.h"
#include "base/rng.h"
#include "tests/suites.h"

static void counts(const struct kv_pool *p, uint32_t free_, uint32_t cached, uint32_t used)
{
	ck_assert_int_eq(kv_check(p), 0);
	ck_assert_uint_eq(p->n_free, free_);
	ck_assert_uint_eq(p->n_cached, cached);
	ck_assert_uint_eq(p->n_used, used);
}

static uint32_t match(const struct kv_pool *p, const uint64_t *h, uint32_t n)
{
	struct kv_match m;
	kv_lookup_prefix(p, h, n, &m);
	return m.blocks;
}

/* kv_lookup_prefix as it was: an index probe after every fully matched
 * run. *probes_saved counts the lookups where that probe found nothing
 * after a run with no children (the probe kv_lookup_prefix skips). */
static void lookup_probing(const struct kv_pool *p, const uint64_t *h, uint32_t n,
			   struct kv_match *m, uint64_t *probes_saved)
{
	m->blocks = m->unlocked = m->run_used = 0;
	m->run = KV_NONE;
	uint32_t i = 0;
	while (i < n) {
		const uint64_t *v = hmap_get(&p->first, h[i]);
		if (!v) {
			*probes_saved += m->run != KV_NONE && p->runs[m->run].n_children == 0;
			break;
		}
		const struct kv_run *r = &p->runs[*v];
		uint32_t lim = r->len < n - i ? r->len : n - i;
		uint32_t used = chain_match(h + i, r->hashes, lim);
		m->run = (uint32_t)*v;
		m->run_used = used;
		if (r->lock == 0)
			m->unlocked += used;
		i += used;
		if (used < r->len)
			break;
	}
	m->blocks = i;
}

static void same_lookup(const struct kv_pool *p, const uint64_t *h, uint32_t n,
			uint64_t *probes_saved)
{
	struct kv_match a, b;
	kv_lookup_prefix(p, h, n, &a);
	lookup_probing(p, h, n, &b, probes_saved);
	ck_assert_uint_eq(a.blocks, b.blocks);
	ck_assert_uint_eq(a.unlocked, b.unlocked);
	ck_assert_uint_eq(a.run, b.run);
	ck_assert_uint_eq(a.run_used, b.run_used);
}

START_TEST(allocate_hit_split_evict)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 8), 0);
	uint64_t a[3] = {11, 12, 13}, b[3] = {11, 12, 24};
	struct kv_match m;

	/* Request A computes three blocks and finishes. */
	kv_lookup_prefix(&p, a, 3, &m);
	ck_assert_uint_eq(m.blocks, 0);
	uint32_t ta = kv_acquire(&p, &m);
	ck_assert_uint_eq(ta, KV_NONE);
	ck_assert_int_eq(kv_take(&p, 3), 0);
	counts(&p, 5, 0, 3);
	for (uint32_t i = 0; i < 3; i++)
		kv_commit_block(&p, &ta, i, a[i]);
	ck_assert_uint_eq(p.runs[ta].len, 3); /* appended to one run */
	counts(&p, 5, 0, 3);
	kv_release(&p, ta, 0);
	counts(&p, 5, 3, 0);

	/* Request B shares A's first two blocks: a hit of 2, the run splits. */
	kv_lookup_prefix(&p, b, 3, &m);
	ck_assert_uint_eq(m.blocks, 2);
	ck_assert_uint_eq(m.unlocked, 2);
	uint32_t tb = kv_acquire(&p, &m);
	ck_assert_uint_ne(tb, ta); /* the upper part is a new run */
	ck_assert_uint_eq(p.runs[tb].len, 2);
	ck_assert_uint_eq(p.runs[ta].len, 1);
	ck_assert_uint_eq(p.runs[ta].parent, tb);
	counts(&p, 5, 1, 2);
	ck_assert_int_eq(kv_take(&p, 1), 0);
	kv_commit_block(&p, &tb, 2, b[2]); /* tb has a child: a new run */
	counts(&p, 4, 1, 3);
	ck_assert_uint_eq(match(&p, b, 3), 3);
	ck_assert_uint_eq(match(&p, a, 3), 3);

	/* Five more blocks: only A's unshared tail (13) is evictable. */
	ck_assert_int_eq(kv_take(&p, 6), -1);
	ck_assert_int_eq(kv_take(&p, 5), 0);
	ck_assert_uint_eq(p.evictions, 1);
	ck_assert_uint_eq(match(&p, a, 3), 2);
	counts(&p, 0, 0, 8);
	ck_assert_int_eq(kv_take(&p, 1), -1);

	/* B finishes: its tail run is released before the shared head. */
	kv_release(&p, tb, 5);
	counts(&p, 5, 3, 0);
	ck_assert_int_eq(kv_take(&p, 6), 0); /* evicts B's tail (24) only */
	ck_assert_uint_eq(p.evictions, 2);
	ck_assert_uint_eq(match(&p, b, 3), 2);
	ck_assert_int_eq(kv_take(&p, 1), 0); /* then 12, the head's tail */
	ck_assert_uint_eq(match(&p, b, 3), 1);
	counts(&p, 0, 1, 7);
	kv_free(&p);
}
END_TEST

/* A request's tail run, when it must grow, grows to hold the request's
 * whole chain: its hashes move once, not at every doubling. */
START_TEST(tail_runs_grow_once_per_request)
{
	enum { LEN = 300, PROMPT = 100 };
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 1000), 0);
	uint64_t h[LEN];
	for (uint32_t i = 0; i < LEN; i++)
		h[i] = i + 1;
	/* the prompt's blocks in one range, then decode blocks one by one */
	ck_assert_int_eq(kv_take(&p, PROMPT), 0);
	uint32_t tail = KV_NONE;
	ck_assert_uint_eq(kv_commit_blocks(&p, &tail, 0, PROMPT, h, LEN), PROMPT);
	const uint64_t *at = p.runs[tail].hashes;
	ck_assert_uint_ge(p.runs[tail].cap, LEN);
	for (uint32_t b = PROMPT; b < LEN; b++) {
		ck_assert_int_eq(kv_take(&p, 1), 0);
		ck_assert_uint_eq(kv_commit_blocks(&p, &tail, b, b + 1, h, LEN), 1);
	}
	ck_assert_ptr_eq(p.runs[tail].hashes, at);
	ck_assert_uint_eq(p.runs[tail].len, LEN);
	kv_release(&p, tail, 0);
	ck_assert_int_eq(kv_check(&p), 0);
	kv_free(&p);
}
END_TEST

/* Commits chain h[0..n) for a fresh request and releases it. */
static uint32_t cache_chain(struct kv_pool *p, const uint64_t *h, uint32_t n)
{
	ck_assert_int_eq(kv_take(p, n), 0);
	uint32_t tail = KV_NONE;
	ck_assert_uint_eq(kv_commit_blocks(p, &tail, 0, n, h, n), n);
	kv_release(p, tail, 0);
	return tail;
}

/* A deleted run's hash array goes to the next run that needs one of its
 * size, in whatever slot, not to its slot's next run: a long run evicted,
 * then a short run (which takes the slot) and a long one (which takes the
 * array) cost one new short array, not a new long one. */
START_TEST(deleted_runs_arrays_serve_runs_of_their_size)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 1000), 0);
	uint64_t a[512], b[8], c[8], d[512];
	for (uint32_t i = 0; i < 512; i++) {
		a[i] = 1 + i;
		d[i] = 3001 + i;
	}
	for (uint32_t i = 0; i < 8; i++) {
		b[i] = 1001 + i;
		c[i] = 2001 + i;
	}
	uint32_t ra = cache_chain(&p, a, 512);
	cache_chain(&p, b, 8);
	const uint64_t *a_arr = p.runs[ra].hashes;
	ck_assert_uint_eq(p.spares->bytes, (512 + 8) * sizeof(uint64_t));
	/* a was released first: evicting 512 blocks deletes its run */
	ck_assert_uint_eq(kv_evict(&p, 512), 512);
	ck_assert_uint_eq(match(&p, a, 512), 0);
	uint32_t rc = cache_chain(&p, c, 8);
	ck_assert_uint_eq(rc, ra); /* the slot went to c ... */
	ck_assert_uint_eq(p.runs[rc].cap, 8);
	uint32_t rd = cache_chain(&p, d, 512);
	ck_assert_ptr_eq(p.runs[rd].hashes, a_arr); /* ... the array to d */
	ck_assert_uint_eq(p.spares->bytes, (512 + 8 + 8) * sizeof(uint64_t));
	ck_assert_uint_eq(match(&p, b, 8), 8);
	ck_assert_uint_eq(match(&p, c, 8), 8);
	ck_assert_uint_eq(match(&p, d, 512), 512);
	counts(&p, 1000 - 528, 528, 0);
	kv_free(&p);
}
END_TEST

/* A run's hash array is the smallest capacity class that holds its
 * chain: powers of two from 8 and three quarter steps between them. */
START_TEST(run_arrays_come_in_quarter_steps)
{
	static const uint32_t len[] = {1, 8, 9, 11, 13, 15, 17, 33, 41, 100, 512, 513};
	static const uint32_t cap[] = {8, 8, 10, 12, 14, 16, 20, 40, 48, 112, 512, 640};
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 2000), 0);
	uint64_t h[513];
	size_t bytes = 0;
	for (uint32_t k = 0; k < sizeof len / sizeof len[0]; k++) {
		for (uint32_t i = 0; i < len[k]; i++)
			h[i] = 100000 * (k + 1) + i;
		uint32_t r = cache_chain(&p, h, len[k]);
		ck_assert_uint_eq(p.runs[r].cap, cap[k]);
		bytes += cap[k] * sizeof(uint64_t);
		ck_assert_uint_eq(p.spares->bytes, bytes);
	}
	kv_free(&p);
}
END_TEST

/* Pools given one set of spare lists (a cluster's) pass arrays between
 * them: an array that one pool's evicted run left goes to the other's. */
START_TEST(pools_share_spare_arrays)
{
	struct kv_spares shared = {0};
	struct kv_pool a, b;
	ck_assert_int_eq(kv_init(&a, 100), 0);
	ck_assert_int_eq(kv_init(&b, 100), 0);
	a.spares = b.spares = &shared;
	uint64_t h[40], g[40];
	for (uint32_t i = 0; i < 40; i++) {
		h[i] = 1 + i;
		g[i] = 1001 + i;
	}
	uint32_t ra = cache_chain(&a, h, 40);
	const uint64_t *arr = a.runs[ra].hashes;
	ck_assert_uint_eq(kv_evict(&a, 40), 40);
	ck_assert_uint_eq(shared.n_spare[9], 1); /* 40 hashes: class 9 (32 + 8) */
	uint32_t rb = cache_chain(&b, g, 40);
	ck_assert_ptr_eq(b.runs[rb].hashes, arr);
	ck_assert_uint_eq(shared.n_spare[9], 0);
	ck_assert_uint_eq(shared.in_use[9], 1);
	ck_assert_uint_eq(shared.bytes, 40 * sizeof(uint64_t));
	ck_assert(!a.spares_own && !b.spares_own);
	kv_free(&a);
	kv_free(&b);
	ck_assert_uint_eq(shared.in_use[9], 0);
	ck_assert_uint_eq(shared.bytes, 0);
	kv_spares_free(&shared);
}
END_TEST

/* A class keeps at most an eighth of its arrays in use, plus 16, spare:
 * of forty 8-block runs evicted one by one, the eighteenth array is kept
 * (22 still in use: room for 22 / 8 + 16 = 18), and the later ones are
 * freed (21 or fewer in use: room for 18, all taken). */
START_TEST(spare_arrays_are_bounded_by_use)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 1000), 0);
	uint64_t h[8];
	for (uint32_t k = 0; k < 40; k++) {
		for (uint32_t i = 0; i < 8; i++)
			h[i] = 100 * (k + 1) + i;
		cache_chain(&p, h, 8);
	}
	ck_assert_uint_eq(p.spares->in_use[0], 40);
	ck_assert_uint_eq(p.spares->bytes, 40 * 8 * sizeof(uint64_t));
	ck_assert_uint_eq(kv_evict(&p, 320), 320);
	ck_assert_uint_eq(p.spares->in_use[0], 0);
	ck_assert_uint_eq(p.spares->n_spare[0], 18);
	ck_assert_uint_eq(p.spares->bytes, 18 * 8 * sizeof(uint64_t));
	counts(&p, 1000, 0, 0);
	kv_free(&p);
}
END_TEST

/* kv_commit_blocks leaves a pool as kv_commit_block block by block does:
 * two pools take the same random admissions (families of chains sharing
 * prefixes, so runs split, adopt and hang under each other), takes,
 * commits and releases, one committing block by block, the other in
 * ranges (adopting a cached range at once). */
/* Also: every admission's lookup equals one that probes the index after
 * every fully matched run (kv_lookup_prefix stops at a run with no
 * children instead). */
START_TEST(range_commits_equal_block_commits)
{
	enum { POOL = 300, ACTIVE = 8, LEN = 40 };
	struct kv_pool a, b;
	ck_assert_int_eq(kv_init(&a, POOL), 0);
	ck_assert_int_eq(kv_init(&b, POOL), 0);
	struct {
		uint64_t h[LEN];
		uint32_t len, done, own_a, own_b, tail_a, tail_b;
		int live;
	} q[ACTIVE];
	memset(q, 0, sizeof q);
	uint64_t x = 977, ranges = 0, bulk = 0, fewer_runs = 0, probes_saved = 0;
	for (int op = 0; op < 20000; op++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		uint32_t k = (uint32_t)(x >> 33) % ACTIVE, what = (uint32_t)(x >> 40) % 8;
		if (!q[k].live) { /* admit: a family's chain up to d, its own after */
			uint32_t fam = (uint32_t)(x >> 20) % 3, d = (uint32_t)(x >> 45) % LEN;
			q[k].len = 4 + (uint32_t)(x >> 50) % (LEN - 4);
			for (uint32_t i = 0; i < q[k].len; i++)
				q[k].h[i] = i < d ? 1000 * fam + i + 1 : (uint64_t)op * 100 + i + 5000;
			struct kv_match ma, mb;
			same_lookup(&a, q[k].h, q[k].len, &probes_saved);
			same_lookup(&b, q[k].h, q[k].len, &probes_saved);
			kv_lookup_prefix(&a, q[k].h, q[k].len, &ma);
			kv_lookup_prefix(&b, q[k].h, q[k].len, &mb);
			ck_assert_uint_eq(ma.blocks, mb.blocks);
			if (ma.blocks == q[k].len)
				continue;
			q[k].tail_a = kv_acquire(&a, &ma);
			q[k].tail_b = kv_acquire(&b, &mb);
			q[k].done = ma.blocks;
			q[k].own_a = q[k].own_b = 0;
			q[k].live = 1;
		} else if (what < 6 && q[k].done < q[k].len) { /* compute, then commit */
			uint32_t n = 1 + (uint32_t)(x >> 24) % 8;
			if (n > q[k].len - q[k].done)
				n = q[k].len - q[k].done;
			int ta = kv_take(&a, n), tb = kv_take(&b, n);
			ck_assert_int_eq(ta, tb);
			if (ta)
				continue;
			q[k].own_a += n;
			q[k].own_b += n;
			uint32_t from = q[k].done, to = from + n;
			for (uint32_t i = from; i < to; i++)
				if (kv_commit_block(&a, &q[k].tail_a, i, q[k].h[i]) == 0)
					q[k].own_a--;
			uint32_t got = kv_commit_blocks(&b, &q[k].tail_b, from, to, q[k].h, q[k].len);
			ck_assert_uint_eq(got, n);
			q[k].own_b -= got;
			q[k].done = to;
			ranges++;
			bulk += n > 1 && b.runs[q[k].tail_b].lock == 1;
		} else { /* finish */
			kv_release(&a, q[k].tail_a, q[k].own_a);
			kv_release(&b, q[k].tail_b, q[k].own_b);
			q[k].live = 0;
		}
		ck_assert_int_eq(kv_check(&a), 0);
		ck_assert_int_eq(kv_check(&b), 0);
		ck_assert_uint_eq(a.n_free, b.n_free);
		ck_assert_uint_eq(a.n_cached, b.n_cached);
		ck_assert_uint_eq(a.n_used, b.n_used);
		ck_assert_uint_eq(a.evictions, b.evictions);
		fewer_runs += b.n_alive < a.n_alive;
		for (uint32_t i = 0; i < ACTIVE; i++)
			if (q[i].live) {
				/* the same place (run ids differ: adopting a range
				 * makes one run where blocks one by one make several) */
				ck_assert_int_eq(q[i].tail_a == KV_NONE, q[i].tail_b == KV_NONE);
				if (q[i].tail_a != KV_NONE) {
					const struct kv_run *ra = &a.runs[q[i].tail_a];
					const struct kv_run *rb = &b.runs[q[i].tail_b];
					ck_assert_uint_eq(ra->depth + ra->len, rb->depth + rb->len);
					ck_assert_uint_eq(ra->hashes[ra->len - 1], rb->hashes[rb->len - 1]);
				}
				ck_assert_uint_eq(q[i].own_a, q[i].own_b);
				ck_assert_uint_eq(match(&a, q[i].h, q[i].len), match(&b, q[i].h, q[i].len));
			}
	}
	ck_assert_uint_gt(ranges, 1000);
	ck_assert_uint_gt(bulk, 100);
	ck_assert_uint_gt(fewer_runs, 100); /* ranges were adopted */
	ck_assert_uint_gt(probes_saved, 100); /* lookups ended at a childless run */
	kv_free(&a);
	kv_free(&b);
}
END_TEST

START_TEST(lru_order_is_release_order_tail_first)
{
	struct kv_pool p;
	kv_init(&p, 4);
	uint64_t a[2] = {1, 2}, b[1] = {3};
	uint32_t ta = KV_NONE, tb = KV_NONE;
	kv_take(&p, 2);
	kv_commit_block(&p, &ta, 0, a[0]);
	kv_commit_block(&p, &ta, 1, a[1]);
	kv_take(&p, 1);
	kv_commit_block(&p, &tb, 0, b[0]);
	kv_release(&p, ta, 0); /* A released first */
	kv_release(&p, tb, 0);
	counts(&p, 1, 3, 0);
	kv_take(&p, 2); /* 1 free + evict A's tail */
	ck_assert_uint_eq(match(&p, a, 2), 1);
	ck_assert_uint_eq(match(&p, b, 1), 1);
	kv_take(&p, 1); /* A's head */
	ck_assert_uint_eq(match(&p, a, 2), 0);
	ck_assert_uint_eq(match(&p, b, 1), 1);
	kv_take(&p, 1); /* B */
	ck_assert_uint_eq(match(&p, b, 1), 0);
	counts(&p, 0, 0, 4);
	kv_free(&p);
}
END_TEST

/* kv_evict_spares: whether the next e evictions leave a match's blocks.
 * A (4 blocks) released before B (3): A is the first victim. */
START_TEST(evictions_spare_matches_off_their_path)
{
	struct kv_pool p;
	kv_init(&p, 8);
	uint64_t a[4] = {11, 12, 13, 14}, b[3] = {21, 22, 23};
	cache_chain(&p, a, 4);
	cache_chain(&p, b, 3);
	counts(&p, 1, 7, 0);
	struct kv_match ma, ma2, mb;
	kv_lookup_prefix(&p, b, 3, &mb);
	kv_lookup_prefix(&p, a, 4, &ma);
	kv_lookup_prefix(&p, a, 2, &ma2);
	ck_assert_uint_eq(mb.blocks, 3);
	ck_assert_uint_eq(ma2.run_used, 2);
	/* B's match: evictions from A (up to its 4 blocks) spare it */
	ck_assert_int_eq(kv_evict_spares(&p, 1, &mb), 1);
	ck_assert_int_eq(kv_evict_spares(&p, 4, &mb), 1);
	/* 5 would go on into B, the next victim: not told at once */
	ck_assert_int_eq(kv_evict_spares(&p, 5, &mb), 0);
	/* A's whole match loses its last block to the first eviction */
	ck_assert_int_eq(kv_evict_spares(&p, 1, &ma), 0);
	/* A's first two blocks survive two evictions from its tail, not three */
	ck_assert_int_eq(kv_evict_spares(&p, 2, &ma2), 1);
	ck_assert_int_eq(kv_evict_spares(&p, 3, &ma2), 0);
	/* and the evictions themselves say the same */
	ck_assert_int_eq(kv_take(&p, 3), 0); /* 1 free + 2 of A's tail */
	ck_assert_uint_eq(match(&p, a, 4), 2);
	ck_assert_uint_eq(match(&p, b, 3), 3);
	/* A's run relocked: its heap entry is stale, nothing is told */
	struct kv_match m;
	kv_lookup_prefix(&p, a, 2, &m);
	uint32_t tail = kv_acquire(&p, &m);
	ck_assert_int_eq(kv_evict_spares(&p, 1, &mb), 0);
	kv_release(&p, tail, 0);
	/* released again, A is now newer than B, but its old entry is still
	 * the heap's first until an eviction drops it */
	ck_assert_int_eq(kv_evict_spares(&p, 1, &mb), 0);
	ck_assert_uint_eq(kv_evict(&p, 1), 1); /* from B, now the oldest */
	ck_assert_uint_eq(match(&p, b, 3), 2);
	kv_lookup_prefix(&p, a, 2, &m);
	kv_lookup_prefix(&p, b, 2, &mb);
	ck_assert_int_eq(kv_evict_spares(&p, 2, &m), 1);
	ck_assert_int_eq(kv_evict_spares(&p, 1, &mb), 0);
	kv_free(&p);
}
END_TEST

START_TEST(concurrent_duplicates_are_merged)
{
	struct kv_pool p;
	kv_init(&p, 6);
	uint64_t h[2] = {7, 8};
	uint32_t ta = KV_NONE, tb = KV_NONE;
	kv_take(&p, 1); /* A's block 0 */
	kv_take(&p, 1); /* B's block 0, same content */
	kv_commit_block(&p, &ta, 0, h[0]);
	kv_commit_block(&p, &tb, 0, h[0]); /* B adopts A's block, frees its copy */
	ck_assert_uint_eq(ta, tb);
	ck_assert_uint_eq(p.runs[ta].lock, 2);
	counts(&p, 5, 0, 1);
	kv_take(&p, 2);
	kv_commit_block(&p, &ta, 1, h[1]); /* shared tail: a new run */
	kv_commit_block(&p, &tb, 1, h[1]);
	ck_assert_uint_eq(ta, tb);
	counts(&p, 4, 0, 2);
	kv_release(&p, ta, 0);
	counts(&p, 4, 0, 2); /* B still holds both */
	kv_release(&p, tb, 0);
	counts(&p, 4, 2, 0);
	kv_free(&p);
}
END_TEST

START_TEST(install_after_cached_prefix)
{
	struct kv_pool p;
	kv_init(&p, 4);
	uint64_t h[4] = {1, 2, 3, 4};
	uint32_t t = KV_NONE;
	kv_take(&p, 1);
	kv_commit_block(&p, &t, 0, h[0]);
	kv_release(&p, t, 0);
	ck_assert_uint_eq(kv_install(&p, h, 1, 3), 3);
	ck_assert_uint_eq(match(&p, h, 4), 3);
	counts(&p, 1, 3, 0);
	/* Without its prefix nothing can be installed. */
	uint64_t g[3] = {9, 10, 11};
	ck_assert_uint_eq(kv_install(&p, g, 1, 3), 0);
	/* Room for one more block only: the rest is not installed. */
	ck_assert_uint_eq(kv_install(&p, h, 3, 4), 4);
	counts(&p, 0, 4, 0);
	kv_free(&p);
}
END_TEST

/* kv_drop frees a chain's own unlocked tail (KV that moved away): back to
 * lo, stopping at a run another chain hangs from or a request holds, or
 * inside a run the chain does not end; counted apart from evictions, and
 * the runs left keep their places in the eviction order. */
START_TEST(drop_frees_a_chains_own_unlocked_tail)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 16), 0);
	uint64_t s[5] = {1, 2, 3, 4, 5}, t[4] = {1, 2, 7, 8}, u[4] = {1, 2, 3, 9};
	struct kv_match m;
	uint32_t ta = KV_NONE;
	ck_assert_int_eq(kv_take(&p, 5), 0);
	ck_assert_uint_eq(kv_commit_blocks_any(&p, &ta, 0, 5, s, 5), 5);
	kv_release(&p, ta, 0); /* [1 2 3 4 5] */
	kv_lookup_prefix(&p, t, 4, &m);
	uint32_t tb = kv_acquire(&p, &m); /* [1 2] above [3 4 5] */
	ck_assert_int_eq(kv_take(&p, 2), 0);
	ck_assert_uint_eq(kv_commit_blocks_any(&p, &tb, 2, 4, t, 4), 2); /* [7 8] */
	kv_release(&p, tb, 0);
	counts(&p, 9, 7, 0);
	/* [3 4 5] is s's own; [1 2] is t's too */
	ck_assert_uint_eq(kv_drop(&p, s, 0, 5, 1), 3);
	ck_assert_uint_eq(kv_drop(&p, s, 4, 5, 1), 1);
	ck_assert_uint_eq(kv_drop(&p, s, 5, 5, 1), 0);
	/* u's match ends inside [3 4 5]: nothing of it is u's own */
	ck_assert_uint_eq(kv_drop(&p, u, 0, 4, 1), 0);
	counts(&p, 9, 7, 0); /* dry runs change nothing */
	ck_assert_uint_eq(kv_drop(&p, s, 4, 5, 0), 1); /* [3 4 5] -> [3 4] */
	counts(&p, 10, 6, 0);
	ck_assert_uint_eq(match(&p, s, 5), 4);
	/* t's path held by a request: s's tail goes, the shared head stays */
	kv_lookup_prefix(&p, t, 4, &m);
	tb = kv_acquire(&p, &m);
	counts(&p, 10, 2, 4);
	ck_assert_uint_eq(kv_drop(&p, t, 0, 4, 1), 0);
	ck_assert_uint_eq(kv_drop(&p, s, 0, 5, 0), 2);
	counts(&p, 12, 0, 4);
	ck_assert_uint_eq(match(&p, s, 5), 2);
	kv_release(&p, tb, 0);
	/* released, t's tail goes and with it the head it leaves a leaf */
	ck_assert_uint_eq(kv_drop(&p, t, 0, 4, 1), 4);
	ck_assert_uint_eq(kv_drop(&p, t, 1, 4, 0), 3); /* back to block 1 only */
	counts(&p, 15, 1, 0);
	ck_assert_uint_eq(match(&p, t, 4), 1);
	ck_assert_uint_eq(p.evictions, 0);
	/* what is left is still evicted in order */
	ck_assert_uint_eq(kv_evict(&p, 5), 1);
	counts(&p, 16, 0, 0);
	kv_free(&p);
}
END_TEST

/* LRU order when a run becomes a leaf after its release (its last child
 * evicted): it goes before the runs released since, by its own older seq
 * (the heap beside the ring of releases, kv.c), not after them. */
START_TEST(a_parent_left_a_leaf_keeps_its_place_in_lru_order)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 8), 0);
	uint64_t a[2] = {1, 2}, b[2] = {1, 3}, c[1] = {7};
	struct kv_match m;
	uint32_t t = KV_NONE;
	ck_assert_int_eq(kv_take(&p, 2), 0);
	kv_commit_block(&p, &t, 0, a[0]);
	kv_commit_block(&p, &t, 1, a[1]);
	kv_release(&p, t, 0); /* [1 2], seq 1 */
	kv_lookup_prefix(&p, b, 2, &m);
	ck_assert_uint_eq(m.blocks, 1);
	t = kv_acquire(&p, &m); /* split: [1] above [2] */
	ck_assert_int_eq(kv_take(&p, 1), 0);
	kv_commit_block(&p, &t, 1, b[1]); /* [3], a new run under [1] */
	ck_assert_uint_eq(p.runs[p.runs[t].parent].n_children, 2);
	kv_release(&p, t, 0); /* [3] seq 2, [1] seq 3 (a parent: not evictable) */
	t = KV_NONE;
	ck_assert_int_eq(kv_take(&p, 1), 0);
	kv_commit_block(&p, &t, 0, c[0]);
	kv_release(&p, t, 0); /* [7], seq 4 */
	counts(&p, 4, 4, 0);
	ck_assert_int_eq(kv_take(&p, 5), 0); /* the free ones, then [2] */
	ck_assert_uint_eq(match(&p, a, 2), 1);
	ck_assert_int_eq(kv_take(&p, 1), 0); /* [3]: [1] is a leaf now */
	ck_assert_uint_eq(match(&p, b, 2), 1);
	ck_assert_int_eq(kv_take(&p, 1), 0); /* [1] (seq 3) before [7] (seq 4) */
	ck_assert_uint_eq(match(&p, a, 1), 0);
	ck_assert_uint_eq(match(&p, c, 1), 1);
	ck_assert_uint_eq(p.evictions, 3);
	counts(&p, 0, 1, 7);
	kv_free(&p);
}
END_TEST

static void cache_one(struct kv_pool *p, uint64_t h)
{
	uint32_t t = KV_NONE;
	ck_assert_int_eq(kv_take(p, 1), 0);
	ck_assert_int_eq(kv_commit_block(p, &t, 0, h), 0);
	kv_release(p, t, 0);
}

/* Eviction follows release order while the ring of releases wraps around
 * and grows (its entries moved in order from wherever its front is). */
START_TEST(eviction_keeps_release_order_as_the_ring_wraps_and_grows)
{
	struct kv_pool p;
	ck_assert_int_eq(kv_init(&p, 1000), 0);
	for (uint64_t i = 0; i < 200; i++)
		cache_one(&p, 1000 + i);
	ck_assert_uint_eq(kv_evict(&p, 150), 150); /* the first 150 */
	ck_assert_uint_eq(match(&p, (uint64_t[]){1149}, 1), 0);
	ck_assert_uint_eq(match(&p, (uint64_t[]){1150}, 1), 1);
	for (uint64_t i = 200; i < 500; i++) /* past the ring's end, then more */
		cache_one(&p, 1000 + i);
	ck_assert_uint_gt(p.ring_cap, 256);
	for (uint64_t i = 150; i < 500; i++) {
		ck_assert_uint_eq(match(&p, (uint64_t[]){1000 + i}, 1), 1);
		ck_assert_uint_eq(kv_evict(&p, 1), 1);
		ck_assert_uint_eq(match(&p, (uint64_t[]){1000 + i}, 1), 0);
	}
	counts(&p, 1000, 0, 0);
	kv_free(&p);
}
END_TEST

/* Regression: every release of a cached run pushed a heap entry that only
 * an eviction would drop, so a node that never evicts grew without bound. */
START_TEST(evictable_heap_stays_bounded_without_evictions)
{
	struct kv_pool p;
	kv_init(&p, 1000);
	uint64_t h[2] = {5, 6};
	uint32_t t = KV_NONE;
	kv_take(&p, 2);
	kv_commit_block(&p, &t, 0, h[0]);
	kv_commit_block(&p, &t, 1, h[1]);
	kv_release(&p, t, 0);
	for (int i = 0; i < 100000; i++) {
		struct kv_match m;
		kv_lookup_prefix(&p, h, 2, &m);
		ck_assert_uint_eq(m.blocks, 2);
		kv_release(&p, kv_acquire(&p, &m), 0);
	}
	ck_assert_uint_le(p.ring_n + p.heap_n, 2 * p.n_alive + 257);
	counts(&p, 998, 2, 0);
	kv_free(&p);
}
END_TEST

/* The audit notices corrupted accounting and says what is wrong. */
START_TEST(audit_catches_corruption)
{
	struct kv_pool p;
	kv_init(&p, 8);
	uint64_t locked;
	const char *why;
	uint32_t t = KV_NONE;
	kv_take(&p, 2);
	kv_commit_block(&p, &t, 0, 41);
	kv_commit_block(&p, &t, 1, 42);
	ck_assert_int_eq(kv_audit(&p, &locked, &why), 0);
	ck_assert_uint_eq(locked, 2);
	p.n_cached++;
	ck_assert_int_eq(kv_audit(&p, &locked, &why), -1);
	ck_assert_str_eq(why, "unlocked run blocks differ from n_cached");
	p.n_cached--;
	p.runs[t].depth = 5;
	ck_assert_int_eq(kv_audit(&p, &locked, &why), -1);
	ck_assert_str_eq(why, "a root run that does not start at block 0");
	kv_free(&p);
}
END_TEST

/* Router records forget least recently routed blocks first: the blocks
 * forgotten (in order, through on_evict) and those kept are a plain LRU
 * model's (per node: a list scanned for the oldest touch), over random
 * prompts with shared prefixes, touches of blocks already held and caps
 * small enough to forget all the time. */
enum { LRU_NODES = 3, LRU_MAX = 64 };
struct lru_model {
	uint64_t hash[LRU_NODES][LRU_MAX], when[LRU_NODES][LRU_MAX];
	uint32_t n[LRU_NODES];
	uint64_t clock;
	uint64_t evicted[4096];
	uint32_t n_evicted, n_seen;
	uint64_t seen[4096];
	uint32_t seen_node[4096];
};

static void lru_model_touch(struct lru_model *m, uint32_t node, uint64_t h, uint32_t cap)
{
	for (uint32_t j = 0; j < m->n[node]; j++)
		if (m->hash[node][j] == h) {
			m->when[node][j] = ++m->clock;
			return;
		}
	if (m->n[node] >= cap) {
		uint32_t old = 0;
		for (uint32_t j = 1; j < m->n[node]; j++)
			if (m->when[node][j] < m->when[node][old])
				old = j;
		m->evicted[m->n_evicted++ % 4096] = m->hash[node][old];
		m->n[node]--;
		m->hash[node][old] = m->hash[node][m->n[node]];
		m->when[node][old] = m->when[node][m->n[node]];
	}
	m->hash[node][m->n[node]] = h;
	m->when[node][m->n[node]++] = ++m->clock;
}

static void lru_seen(void *ctx, uint32_t node, uint64_t hash)
{
	struct lru_model *m = ctx;
	m->seen_node[m->n_seen % 4096] = node;
	m->seen[m->n_seen++ % 4096] = hash;
}

START_TEST(router_records_forget_least_recently_routed)
{
	static struct lru_model m;
	uint64_t x = 7, h[30];
	for (uint32_t cap = 4; cap <= LRU_MAX; cap *= 4) {
		memset(&m, 0, sizeof m);
		struct pidx p;
		ck_assert_int_eq(pidx_init(&p, LRU_NODES, cap), 0);
		p.on_evict = lru_seen;
		p.evict_ctx = &m;
		for (int step = 0; step < 4000; step++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			uint32_t node = (uint32_t)((x >> 20) % LRU_NODES), n = 1 + (uint32_t)((x >> 40) % 30);
			uint64_t root = 1 + (x >> 59); /* 16 families of chains */
			for (uint32_t i = 0; i < n; i++) /* chained: a prefix shares its hashes */
				h[i] = root * 1000003 + i * (1 + (i >= (uint32_t)((x >> 10) % 8)) * (x >> 61));
			uint32_t before = m.n_seen;
			ck_assert_int_eq(pidx_insert(&p, node, h, n), 0);
			for (uint32_t i = n; i-- > 0;)
				lru_model_touch(&m, node, h[i], cap);
			ck_assert_uint_eq(m.n_seen, m.n_evicted);
			for (uint32_t k = before; k < m.n_seen; k++) {
				ck_assert_uint_eq(m.seen[k % 4096], m.evicted[k % 4096]);
				ck_assert_uint_eq(m.seen_node[k % 4096], node);
			}
			ck_assert_uint_eq(p.size[node], m.n[node]);
			for (uint32_t j = 0; j < m.n[node]; j++)
				ck_assert(pidx_has(&p, node, m.hash[node][j]));
		}
		ck_assert_uint_gt(m.n_evicted, 1000);
		pidx_free(&p);
	}
}
END_TEST

static void count_forgotten(void *ctx, uint32_t node, uint64_t hash)
{
	(void)node, (void)hash;
	++*(uint32_t *)ctx;
}

/* prompt_index keeps what prefix_index's LRU lists keep: after every
 * insert the same blocks on every node, the same sizes, and the matches
 * (binary searches that rely on records staying prefix-closed) of walking
 * the prompt block by block through the lists, over random prompts from
 * a tree of chained hashes (so records are prefix-closed) inserted whole
 * or in part, with caps from 1 (prompts longer than the record) to more
 * than ever fills, on 8 nodes (one group of 64) and on 150 (three groups,
 * the last partial). The blocks kept over
 * thousands of inserts are the order of forgetting at work: a record that
 * forgot a prompt's head first, or did not refresh a prompt routed again,
 * keeps other blocks. */
/* Random prompts that share prefixes: prompt q is a prefix of an earlier
 * prompt (up to all of it) and then blocks of its own, at most depth
 * blocks, so their hashes form a tree of chains. */
static void prompt_tree(uint64_t *h, uint32_t *len, int prompts, uint32_t depth, uint64_t x)
{
	for (int q = 0; q < prompts; q++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		int parent = q ? (int)((x >> 33) % (uint64_t)q) : -1;
		uint32_t keep = parent < 0 ? 0 : (uint32_t)((x >> 13) % (len[parent] + 1));
		len[q] = keep + 1 + (uint32_t)((x >> 45) % 24);
		if (len[q] > depth)
			len[q] = depth;
		for (uint32_t i = 0; i < len[q]; i++)
			h[q * depth + i] = i < keep ? h[parent * depth + i]
						   : (x ^ ((uint64_t)q << 40)) + i * 7919 + 1;
	}
}

static void prompt_records_as_lru(uint32_t nodes, int steps)
{
	enum { DEPTH = 48, PROMPTS = 80 };
	static uint64_t h[PROMPTS][DEPTH];
	uint32_t len[PROMPTS];
	uint64_t x = 4242 + nodes;
	prompt_tree(&h[0][0], len, PROMPTS, DEPTH, x);
	static const size_t caps[] = {1, 3, 7, 20, 64, 300, 100000};
	uint32_t *want = malloc(nodes * sizeof *want);
	ck_assert_ptr_nonnull(want);
	for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
		struct pidx lru;
		struct prompt_index rec;
		ck_assert_int_eq(pidx_init(&lru, nodes, caps[c]), 0);
		ck_assert_int_eq(prompt_index_init(&rec, nodes, caps[c]), 0);
		uint32_t forgot = 0;
		lru.on_evict = count_forgotten;
		lru.evict_ctx = &forgot;
		for (int step = 0; step < steps; step++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			int q = (int)((x >> 33) % PROMPTS);
			/* a few nodes take most prompts, so that records fill */
			uint32_t node = (uint32_t)((x >> 20) % ((x >> 60) ? 8 : nodes));
			uint32_t n = (x >> 50) % 4 ? len[q] : 1 + (uint32_t)((x >> 52) % len[q]);
			ck_assert_int_eq(pidx_insert(&lru, node, h[q], n), 0);
			ck_assert_int_eq(prompt_index_insert(&rec, node, h[q], n), 0);
			ck_assert_uint_eq(rec.size[node], lru.size[node]);
			/* the node's record, block by block; every record now and
			 * then (counted, then asserted once: Check notes each
			 * assertion it passes) */
			uint32_t differ = 0, all = step % 100 == 0;
			for (uint32_t i = all ? 0 : node; i < (all ? nodes : node + 1); i++)
				for (int t = 0; t < PROMPTS; t++)
					for (uint32_t b = 0; b < len[t]; b++)
						differ += prompt_index_has(&rec, i, h[t][b]) !=
							  pidx_has(&lru, i, h[t][b]);
			ck_assert_uint_eq(differ, 0);
			int t = (int)((x >> 8) % PROMPTS);
			uint32_t best = pidx_match_walk(&lru, h[t], len[t]);
			for (uint32_t i = 0; i < nodes; i++)
				want[i] = lru.match[i];
			pidx_match_done(&lru);
			ck_assert_uint_eq(prompt_index_match(&rec, h[t], len[t]), best);
			uint32_t nonzero = 0;
			for (uint32_t i = 0; i < nodes; i++) {
				differ += rec.match[i] != want[i];
				nonzero += want[i] > 0;
			}
			ck_assert_uint_eq(differ, 0);
			ck_assert_uint_eq(rec.n_touched, nonzero);
			prompt_index_match_done(&rec);
			/* the longest alone: the nodes that reach it, and only them */
			ck_assert_uint_eq(prompt_index_match_longest(&rec, h[t], len[t]), best);
			uint32_t at_best = 0;
			for (uint32_t i = 0; i < nodes; i++)
				at_best += best > 0 && want[i] == best;
			ck_assert_uint_eq(rec.n_touched, at_best);
			for (uint32_t k = 0; k < rec.n_touched; k++)
				differ += want[rec.touched[k]] != best || rec.match[rec.touched[k]] != best;
			ck_assert_uint_eq(differ, 0);
			prompt_index_match_done(&rec);
			/* the walk that takes over once an insert ran out of
			 * memory (closure no longer assumed) agrees while it holds */
			rec.broken = 1;
			ck_assert_uint_eq(prompt_index_match(&rec, h[t], len[t]), best);
			for (uint32_t i = 0; i < nodes; i++)
				differ += rec.match[i] != want[i];
			ck_assert_uint_eq(differ, 0);
			ck_assert_uint_eq(rec.n_touched, nonzero);
			prompt_index_match_done(&rec);
			ck_assert_uint_eq(prompt_index_match_longest(&rec, h[t], len[t]), best);
			ck_assert_uint_eq(rec.n_touched, at_best);
			prompt_index_match_done(&rec);
			rec.broken = 0;
		}
		if (caps[c] < 100000)
			ck_assert_uint_gt(forgot, 500); /* records filled and forgot */
		for (uint32_t i = 0; i < nodes; i++)
			ck_assert_int_eq(kv_check(&rec.nodes[i].kv), 0);
		pidx_free(&lru);
		prompt_index_free(&rec);
	}
	free(want);
}

START_TEST(prompt_records_keep_what_lru_lists_keep)
{
	prompt_records_as_lru(8, 3000);
	prompt_records_as_lru(150, 1500);
}
END_TEST

/* hset holds exactly what was added, across growth and long probe runs
 * (keys that share their home slot), agreeing with an hmap. */
START_TEST(hset_holds_what_was_added)
{
	struct hset s;
	struct hmap ref;
	hset_init(&s);
	hmap_init(&ref);
	uint64_t x = 7;
	for (int i = 0; i < 200000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		/* one key in 100 a multiple of 2^47: they share a home slot */
		uint64_t k = i % 100 == 0 ? ((x >> 40) + 1) << 47 : (x | 1);
		int fresh = hmap_put(&ref, k, 1);
		ck_assert_int_eq(hset_add(&s, k), fresh);
		ck_assert_int_eq(hset_has(&s, k), 1);
		uint64_t probe = x ^ 0x5555;
		ck_assert_int_eq(hset_has(&s, probe ? probe : 1), hmap_get(&ref, probe ? probe : 1) != NULL);
	}
	ck_assert_uint_eq(s.count, ref.count);
	ck_assert(s.count * 4 <= s.cap * 3);
	hset_free(&s);
	hmap_free(&ref);
}
END_TEST

/* A chain of up to 64 blocks: family f's blocks up to d, then variant v's;
 * hashes chain as block hashes do. */
static uint32_t ct_chain(uint64_t *h, uint32_t f, uint32_t d, uint32_t v, uint32_t len)
{
	uint64_t prev = 0x1234;
	for (uint32_t j = 0; j < len; j++) {
		uint64_t tok = j < d ? 1000 * f + j : 100000 * (v + 1) + 1000 * f + j;
		prev = rng_mix64(prev ^ rng_mix64(tok));
		h[j] = prev ? prev : 1;
	}
	return len;
}

static int ct_collect(void *ctx, uint64_t h)
{
	struct hmap *seen = ctx;
	return hmap_put(seen, h, 1) == 1 ? 0 : 1; /* each hash once */
}

/* A run begun with a hint of the chain's length has room for all of it:
 * the chain's later blocks go on in place; past the hint it doubles. */
START_TEST(ctree_runs_take_room_for_the_expected_chain)
{
	struct ctree t;
	ctree_init(&t);
	uint64_t h[300];
	for (uint32_t i = 0; i < 300; i++)
		h[i] = 1000 + i;
	struct ctree_pos at = {CTREE_NONE, 0};
	ck_assert_int_eq(ctree_add_chain(&t, &at, h, 10, 100), 10);
	ck_assert_uint_eq(t.runs[0].cap, 100);
	const uint64_t *was = t.runs[0].h;
	ck_assert_int_eq(ctree_add_chain(&t, &at, h + 10, 90, 90), 90);
	ck_assert_ptr_eq(t.runs[0].h, was);
	ck_assert_int_eq(ctree_add_chain(&t, &at, h + 100, 5, 5), 5);
	ck_assert_uint_eq(t.runs[0].cap, 200);
	/* a short hint changes nothing; a branch gets its own */
	ck_assert_int_eq(ctree_add_chain(&t, &at, h + 105, 150, 3), 150);
	ck_assert_uint_eq(t.runs[0].cap, 400);
	struct ctree_pos mid = {0, 49};
	uint64_t b[2] = {7, 8};
	ck_assert_int_eq(ctree_add_chain(&t, &mid, b, 2, 40), 2);
	ck_assert_uint_eq(mid.run, 1);
	ck_assert_uint_eq(t.runs[1].cap, 40);
	ck_assert_uint_eq(t.count, 257);
	ctree_free(&t);
}
END_TEST

/* ctree holds what was added parent first, as an hmap of every hash does:
 * random chains of four families that share prefixes and branch anywhere
 * (inside runs, at their ends, at block 0) are extended from their longest
 * prefix in the tree, block by block or as a chain, or re-added from a
 * known position (members, then maybe new blocks); after each, the longest
 * prefix of other chains is the reference's, at the right place. */
START_TEST(ctree_holds_chains_added_parent_first)
{
	struct ctree t;
	struct hmap ref;
	ctree_init(&t);
	hmap_init(&ref);
	uint64_t x = 99, h[64], g[64];
	uint32_t branches = 0, appends = 0;
	for (int op = 0; op < 20000; op++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		uint32_t f = (uint32_t)(x >> 60) % 4, d = (uint32_t)(x >> 40) % 64;
		uint32_t v = (uint32_t)(x >> 20) % 50, len = 1 + (uint32_t)(x >> 50) % 64;
		ct_chain(h, f, d, v, len);
		struct ctree_pos at;
		uint32_t p = ctree_prefix(&t, h, len, &at);
		if ((x >> 30) % 4 == 0 && p > 0) {
			/* re-add a member from its parent's position: no change */
			uint32_t k = (uint32_t)(x >> 8) % p;
			struct ctree_pos pa;
			ck_assert_uint_eq(ctree_prefix(&t, h, k, &pa), k);
			ck_assert_int_eq(ctree_add(&t, &pa, h[k]), 0);
			ck_assert_uint_eq(t.runs[pa.run].h[pa.off], h[k]);
			/* and members along the chain from there, then new ones */
			uint32_t more = (uint32_t)(x >> 14) % (len - k);
			int fresh = k + 1 + more > p ? (int)(k + 1 + more - p) : 0;
			ck_assert_int_eq(ctree_add_chain(&t, &pa, h + k + 1, more, 0), fresh);
			if (more)
				ck_assert_uint_eq(t.runs[pa.run].h[pa.off], h[k + more]);
			for (uint32_t j = p; j < k + 1 + more; j++)
				ck_assert_int_eq(hmap_put(&ref, h[j], 1), 1);
			continue;
		}
		uint32_t runs = t.n_runs;
		if ((x >> 5) & 1) { /* the whole rest at once */
			/* with any hint of the chain's length: a hint only */
			uint32_t expect = (uint32_t)(x >> 41) % 100;
			ck_assert_int_eq(ctree_add_chain(&t, &at, h + p, len - p, expect),
					 (int)(len - p));
			if (len > p)
				ck_assert_uint_eq(t.runs[at.run].h[at.off], h[len - 1]);
			for (uint32_t j = p; j < len; j++)
				ck_assert_int_eq(hmap_put(&ref, h[j], 1), 1);
		}
		for (uint32_t j = p; j < len && !((x >> 5) & 1); j++) {
			ck_assert_int_eq(ctree_add(&t, &at, h[j]), 1);
			ck_assert_uint_eq(t.runs[at.run].h[at.off], h[j]);
			ck_assert_int_eq(hmap_put(&ref, h[j], 1), 1);
		}
		branches += t.n_runs - runs;
		appends += len > p && t.n_runs == runs;
		ck_assert_uint_eq(t.count, ref.count);
		/* another chain's longest prefix: the reference's */
		uint32_t f2 = (uint32_t)(x >> 3) % 4, d2 = (uint32_t)(x >> 13) % 64;
		uint32_t v2 = (uint32_t)(x >> 23) % 50, len2 = 1 + (uint32_t)(x >> 33) % 64;
		ct_chain(g, f2, d2, v2, len2);
		uint32_t want = 0;
		while (want < len2 && hmap_get(&ref, g[want]))
			want++;
		struct ctree_pos e;
		ck_assert_uint_eq(ctree_prefix(&t, g, len2, &e), want);
		if (want > 0)
			ck_assert_uint_eq(t.runs[e.run].h[e.off], g[want - 1]);
		else
			ck_assert_uint_eq(e.run, CTREE_NONE);
	}
	ck_assert_uint_gt(branches, 1000);
	ck_assert_uint_gt(appends, 1000);
	struct hmap seen;
	hmap_init(&seen);
	ck_assert_int_eq(ctree_each(&t, ct_collect, &seen), 0);
	ck_assert_uint_eq(seen.count, ref.count);
	hmap_free(&seen);
	ctree_free(&t);
	hmap_free(&ref);
}
END_TEST

Suite *kv_suite(void)
{
	Suite *s = suite_create("kv");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60); /* the randomised checks take seconds under ASan */
	tcase_add_test(tc, allocate_hit_split_evict);
	tcase_add_test(tc, lru_order_is_release_order_tail_first);
	tcase_add_test(tc, evictions_spare_matches_off_their_path);
	tcase_add_test(tc, range_commits_equal_block_commits);
	tcase_add_test(tc, tail_runs_grow_once_per_request);
	tcase_add_test(tc, deleted_runs_arrays_serve_runs_of_their_size);
	tcase_add_test(tc, spare_arrays_are_bounded_by_use);
	tcase_add_test(tc, run_arrays_come_in_quarter_steps);
	tcase_add_test(tc, pools_share_spare_arrays);
	tcase_add_test(tc, concurrent_duplicates_are_merged);
	tcase_add_test(tc, install_after_cached_prefix);
	tcase_add_test(tc, drop_frees_a_chains_own_unlocked_tail);
	tcase_add_test(tc, a_parent_left_a_leaf_keeps_its_place_in_lru_order);
	tcase_add_test(tc, eviction_keeps_release_order_as_the_ring_wraps_and_grows);
	tcase_add_test(tc, evictable_heap_stays_bounded_without_evictions);
	tcase_add_test(tc, audit_catches_corruption);
	tcase_add_test(tc, router_records_forget_least_recently_routed);
	tcase_add_test(tc, prompt_records_keep_what_lru_lists_keep);
	tcase_add_test(tc, hset_holds_what_was_added);
	tcase_add_test(tc, ctree_holds_chains_added_parent_first);
	tcase_add_test(tc, ctree_runs_take_room_for_the_expected_chain);
	suite_add_tcase(s, tc);
	return s;
}
