/* check_policy: exact routing decisions on hand-built views. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "policies/loadheap.h"
#include "sim/request.h"
#include "base/rng.h"
#include "tests/suites.h"

static void *make(const char *name, const char *params_json, struct pol_env *env,
		  const struct pol_ops **ops)
{
	char err[512] = "";
	cJSON *params = params_json ? cJSON_Parse(params_json) : NULL;
	*ops = pol_find(name);
	ck_assert_ptr_nonnull(*ops);
	void *st = (*ops)->create(params, "router.params", env, err, sizeof err);
	cJSON_Delete(params);
	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

static int32_t heap_min(const void *lctx)
{
	return lh_min(lctx);
}

/* A view over hand-built nodes, with the totals the simulator keeps. */
static struct pol_view view_of(struct pol_node_view *nodes, uint32_t n)
{
	struct pol_view v = {n, nodes, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	for (uint32_t i = 0; i < n; i++) {
		if (!nodes[i].up)
			continue;
		v.n_up++;
		v.total_outstanding += nodes[i].outstanding;
	}
	return v;
}

/* Routes a request of session sid and, if routed, dispatches it and adds 1
 * to the chosen node's load, as the reference case prescribes. */
static int route_one(const struct pol_ops *ops, void *st, struct pol_node_view *nodes, uint32_t n,
		     uint64_t sid, struct pol_decision *d)
{
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = sid;
	struct pol_view v = view_of(nodes, n);
	ops->route(st, &v, &r, d);
	if (d->action != POL_ROUTE)
		return -1;
	if (ops->on_dispatch)
		ops->on_dispatch(st, &r, d->node);
	nodes[d->node].outstanding++;
	return d->node;
}

/* Where session sid would go now (routed, not dispatched). */
static int32_t where(const struct pol_ops *ops, void *st, struct pol_node_view *nodes, uint32_t n,
		     uint64_t sid)
{
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = sid;
	struct pol_view v = view_of(nodes, n);
	struct pol_decision d;
	ops->route(st, &v, &r, &d);
	return d.action == POL_ROUTE ? d.node : -1;
}

/* The affinity map keeps max_keys keys in two generations: a full current
 * one becomes the previous (the older previous is forgotten), a key found
 * in the previous is promoted, and setting a key the current one holds
 * only changes its node. A forgotten session goes to the least loaded
 * node (node 0 here). */
START_TEST(session_affinity_keeps_two_generations_of_keys)
{
	struct pol_env env = {4, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("session_affinity", "{\"threshold\": 100, \"max_keys\": 2}", &env, &ops);
	struct pol_node_view nodes[4] = {{.outstanding = 0, .up = 1},
					 {.outstanding = 5, .up = 1},
					 {.outstanding = 5, .up = 1},
					 {.outstanding = 5, .up = 1}};
	struct request r;
	memset(&r, 0, sizeof r);
	uint64_t A = 11, B = 12, C = 13, D = 14;
	r.session = A, ops->on_dispatch(st, &r, 1);
	r.session = B, ops->on_dispatch(st, &r, 2);
	r.session = A, ops->on_dispatch(st, &r, 1); /* in the current one: no turnover */
	ck_assert_int_eq(where(ops, st, nodes, 4, A), 1);
	ck_assert_int_eq(where(ops, st, nodes, 4, B), 2);
	r.session = C, ops->on_dispatch(st, &r, 3); /* full: {A, B} become the previous */
	ck_assert_int_eq(where(ops, st, nodes, 4, A), 1);
	ck_assert_int_eq(where(ops, st, nodes, 4, B), 2);
	ck_assert_int_eq(where(ops, st, nodes, 4, C), 3);
	r.session = A, ops->on_dispatch(st, &r, 1); /* promoted: current {C, A} */
	r.session = A, ops->on_dispatch(st, &r, 2); /* moved, still in the current one */
	ck_assert_int_eq(where(ops, st, nodes, 4, A), 2);
	r.session = D, ops->on_dispatch(st, &r, 3); /* full: {C, A} previous, B forgotten */
	ck_assert_int_eq(where(ops, st, nodes, 4, B), 0);
	ck_assert_int_eq(where(ops, st, nodes, 4, A), 2);
	ck_assert_int_eq(where(ops, st, nodes, 4, C), 3);
	ck_assert_int_eq(where(ops, st, nodes, 4, D), 3);
	r.session = B, ops->on_dispatch(st, &r, 1); /* current {D, B} */
	r.session = C, ops->on_dispatch(st, &r, 2); /* full: {D, B} previous; A forgotten */
	ck_assert_int_eq(where(ops, st, nodes, 4, A), 0);
	ck_assert_int_eq(where(ops, st, nodes, 4, B), 1);
	ck_assert_int_eq(where(ops, st, nodes, 4, C), 2);
	ck_assert_int_eq(where(ops, st, nodes, 4, D), 3);
	ops->destroy(st);
}
END_TEST

START_TEST(session_affinity_reference_case)
{
	struct pol_env env = {2, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("session_affinity", "{\"threshold\": 10, \"when_full\": \"shed\"}", &env,
			&ops);
	/* worker_1 = node 0 with load 9, worker_2 = node 1 with load 2. */
	struct pol_node_view nodes[2] = {{.outstanding = 9, .up = 1}, {.outstanding = 2, .up = 1}};
	uint64_t abc = 0xabc, def = 0xdef, ghi = 0x6b1;
	struct pol_decision d;
	/* Session abc is already on worker_1 (counted in its load of 9). */
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = abc;
	ops->on_dispatch(st, &r, 0);

	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 0); /* stays: 9 < 10 */
	ck_assert_uint_eq(nodes[0].outstanding, 10);
	ck_assert_int_eq(route_one(ops, st, nodes, 2, def, &d), 1); /* new: least loaded */
	ck_assert_uint_eq(nodes[1].outstanding, 3);
	ck_assert_int_eq(route_one(ops, st, nodes, 2, ghi, &d), 1);
	ck_assert_uint_eq(nodes[1].outstanding, 4);
	/* abc's node is now at the threshold: abc moves to worker_2 and stays. */
	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 1);
	nodes[0].outstanding = 0;
	ck_assert_int_eq(route_one(ops, st, nodes, 2, abc, &d), 1);
	/* Nobody under threshold: shed with reason "capacity". */
	nodes[0].outstanding = 10;
	nodes[1].outstanding = 12;
	ck_assert_int_eq(route_one(ops, st, nodes, 2, 0x123, &d), -1);
	ck_assert_int_eq(d.action, POL_SHED);
	ck_assert_str_eq(d.reason, "capacity");
	ops->destroy(st);
}
END_TEST

START_TEST(session_affinity_ties_and_forgetting)
{
	struct pol_env env = {3, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("session_affinity", "{\"threshold\": 5, \"when_full\": \"least_loaded\"}",
			&env, &ops);
	struct pol_node_view nodes[3] = {{.outstanding = 3, .up = 1},
					 {.outstanding = 1, .up = 1},
					 {.outstanding = 1, .up = 1}};
	struct pol_decision d;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 7, &d), 1); /* tie 1/1: lowest id */
	nodes[0].outstanding = nodes[1].outstanding = nodes[2].outstanding = 9;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 8, &d), 0); /* all full: least loaded */
	struct request r;
	memset(&r, 0, sizeof r);
	r.session = 7;
	ops->on_complete(st, &r, 1, 1); /* session over: its mapping goes */
	nodes[0].outstanding = 0;
	nodes[1].outstanding = 2;
	ck_assert_int_eq(route_one(ops, st, nodes, 3, 7, &d), 0);
	ops->destroy(st);
}
END_TEST

START_TEST(round_robin_and_least_loaded)
{
	struct pol_env env = {3, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("round_robin", NULL, &env, &ops);
	struct pol_node_view nodes[3] = {{.up = 1}, {.up = 0}, {.up = 1}};
	struct pol_decision d;
	int seq[4];
	for (int i = 0; i < 4; i++)
		seq[i] = route_one(ops, st, nodes, 3, (uint64_t)i + 1, &d);
	ck_assert_int_eq(seq[0], 0);
	ck_assert_int_eq(seq[1], 2); /* node 1 is down: skipped */
	ck_assert_int_eq(seq[2], 0);
	ck_assert_int_eq(seq[3], 2);
	ops->destroy(st);

	st = make("least_loaded", "{\"metric\": \"queued_tokens\"}", &env, &ops);
	struct pol_node_view ll[3] = {{.queued_tokens = 500, .outstanding = 1, .up = 1},
				      {.queued_tokens = 100, .outstanding = 9, .up = 1},
				      {.queued_tokens = 100, .outstanding = 0, .up = 1}};
	ck_assert_int_eq(route_one(ops, st, ll, 3, 1, &d), 1);
	ops->destroy(st);
	st = make("least_loaded", NULL, &env, &ops);
	ck_assert_int_eq(route_one(ops, st, ll, 3, 1, &d), 2);
	ops->destroy(st);

	/* kv_blocks: the router's count of blocks over capacity (100 of
	 * 1,000 is 0.1; 150 of 3,000, a larger GPU, is 0.05; 0 of 100 on a
	 * node that is down does not count) */
	st = make("least_loaded", "{\"metric\": \"kv_blocks\"}", &env, &ops);
	ck_assert_int_eq(ops->reads_kv_util(st), 0); /* the router's own record: no reports */
	struct pol_node_view kb[3] = {{.active_blocks = 100, .kv_blocks = 1000, .up = 1},
				      {.active_blocks = 150, .kv_blocks = 3000, .up = 1},
				      {.active_blocks = 0, .kv_blocks = 100, .up = 0}};
	ck_assert_int_eq(route_one(ops, st, kb, 3, 1, &d), 1);
	/* speed divides the counted metrics, not a share of capacity */
	kb[0].speed = 4;
	ck_assert_int_eq(route_one(ops, st, kb, 3, 1, &d), 1);
	ops->destroy(st);
	/* outstanding over speed: 6 requests on a node three times as fast
	 * are less load than 3 on a node of speed 1 */
	st = make("least_loaded", NULL, &env, &ops);
	struct pol_node_view sp[2] = {{.outstanding = 3, .speed = 1, .up = 1},
				      {.outstanding = 6, .speed = 3, .up = 1}};
	ck_assert_int_eq(route_one(ops, st, sp, 2, 1, &d), 1);
	sp[1].speed = 1.5; /* 6 / 1.5 = 4 > 3 */
	ck_assert_int_eq(route_one(ops, st, sp, 2, 1, &d), 0);
	ops->destroy(st);
}
END_TEST

START_TEST(random_is_uniform)
{
	gsl_rng *r = rng_stream(42, 7);
	struct pol_env env = {4, 16, r, 0};
	const struct pol_ops *ops;
	void *st = make("random", NULL, &env, &ops);
	struct pol_node_view nodes[4] = {{.up = 1}, {.up = 1}, {.up = 1}, {.up = 1}};
	int count[4] = {0};
	struct pol_decision d;
	for (int i = 0; i < 40000; i++)
		count[route_one(ops, st, nodes, 4, 1, &d)]++;
	for (int i = 0; i < 4; i++) /* 10,000 expected, sd 87 */
		ck_assert_int_lt(abs(count[i] - 10000), 400);
	ops->destroy(st);
	gsl_rng_free(r);
}
END_TEST

START_TEST(prefix_affinity_keys_on_first_tokens)
{
	struct pol_env env = {4, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("prefix_affinity", "{\"prefix_tokens\": 32, \"threshold\": 10}", &env,
			&ops);
	struct pol_node_view nodes[4] = {{.outstanding = 3, .up = 1},
					 {.outstanding = 0, .up = 1},
					 {.outstanding = 1, .up = 1},
					 {.outstanding = 2, .up = 1}};
	uint64_t h1[4] = {11, 22, 33, 44}, h2[4] = {11, 22, 55, 66}, h3[4] = {11, 99, 33, 44};
	struct request r;
	memset(&r, 0, sizeof r);
	r.prompt_tokens = 64;
	r.n_hashes = 4;
	struct pol_view v = view_of(nodes, 4);
	struct pol_decision d;
	r.session = 1;
	r.hashes = h1;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 1);
	ck_assert_uint_eq(d.hashed_tokens, 32); /* K tokens hashed */
	ck_assert_uint_eq(d.store_reads, 1);
	ck_assert_uint_eq(d.store_writes, 1); /* a new key */
	ops->on_dispatch(st, &r, d.node);
	nodes[1].outstanding = 5;
	/* Another session sharing the first 32 tokens follows it. */
	r.session = 2;
	r.hashes = h2;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 1);
	ck_assert_uint_eq(d.store_writes, 0); /* a hit: read only */
	/* One that differs in block 1 does not. */
	r.session = 3;
	r.hashes = h3;
	ops->route(st, &v, &r, &d);
	ck_assert_int_eq(d.node, 2);
	ops->destroy(st);
}
END_TEST


START_TEST(power_of_two_picks_the_lesser_of_two)
{
	gsl_rng *r = rng_stream(9, 7);
	struct pol_env env = {3, 16, r, 0};
	const struct pol_ops *ops;
	void *st = make("power_of_two", NULL, &env, &ops);
	struct pol_node_view nodes[3] = {{.outstanding = 0, .up = 1},
					 {.outstanding = 10, .up = 1},
					 {.outstanding = 20, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	int count[3] = {0};
	struct pol_decision d;
	struct request q;
	memset(&q, 0, sizeof q);
	for (int i = 0; i < 30000; i++) {
		ops->route(st, &v, &q, &d);
		count[d.node]++;
	}
	/* Node 2 loses every pair; node 0 wins whenever drawn (2/3). */
	ck_assert_int_eq(count[2], 0);
	ck_assert_int_lt(abs(count[0] - 20000), 500);
	/* Two nodes: always the lesser. */
	nodes[0].outstanding = 5;
	nodes[1].outstanding = 1;
	v = view_of(nodes, 2);
	for (int i = 0; i < 100; i++) {
		ops->route(st, &v, &q, &d);
		ck_assert_int_eq(d.node, 1);
	}
	/* Only one node up. */
	nodes[1].up = 0;
	v = view_of(nodes, 2);
	ops->route(st, &v, &q, &d);
	ck_assert_int_eq(d.node, 0);
	ops->destroy(st);
	gsl_rng_free(r);
}
END_TEST

START_TEST(consistent_hash_ring_is_stable_and_bounded)
{
	struct pol_env env8 = {8, 16, NULL, 0}, env9 = {9, 16, NULL, 0};
	const struct pol_ops *ops;
	void *a = make("consistent_hash", "{\"load_factor\": 0}", &env8, &ops);
	void *b = make("consistent_hash", "{\"load_factor\": 0}", &env9, &ops);
	struct pol_node_view nodes[9];
	for (int i = 0; i < 9; i++)
		nodes[i] = (struct pol_node_view){.up = 1};
	int moved = 0, per_node[8] = {0};
	for (uint64_t k = 1; k <= 10000; k++) {
		int32_t x = where(ops, a, nodes, 8, k), y = where(ops, b, nodes, 9, k);
		per_node[x]++;
		if (x != y) {
			moved++;
			ck_assert_int_eq(y, 8); /* a key only ever moves to the new node */
		}
	}
	/* ~1/9 of the keys move (100 vnodes per node). */
	ck_assert_int_gt(moved, 800);
	ck_assert_int_lt(moved, 1500);
	for (int i = 0; i < 8; i++) /* 1,250 each on average */
		ck_assert_int_lt(abs(per_node[i] - 1250), 400);
	ops->destroy(a);
	ops->destroy(b);

	/* Bounded loads: 2 nodes, 10 outstanding, c = 1.25: cap =
	 * ceil(1.25 x 11 / 2) = 7; an owner at 7 is passed over. */
	struct pol_env env2 = {2, 16, NULL, 0};
	a = make("consistent_hash", NULL, &env2, &ops);
	nodes[0].outstanding = 5;
	nodes[1].outstanding = 5;
	int32_t owner = where(ops, a, nodes, 2, 77);
	nodes[owner].outstanding = 7;
	nodes[1 - owner].outstanding = 3;
	ck_assert_int_eq(where(ops, a, nodes, 2, 77), 1 - owner);
	nodes[owner].outstanding = 6;
	nodes[1 - owner].outstanding = 4;
	ck_assert_int_eq(where(ops, a, nodes, 2, 77), owner);
	/* The owner down: the next one. */
	nodes[owner].up = 0;
	ck_assert_int_eq(where(ops, a, nodes, 2, 77), 1 - owner);
	ops->destroy(a);
}
END_TEST

static int32_t route_prompt(const struct pol_ops *ops, void *st, struct pol_view *v,
			    uint64_t *hashes, uint32_t n_blocks, int dispatch)
{
	struct request q;
	memset(&q, 0, sizeof q);
	q.session = hashes[0];
	q.hashes = hashes;
	q.n_hashes = n_blocks;
	q.prompt_tokens = n_blocks * 16;
	struct pol_decision d;
	ops->route(st, v, &q, &d);
	if (dispatch && d.action == POL_ROUTE && ops->on_dispatch)
		ops->on_dispatch(st, &q, d.node);
	return d.action == POL_ROUTE ? d.node : -1;
}

START_TEST(cache_aware_follows_sglang)
{
	struct pol_env env = {3, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("cache_aware", NULL, &env, &ops);
	struct pol_node_view nodes[3] = {{.outstanding = 1, .up = 1},
					 {.outstanding = 0, .up = 1},
					 {.outstanding = 1, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	uint64_t p1[4] = {1, 2, 3, 4}, p2[4] = {1, 2, 3, 9}, p3[4] = {1, 7, 8, 9};
	/* Empty trees: no match, the smallest tree (all 0: lowest id). */
	ck_assert_int_eq(route_prompt(ops, st, &v, p1, 4, 0), 0);
	/* Record p1 on node 1. */
	struct request q;
	memset(&q, 0, sizeof q);
	q.hashes = p1;
	q.n_hashes = 4;
	q.prompt_tokens = 64;
	ops->on_dispatch(st, &q, 1);
	/* 3 of 4 blocks match: 0.75 > 0.5: node 1. */
	ck_assert_int_eq(route_prompt(ops, st, &v, p2, 4, 0), 1);
	/* 1 of 4: 0.25: the smallest tree, node 0 (node 1 holds 4 blocks). */
	ck_assert_int_eq(route_prompt(ops, st, &v, p3, 4, 1), 0);
	/* p3 went to node 0 (4 blocks): now node 2's tree is the smallest. */
	uint64_t p4[4] = {50, 51, 52, 53};
	ck_assert_int_eq(route_prompt(ops, st, &v, p4, 4, 0), 2);
	/* Imbalanced: max - min = 40 > 32 and 40 > 1.1 x 0: the shortest
	 * queue, despite node 1's full match. */
	nodes[0].outstanding = 0;
	nodes[1].outstanding = 40;
	nodes[2].outstanding = 10;
	v = view_of(nodes, 3);
	ck_assert_int_eq(route_prompt(ops, st, &v, p1, 4, 0), 0);
	/* 40 - 10 = 30 <= 32: balanced enough, the cache wins. */
	nodes[0].outstanding = 10;
	v = view_of(nodes, 3);
	ck_assert_int_eq(route_prompt(ops, st, &v, p1, 4, 0), 1);
	ops->destroy(st);
	/* The relative test alone (abs_threshold 2): 40 vs 37 is not above
	 * 1.1 x 37 = 40.7, so the cache wins; 40 vs 36 is above 39.6. */
	st = make("cache_aware", "{\"abs_threshold\": 2}", &env, &ops);
	ops->on_dispatch(st, &q, 1);
	nodes[0].outstanding = 37;
	nodes[2].up = 0;
	v = view_of(nodes, 3);
	ck_assert_int_eq(route_prompt(ops, st, &v, p1, 4, 0), 1);
	nodes[0].outstanding = 36;
	v = view_of(nodes, 3);
	ck_assert_int_eq(route_prompt(ops, st, &v, p1, 4, 0), 0);
	ops->destroy(st);
}
END_TEST

/* A fake exact index: hits[node] blocks of any prompt. */
static uint32_t fake_hits[4];
static uint32_t fake_cached(void *ctx, uint32_t node, const struct request *r)
{
	(void)ctx;
	(void)r;
	return fake_hits[node];
}

START_TEST(kv_cost_follows_dynamo)
{
	gsl_rng *rg = rng_stream(3, 7);
	struct pol_env env = {3, 16, rg, 0};
	const struct pol_ops *ops;
	struct pol_node_view nodes[3] = {{.kv_used_blocks = 10, .up = 1},
					 {.kv_used_blocks = 30, .up = 1},
					 {.kv_used_blocks = 5, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	fake_hits[0] = 0;
	fake_hits[1] = 8;
	fake_hits[2] = 4;
	uint64_t h[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	/* The older form (load "engine"): the engine's KV use, no in-flight
	 * count. 10 prompt blocks. w = 1: 10+10 = 20, 2+30 = 32, 6+5 = 11 ->
	 * node 2. */
	void *st = make("kv_cost", "{\"load\": \"engine\"}", &env, &ops);
	ck_assert_int_eq(ops->reads_kv_util(st), POL_READS_KV_SOME);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	ops->destroy(st);
	/* w = 5: 60, 40, 35 -> node 2; w = 10: 110, 50, 65 -> node 1. */
	st = make("kv_cost", "{\"load\": \"engine\", \"overlap_weight\": 5}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	ops->destroy(st);
	st = make("kv_cost", "{\"load\": \"engine\", \"overlap_weight\": 10}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 1);
	/* A tie (nodes 0 and 2 at 20): drawn uniformly between them. */
	fake_hits[2] = 1;
	nodes[2].kv_used_blocks = 10;
	nodes[0].kv_used_blocks = 0;
	fake_hits[0] = 0;
	fake_hits[1] = 0;
	int c[3] = {0};
	for (int i = 0; i < 2000; i++)
		c[route_prompt(ops, st, &v, h, 10, 0)]++;
	/* costs: 100, 130, 100 */
	ck_assert_int_eq(c[1], 0);
	ck_assert_int_gt(c[0], 850);
	ck_assert_int_gt(c[2], 850);
	ops->destroy(st);
	/* Temperature: a softmax over normalised costs; the cheapest is most
	 * likely but not certain. costs 100, 130, 100 -> p = e^0 : e^-1 : e^0
	 * at temperature 1 (normalised 0, 1, 0): node 1 with 1/(2e+1) = 0.155. */
	st = make("kv_cost", "{\"load\": \"engine\", \"overlap_weight\": 10, \"temperature\": 1}",
		  &env, &ops);
	ck_assert_int_eq(ops->reads_kv_util(st), POL_READS_KV_ALL);
	c[0] = c[1] = c[2] = 0;
	for (int i = 0; i < 20000; i++)
		c[route_prompt(ops, st, &v, h, 10, 0)]++;
	ck_assert_int_lt(abs(c[1] - 3104), 250);
	ops->destroy(st);
	gsl_rng_free(rg);
}
END_TEST

/* A fake view of the lower tiers: after the device hit (which the caller
 * passes as `from`), host[node] blocks in DRAM, then disk[node] in NVMe. */
static uint32_t fake_host[64], fake_disk[64];
static uint32_t tier_lookups;
static void fake_tiers(void *ctx, uint32_t node, const struct request *r, uint32_t from,
		       uint32_t *host, uint32_t *disk)
{
	(void)ctx;
	(void)r;
	(void)from;
	tier_lookups++;
	*host = fake_host[node];
	*disk = fake_disk[node];
}
static uint32_t checked_tiers_from[64];
static void checked_tiers(void *ctx, uint32_t node, const struct request *r, uint32_t from,
			  uint32_t *host, uint32_t *disk)
{
	checked_tiers_from[node] = from;
	fake_tiers(ctx, node, r, from, host, disk);
}

/* Dynamo's current cost on the router's own record, by hand. B = 16, a
 * 10-block prompt (160 tokens): need 10 blocks, and 10 projected blocks
 * on every node.
 *   adjusted = max(prefill tokens / 16 + 10 - credit, 0)
 *   cost = overlap_weight x adjusted + active blocks + 10 */
START_TEST(kv_cost_counts_in_flight_blocks)
{
	gsl_rng *rg = rng_stream(3, 9);
	struct pol_env env = {3, 16, rg, 0};
	const struct pol_ops *ops;
	struct pol_node_view nodes[3] = {
	    {.prefill_tokens = 320, .active_blocks = 50, .kv_used_blocks = 0, .up = 1},
	    {.prefill_tokens = 0, .active_blocks = 70, .kv_used_blocks = 0, .up = 1},
	    {.prefill_tokens = 160, .active_blocks = 60, .kv_used_blocks = 0, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	fake_hits[0] = 0;
	fake_hits[1] = 8;
	fake_hits[2] = 4;
	uint64_t h[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	void *st = make("kv_cost", NULL, &env, &ops);
	ck_assert_int_eq(ops->reads_kv_util(st), 0); /* no engine figure */
	/* 20 + 10 - 0 = 30 -> 90; 0 + 10 - 8 = 2 -> 82; 10 + 10 - 4 = 16 -> 86 */
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 1);
	/* 256 tokens routed to node 1 and not yet prefilled: 16 + 10 - 8 = 18
	 * -> 98: node 2 (the engine's KV use, 0 everywhere, does not see them) */
	nodes[1].prefill_tokens = 256;
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	/* Their first tokens are due at t = 1000 ns: counted until then, not
	 * from then on (Dynamo marks a prefill complete at its first token) */
	nodes[1].prefill_done_tokens = 256;
	nodes[1].prefill_done_ns = 1000;
	v.now_ns = 999;
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	v.now_ns = 1000;
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 1);
	ops->destroy(st);
	/* At t = 0 node 1's 256 tokens count again. overlap_weight (Dynamo's
	 * prefill_load_scale) 0: active blocks alone, 60, 80, 70: node 0; 2:
	 * 2 x 30 + 60 = 120, 2 x 18 + 80 = 116, 2 x 16 + 70 = 102: node 2 */
	v.now_ns = 0;
	st = make("kv_cost", "{\"overlap_weight\": 0}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 0);
	ops->destroy(st);
	st = make("kv_cost", "{\"overlap_weight\": 2}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	ops->destroy(st);
	/* The adjusted prefill is never below 0: device credit 3, node 0 with
	 * 8 blocks cached and 70 active, node 1 with 10 and 74: max(10 - 24,
	 * 0) + 80 = 80 against max(10 - 30, 0) + 84 = 84: node 0 (unclamped,
	 * 66 against 64, node 1 would win) */
	struct pol_node_view two[2] = {{.active_blocks = 70, .up = 1},
				       {.active_blocks = 74, .up = 1}};
	struct pol_view v2 = view_of(two, 2);
	v2.cached_prefix = fake_cached;
	fake_hits[0] = 8;
	fake_hits[1] = 10;
	struct pol_env env2 = {2, 16, rg, 0};
	st = make("kv_cost", "{\"device_credit\": 3}", &env2, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v2, h, 10, 0), 0);
	ops->destroy(st);
	/* Lower tiers, after the blocks in HBM: node 0 has 4 in HBM, then 4 in
	 * DRAM and 2 in NVMe: credit 4 + 0.75 x 4 + 0.25 x 2 = 7.5, cost 10 -
	 * 7.5 + 30 = 32.5; node 1 has 7 in HBM: 10 - 7 + 30 = 33: node 0. With
	 * host_credit 0.5: 4 + 2 + 0.5 = 6.5, 33.5: node 1. */
	two[0].active_blocks = two[1].active_blocks = 20;
	fake_hits[0] = 4;
	fake_hits[1] = 7;
	fake_host[0] = 4;
	fake_disk[0] = 2;
	fake_host[1] = fake_disk[1] = 0;
	v2.cached_tiers = checked_tiers;
	st = make("kv_cost", NULL, &env2, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v2, h, 10, 0), 0);
	ck_assert_uint_eq(checked_tiers_from[0], 4); /* asked past the HBM hit */
	ck_assert_uint_eq(checked_tiers_from[1], 7);
	ops->destroy(st);
	st = make("kv_cost", "{\"host_credit\": 0.5}", &env2, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v2, h, 10, 0), 1);
	ops->destroy(st);
	/* Without tiers (no callback) node 0's credit is 4: node 1 */
	v2.cached_tiers = NULL;
	st = make("kv_cost", NULL, &env2, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v2, h, 10, 0), 1);
	ops->destroy(st);
	/* Bad values name their path */
	char err[256] = "";
	cJSON *bad = cJSON_Parse("{\"host_credit\": 1.5}");
	ck_assert_ptr_null(ops->create(bad, "router.params", &env, err, sizeof err));
	ck_assert_ptr_nonnull(strstr(err, "router.params.host_credit"));
	cJSON_Delete(bad);
	bad = cJSON_Parse("{\"load\": \"queue\"}");
	ck_assert_ptr_null(ops->create(bad, "router.params", &env, err, sizeof err));
	ck_assert_ptr_nonnull(strstr(err, "router.params.load"));
	cJSON_Delete(bad);
	gsl_rng_free(rg);
}
END_TEST

/* The index lookups kv_cost skips (nodes whose cost with the whole prompt
 * cached already exceeds the minimum so far) change nothing: on random
 * views full of ties, its picks and its draws from the routing stream are
 * those of the full scan with the reservoir draw among the minima. */
static uint32_t scan_hits[64];
static uint32_t scan_lookups;
static uint32_t scan_cached(void *ctx, uint32_t node, const struct request *r)
{
	(void)ctx;
	(void)r;
	scan_lookups++;
	return scan_hits[node];
}

START_TEST(kv_cost_skipped_lookups_change_nothing)
{
	enum { N = 64, BLOCKS = 12 };
	gsl_rng *rg = rng_stream(5, 7), *ref = gsl_rng_clone(rg), *gen = rng_stream(6, 1);
	struct pol_env env = {N, 16, rg, 0};
	const struct pol_ops *ops;
	void *st = make("kv_cost", "{\"load\": \"engine\", \"overlap_weight\": 2}", &env, &ops);
	struct pol_node_view nodes[N];
	uint64_t h[BLOCKS];
	for (uint32_t b = 0; b < BLOCKS; b++)
		h[b] = b + 1;
	uint32_t lookups = 0;
	for (int round = 0; round < 3000; round++) {
		memset(nodes, 0, sizeof nodes);
		for (uint32_t i = 0; i < N; i++) {
			/* Few distinct values, so costs tie often. */
			nodes[i].up = gsl_rng_uniform_int(gen, 8) != 0;
			nodes[i].kv_used_blocks = 2 * (uint32_t)gsl_rng_uniform_int(gen, 5);
			scan_hits[i] = (uint32_t)gsl_rng_uniform_int(gen, BLOCKS + 1);
		}
		struct pol_view v = view_of(nodes, N);
		v.cached_prefix = scan_cached;
		scan_lookups = 0;
		int32_t got = route_prompt(ops, st, &v, h, BLOCKS, 0);
		lookups += scan_lookups;
		/* The full scan, drawing from a copy of the stream. */
		double lo = INFINITY;
		uint32_t n_lo = 0;
		int32_t want = -1;
		for (uint32_t i = 0; i < N; i++) {
			if (!nodes[i].up)
				continue;
			double c = 2.0 * (BLOCKS - scan_hits[i]) + nodes[i].kv_used_blocks;
			if (c < lo) {
				lo = c;
				n_lo = 0;
			}
			if (c == lo && (++n_lo == 1 || gsl_rng_uniform_int(ref, n_lo) == 0))
				want = (int32_t)i;
		}
		ck_assert_int_eq(got, want);
		ck_assert_uint_eq(gsl_rng_get(rg), gsl_rng_get(ref));
	}
	/* And lookups were skipped (7/8 of 64 nodes up, 3000 rounds). */
	ck_assert_uint_lt(lookups, 3000u * 56u / 2u);
	ops->destroy(st);
	gsl_rng_free(gen);
	gsl_rng_free(ref);
	gsl_rng_free(rg);
}
END_TEST

/* The same on the router's own record, lower tiers included: the lookups
 * (HBM and tiers) of nodes whose cost with every block they could hold
 * credited exceeds the minimum so far are skipped; picks and draws are
 * those of the full scan. Prefill figures in part due (some before now,
 * some after), fractional blocks, and rounds without tiers. */
START_TEST(kv_cost_router_skipped_lookups_change_nothing)
{
	enum { N = 64, BLOCKS = 12 };
	gsl_rng *rg = rng_stream(15, 7), *ref = gsl_rng_clone(rg), *gen = rng_stream(16, 1);
	struct pol_env env = {N, 16, rg, 0};
	const struct pol_ops *ops;
	void *st = make("kv_cost", NULL, &env, &ops);
	struct pol_node_view nodes[N];
	uint64_t h[BLOCKS];
	for (uint32_t b = 0; b < BLOCKS; b++)
		h[b] = b + 1;
	uint32_t lookups = 0, tiers = 0;
	for (int round = 0; round < 3000; round++) {
		int with_tiers = round % 2;
		memset(nodes, 0, sizeof nodes);
		for (uint32_t i = 0; i < N; i++) {
			nodes[i].up = gsl_rng_uniform_int(gen, 8) != 0;
			nodes[i].active_blocks = 4 * gsl_rng_uniform_int(gen, 4);
			nodes[i].prefill_tokens = 8 * gsl_rng_uniform_int(gen, 6);
			nodes[i].prefill_done_tokens =
			    8 * gsl_rng_uniform_int(gen, nodes[i].prefill_tokens / 8 + 1);
			nodes[i].prefill_done_ns = (int64_t)gsl_rng_uniform_int(gen, 3);
			scan_hits[i] = (uint32_t)gsl_rng_uniform_int(gen, BLOCKS + 1);
			fake_host[i] = (uint32_t)gsl_rng_uniform_int(gen, BLOCKS - scan_hits[i] + 1);
			fake_disk[i] = (uint32_t)gsl_rng_uniform_int(
			    gen, BLOCKS - scan_hits[i] - fake_host[i] + 1);
		}
		struct pol_view v = view_of(nodes, N);
		v.now_ns = 1;
		v.cached_prefix = scan_cached;
		v.cached_tiers = with_tiers ? fake_tiers : NULL;
		scan_lookups = tier_lookups = 0;
		int32_t got = route_prompt(ops, st, &v, h, BLOCKS, 0);
		lookups += scan_lookups;
		tiers += tier_lookups;
		double lo = INFINITY;
		uint32_t n_lo = 0;
		int32_t want = -1;
		for (uint32_t i = 0; i < N; i++) {
			if (!nodes[i].up)
				continue;
			uint64_t pf = nodes[i].prefill_tokens -
				      (v.now_ns >= nodes[i].prefill_done_ns ? nodes[i].prefill_done_tokens
									    : 0);
			double pre = (double)pf / 16.0 + (double)BLOCKS * 16 / 16.0;
			double load = (double)nodes[i].active_blocks + (double)BLOCKS;
			uint32_t host = 0, disk = 0;
			if (with_tiers && scan_hits[i] < BLOCKS) {
				host = fake_host[i];
				disk = fake_disk[i];
			}
			double x = pre - (1.0 * scan_hits[i] + 0.75 * host + 0.25 * disk);
			double c = 1.0 * (x > 0 ? x : 0) + load;
			if (c < lo) {
				lo = c;
				n_lo = 0;
			}
			if (c == lo && (++n_lo == 1 || gsl_rng_uniform_int(ref, n_lo) == 0))
				want = (int32_t)i;
		}
		ck_assert_int_eq(got, want);
		ck_assert_uint_eq(gsl_rng_get(rg), gsl_rng_get(ref));
	}
	ck_assert_uint_lt(lookups, 3000u * 56u / 2u);
	ck_assert_uint_gt(tiers, 0);
	ck_assert_uint_lt(tiers, 1500u * 56u / 2u);
	ops->destroy(st);
	gsl_rng_free(gen);
	gsl_rng_free(ref);
	gsl_rng_free(rg);
}
END_TEST

/* kv_cost with candidates: only the session's last node and the nodes
 * drawn (Floyd's sampling over the nodes up) are scored and brought up to
 * date; the session's node is forgotten when the session ends. */
static uint32_t synced[8];
static void fake_sync(void *ctx, const uint32_t *nodes, uint32_t n)
{
	(void)ctx;
	for (uint32_t x = 0; x < n; x++)
		synced[nodes[x]]++;
}

START_TEST(kv_cost_scores_only_its_candidates)
{
	enum { N = 5, BLOCKS = 4 };
	gsl_rng *rg = rng_stream(9, 7), *ref = gsl_rng_clone(rg);
	struct pol_env env = {N, 16, rg, 0};
	const struct pol_ops *ops;
	void *st = make("kv_cost", "{\"load\": \"engine\", \"candidates\": 1}", &env, &ops);
	ck_assert_int_eq(ops->reads_kv_util(st), POL_READS_KV_SOME);
	struct pol_node_view nodes[N];
	memset(nodes, 0, sizeof nodes);
	for (uint32_t i = 0; i < N; i++) {
		nodes[i].up = 1;
		nodes[i].kv_used_blocks = 10 * i; /* the lowest id costs least */
		scan_hits[i] = 0;
	}
	struct pol_view v = view_of(nodes, N);
	v.cached_prefix = scan_cached;
	v.sync_kv = fake_sync;
	uint64_t h[BLOCKS] = {11, 12, 13, 14};
	for (int round = 0; round < 50; round++) {
		/* First turn: one node drawn, no session record. */
		memset(synced, 0, sizeof synced);
		uint32_t t = (uint32_t)gsl_rng_uniform_int(ref, N);
		ck_assert_int_eq(route_prompt(ops, st, &v, h, BLOCKS, 1), (int32_t)t);
		for (uint32_t i = 0; i < N; i++)
			ck_assert_uint_eq(synced[i], i == t);
		/* Next turn: the session's node t and a new draw t2; the cheaper. */
		memset(synced, 0, sizeof synced);
		uint32_t t2 = (uint32_t)gsl_rng_uniform_int(ref, N);
		uint32_t want = t < t2 ? t : t2;
		ck_assert_int_eq(route_prompt(ops, st, &v, h, BLOCKS, 1), (int32_t)want);
		for (uint32_t i = 0; i < N; i++)
			ck_assert_uint_eq(synced[i], i == t || i == t2);
		/* The session ends: its record goes. */
		struct request q;
		memset(&q, 0, sizeof q);
		q.session = h[0];
		ops->on_complete(st, &q, (int32_t)want, 1);
		uint32_t t3 = (uint32_t)gsl_rng_uniform_int(ref, N);
		ck_assert_int_eq(route_prompt(ops, st, &v, h, BLOCKS, 0), (int32_t)t3);
	}
	ck_assert_uint_eq(gsl_rng_get(rg), gsl_rng_get(ref));
	ops->destroy(st);
	/* Three candidates of five: distinct, so three nodes are synced. */
	st = make("kv_cost", "{\"load\": \"engine\", \"candidates\": 3}", &env, &ops);
	for (int round = 0; round < 50; round++) {
		memset(synced, 0, sizeof synced);
		int32_t got = route_prompt(ops, st, &v, h, BLOCKS, 0);
		uint32_t n_synced = 0, lowest = N;
		for (uint32_t i = 0; i < N; i++) {
			ck_assert_uint_le(synced[i], 1);
			n_synced += synced[i];
			if (synced[i] && lowest == N)
				lowest = i;
		}
		ck_assert_uint_eq(n_synced, 3);
		ck_assert_int_eq(got, (int32_t)lowest);
	}
	/* A node down is never a candidate: three of the four up. */
	nodes[1].up = 0;
	v = view_of(nodes, N);
	v.cached_prefix = scan_cached;
	v.sync_kv = fake_sync;
	for (int round = 0; round < 50; round++) {
		memset(synced, 0, sizeof synced);
		int32_t got = route_prompt(ops, st, &v, h, BLOCKS, 0);
		uint32_t n_synced = 0, lowest = N;
		for (uint32_t i = 0; i < N; i++) {
			n_synced += synced[i];
			if (synced[i] && lowest == N)
				lowest = i;
		}
		ck_assert_uint_eq(synced[1], 0);
		ck_assert_uint_eq(n_synced, 3);
		ck_assert_int_eq(got, (int32_t)lowest);
	}
	ops->destroy(st);
	/* Unknown values are refused with the path. */
	char err[256] = "";
	cJSON *bad = cJSON_Parse("{\"candidates\": 257}");
	ck_assert_ptr_null(ops->create(bad, "router.params", &env, err, sizeof err));
	ck_assert_ptr_nonnull(strstr(err, "router.params.candidates"));
	cJSON_Delete(bad);
	gsl_rng_free(ref);
	gsl_rng_free(rg);
}
END_TEST

START_TEST(weighted_scorer_follows_llm_d)
{
	gsl_rng *rg = rng_stream(3, 7);
	struct pol_env env = {3, 16, rg, 0};
	const struct pol_ops *ops;
	struct pol_node_view nodes[3] = {{.kv_util = 0.2, .queued = 0, .up = 1},
					 {.kv_util = 0.9, .queued = 4, .up = 1},
					 {.kv_util = 0.5, .queued = 2, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	fake_hits[0] = 0;
	fake_hits[1] = 10;
	fake_hits[2] = 5;
	uint64_t h[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	/* Weights 2, 1, 1 (and the active scorer, 1 on every node while none
	 * has requests out): 0 + 0.8 + 1 = 1.8; 2 + 0.1 + 0 = 2.1; 1 + 0.5 +
	 * 0.5 = 2.0 -> node 1. */
	void *st = make("weighted_scorer", "{\"prefix\": \"exact\"}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 1);
	ops->destroy(st);
	/* Prefix weight 1: 1.8, 1.1, 1.5 -> node 0. */
	st = make("weighted_scorer", "{\"prefix\": \"exact\", \"prefix_weight\": 1}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 0);
	ops->destroy(st);
	/* The active-request scorer (1 by default): requests the router sent
	 * and has not seen finish, (max - a) / max. Outstanding 0, 9, 3: 1, 0,
	 * 2/3: 2.8, 2.1, 2.667 -> node 0; routed_since does not enter the
	 * queue scorer (llm-d's reads the report). */
	nodes[1].outstanding = 9;
	nodes[2].outstanding = 3;
	nodes[0].routed_since = 50;
	v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	st = make("weighted_scorer", "{\"prefix\": \"exact\"}", &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 0);
	ops->destroy(st);
	/* active_weight 0: node 1 again (2.1 against 1.8 and 2.0) */
	st = make("weighted_scorer", "{\"prefix\": \"exact\", \"active_weight\": 0}", &env,
		  &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 1);
	ops->destroy(st);
	nodes[0].outstanding = nodes[1].outstanding = nodes[2].outstanding = 0;
	v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	/* Approximate index: what was routed, not what is cached. A prompt
	 * routed to node 2 makes node 2 the full match: 2 + 0.5 + 0.5 = 3. */
	st = make("weighted_scorer", NULL, &env, &ops);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 0); /* no record: 1.8 */
	struct request q;
	memset(&q, 0, sizeof q);
	q.hashes = h;
	q.n_hashes = 10;
	q.prompt_tokens = 160;
	ops->on_dispatch(st, &q, 2);
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	ops->destroy(st);
	gsl_rng_free(rg);
}
END_TEST

START_TEST(precise_prefix_is_bounded)
{
	struct pol_env env = {3, 16, NULL, 0};
	const struct pol_ops *ops;
	void *st = make("precise_prefix", NULL, &env, &ops);
	struct pol_node_view nodes[3] = {{.outstanding = 0, .up = 1},
					 {.outstanding = 6, .up = 1},
					 {.outstanding = 2, .up = 1}};
	struct pol_view v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	fake_hits[0] = 3;
	fake_hits[1] = 9;
	fake_hits[2] = 9;
	uint64_t h[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	/* cap = ceil(1.25 x 9 / 3) = 4: node 1 (6) is out; node 2 has 9. */
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	/* outstanding 0, 3, 3: cap = ceil(1.25 x 7 / 3) = 3: both 9s out. */
	nodes[1].outstanding = 3;
	nodes[2].outstanding = 3;
	v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 0);
	/* Equal hits: the fewer outstanding. */
	nodes[1].outstanding = 1;
	nodes[2].outstanding = 0;
	nodes[0].outstanding = 0;
	v = view_of(nodes, 3);
	v.cached_prefix = fake_cached;
	ck_assert_int_eq(route_prompt(ops, st, &v, h, 10, 0), 2);
	ops->destroy(st);
}
END_TEST

START_TEST(every_policy_is_listed_and_routes)
{
	size_t n;
	const struct pol_ops *const *all = pol_all(&n);
	ck_assert_uint_eq(n, 11);
	gsl_rng *rg = rng_stream(1, 7);
	struct pol_env env = {4, 16, rg, 0};
	struct pol_node_view nodes[4] = {{.up = 1}, {.up = 1}, {.up = 0}, {.up = 1}};
	uint64_t h[4] = {1, 2, 3, 4};
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(all[i]->description && strlen(all[i]->description) > 20, "%s",
			      all[i]->name);
		const struct pol_ops *ops;
		void *st = make(all[i]->name, NULL, &env, &ops);
		struct pol_view v = view_of(nodes, 4);
		v.cached_prefix = fake_cached;
		memset(fake_hits, 0, sizeof fake_hits);
		for (int k = 0; k < 50; k++) {
			h[0] = (uint64_t)k + 1;
			int32_t to = route_prompt(ops, st, &v, h, 4, 1);
			ck_assert_msg(to >= 0 && to != 2, "%s sent a request to %d", all[i]->name, to);
		}
		ops->destroy(st);
	}
	gsl_rng_free(rg);
}
END_TEST

/* The simulator's load heap gives the node a scan for the least-loaded one
 * finds (ties to the lowest id), through any sequence of load changes and
 * nodes going down and up; least_loaded and session_affinity decide the
 * same with it as without. */
START_TEST(load_heap_matches_a_scan)
{
	enum { N = 37 };
	struct pol_node_view nodes[N];
	for (int i = 0; i < N; i++)
		nodes[i] = (struct pol_node_view){.outstanding = (uint32_t)(i % 5), .up = 1};
	struct loadheap h;
	ck_assert_int_eq(lh_init(&h, nodes, N), 0);
	gsl_rng *rg = rng_stream(5, 9);
	struct pol_env env = {N, 16, NULL, 0};
	const struct pol_ops *ll, *sa;
	void *sl = make("least_loaded", NULL, &env, &ll);
	void *ss = make("session_affinity", "{\"threshold\": 3}", &env, &sa);
	for (int step = 0; step < 20000; step++) {
		uint32_t i = (uint32_t)gsl_rng_uniform_int(rg, N);
		unsigned long what = gsl_rng_uniform_int(rg, 10);
		if (what < 4) {
			nodes[i].outstanding++;
			lh_fix(&h, i);
		} else if (what < 8) {
			if (nodes[i].outstanding)
				nodes[i].outstanding--;
			lh_fix(&h, i);
		} else if (what == 8 && nodes[i].up) {
			nodes[i].up = 0;
			lh_remove(&h, i);
		} else if (!nodes[i].up) {
			nodes[i].up = 1;
			lh_insert(&h, i);
		}
		int32_t scan = -1;
		for (int k = 0; k < N; k++)
			if (nodes[k].up && (scan < 0 || nodes[k].outstanding < nodes[scan].outstanding))
				scan = k;
		ck_assert_int_eq(lh_min(&h), scan);
		struct pol_view plain = view_of(nodes, N), fast = plain;
		fast.least_outstanding = heap_min;
		fast.lctx = &h;
		struct request q;
		memset(&q, 0, sizeof q);
		q.session = (uint64_t)step + 1;
		struct pol_decision a, b;
		ll->route(sl, &plain, &q, &a);
		ll->route(sl, &fast, &q, &b);
		ck_assert_int_eq(a.node, b.node);
		sa->route(ss, &plain, &q, &a);
		sa->route(ss, &fast, &q, &b);
		ck_assert_int_eq(a.node, b.node);
		ck_assert_int_eq(a.action, b.action);
	}
	ll->destroy(sl);
	sa->destroy(ss);
	lh_free(&h);
	gsl_rng_free(rg);
}
END_TEST

START_TEST(bad_params_name_the_path)
{
	struct pol_env env = {2, 16, NULL, 0};
	char err[512] = "";
	cJSON *p = cJSON_Parse("{\"threshold\": 0}");
	ck_assert_ptr_null(pol_find("session_affinity")->create(p, "router.params", &env, err,
								  sizeof err));
	ck_assert_msg(strstr(err, "router.params.threshold") != NULL, "%s", err);
	cJSON_Delete(p);
	p = cJSON_Parse("{\"treshold\": 5}");
	ck_assert_ptr_null(pol_find("session_affinity")->create(p, "router.params", &env, err,
								  sizeof err));
	ck_assert_msg(strstr(err, "router.params.treshold: unknown key") != NULL, "%s", err);
	cJSON_Delete(p);
	ck_assert_ptr_null(pol_find("no_such_policy"));
}
END_TEST

/* With every node down each policy sheds, for one reason: no_node_up
 * (not capacity, which means nodes are up but full). */
START_TEST(every_policy_says_no_node_up)
{
	gsl_rng *rg = rng_stream(1, 7);
	struct pol_env env = {3, 16, rg, 0};
	size_t n;
	const struct pol_ops *const *all = pol_all(&n);
	for (size_t k = 0; k < n; k++) {
		const struct pol_ops *ops;
		void *st = make(all[k]->name, NULL, &env, &ops);
		struct pol_node_view nodes[3] = {{.up = 0}, {.up = 0}, {.up = 0}};
		struct pol_decision d = {POL_ROUTE, 0, MIG_DEFAULT, NULL, 0, 0, 0};
		ck_assert_int_eq(route_one(ops, st, nodes, 3, 1, &d), -1);
		ck_assert_msg(d.reason && !strcmp(d.reason, "no_node_up"), "%s: %s", ops->name,
			      d.reason ? d.reason : "(none)");
		ops->destroy(st);
	}
	gsl_rng_free(rg);
}
END_TEST

/* Every entry of router.policy_params names a policy that accepts it;
 * a policy that takes no parameters says so. */
START_TEST(policy_params_are_checked_by_their_policy)
{
	struct pol_env env = {2, 16, NULL, 0};
	static const char *const cases[][2] = {
	    {"{\"kv_cst\": {}}", "router.policy_params.kv_cst: unknown policy \"kv_cst\" "
				  "(known: round_robin, "},
	    {"{\"kv_cost\": {\"bogus\": 0}}",
	     "router.policy_params.kv_cost.bogus: unknown key (expected one of: overlap_weight"},
	    {"{\"round_robin\": {\"x\": 1}}",
	     "router.policy_params.round_robin.x: unknown key (router.policy_params.round_robin "
	     "takes no keys)"},
	    {"{\"kv_cost\": {\"candidates\": 2}, \"least_loaded\": {\"metric\": \"x\"}}",
	     "router.policy_params.least_loaded.metric: expected one of"}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char err[512] = "";
		cJSON *pp = cJSON_Parse(cases[i][0]);
		ck_assert_int_eq(pol_check_params(pp, &env, err, sizeof err), -1);
		ck_assert_msg(strstr(err, cases[i][1]) == err, "%s", err);
		cJSON_Delete(pp);
	}
	char err[512] = "";
	cJSON *pp = cJSON_Parse("{\"kv_cost\": {\"candidates\": 2}, \"round_robin\": {}}");
	ck_assert_int_eq(pol_check_params(pp, &env, err, sizeof err), 0);
	ck_assert_int_eq(pol_check_params(NULL, &env, err, sizeof err), 0);
	cJSON_Delete(pp);
}
END_TEST

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, session_affinity_reference_case);
	tcase_add_test(tc, session_affinity_keeps_two_generations_of_keys);
	tcase_add_test(tc, session_affinity_ties_and_forgetting);
	tcase_add_test(tc, round_robin_and_least_loaded);
	tcase_add_test(tc, random_is_uniform);
	tcase_add_test(tc, prefix_affinity_keys_on_first_tokens);
	tcase_add_test(tc, bad_params_name_the_path);
	tcase_add_test(tc, every_policy_says_no_node_up);
	tcase_add_test(tc, policy_params_are_checked_by_their_policy);
	tcase_add_test(tc, power_of_two_picks_the_lesser_of_two);
	tcase_add_test(tc, consistent_hash_ring_is_stable_and_bounded);
	tcase_add_test(tc, cache_aware_follows_sglang);
	tcase_add_test(tc, kv_cost_follows_dynamo);
	tcase_add_test(tc, kv_cost_counts_in_flight_blocks);
	tcase_add_test(tc, kv_cost_skipped_lookups_change_nothing);
	tcase_add_test(tc, kv_cost_router_skipped_lookups_change_nothing);
	tcase_add_test(tc, kv_cost_scores_only_its_candidates);
	tcase_add_test(tc, weighted_scorer_follows_llm_d);
	tcase_add_test(tc, precise_prefix_is_bounded);
	tcase_add_test(tc, every_policy_is_listed_and_routes);
	tcase_add_test(tc, load_heap_matches_a_scan);
	suite_add_tcase(s, tc);
	return s;
}
