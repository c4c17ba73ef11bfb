/* check_physics: links, tiers, the watermark, shedding, faults and health,
 * router realism, and the policies' direction on real workloads. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "config/config.h"
#include "model/cost.h"
#include "base/flow.h"
#include "sim/request.h"
#include "sim/sim.h"
#include "tests/helpers.h"
#include "tests/suites.h"

/* --- max-min fair sharing ----------------------------------------------- */

START_TEST(fair_share_arithmetic)
{
	struct flownet n;
	ck_assert_int_eq(flow_init(&n, 3), 0);
	flow_set_capacity(&n, 0, 100);
	flow_set_capacity(&n, 1, 300);
	flow_set_capacity(&n, 2, 1000);
	uint32_t p0 = 0;
	/* Two equal flows alone on one port each get half: both end at 2 s. */
	uint32_t a = flow_add(&n, 0, &p0, 1, 100, 0), b = flow_add(&n, 0, &p0, 1, 100, 0);
	ck_assert_uint_eq(flow_update(&n, 0, NULL), 2);
	ck_assert_double_eq(n.f[a].rate, 50);
	ck_assert_double_eq(n.f[b].rate, 50);
	ck_assert_int_eq(flow_end_ns(&n, a, 0), 2000000000);
	/* 100 and 300 bytes: the first ends at 2 s; the second then has 200
	 * left at the full 100 B/s: it ends at 4 s. */
	n.f[b].left = n.f[b].bytes = 300;
	ck_assert_int_eq(flow_end_ns(&n, b, 0), 6000000000); /* at 50 B/s */
	flow_remove(&n, a);
	flow_update(&n, 2000000000, NULL);
	ck_assert_double_eq(n.f[b].rate, 100);
	ck_assert_double_eq_tol(n.f[b].left, 200, 1e-9);
	ck_assert_int_eq(flow_end_ns(&n, b, 2000000000), 4000000000);
	flow_remove(&n, b);
	flow_update(&n, 4000000000, NULL);
	/* Progressive filling over two ports: A uses ports 0 and 1, B port 1,
	 * C port 0. Port 0 (100) is the bottleneck: A = C = 50; B takes what
	 * is left of port 1: 300 - 50 = 250. */
	uint32_t pa[2] = {0, 1}, p1 = 1;
	uint32_t fa = flow_add(&n, 4000000000, pa, 2, 1e6, 0);
	uint32_t fb = flow_add(&n, 4000000000, &p1, 1, 1e6, 0);
	uint32_t fc = flow_add(&n, 4000000000, &p0, 1, 1e6, 0);
	flow_update(&n, 4000000000, NULL);
	ck_assert_double_eq(n.f[fa].rate, 50);
	ck_assert_double_eq(n.f[fb].rate, 250);
	ck_assert_double_eq(n.f[fc].rate, 50);
	/* A new flow's estimate: port 1 then carries 3 flows. */
	ck_assert_double_eq(flow_estimate_rate(&n, &p1, 1), 100);
	/* Degrading port 0 to a tenth: A = C = 5, B = 295. */
	flow_scale(&n, 0, 0.1);
	flow_update(&n, 4000000000, NULL);
	ck_assert_double_eq(n.f[fa].rate, 5);
	ck_assert_double_eq(n.f[fb].rate, 295);
	flow_free(&n);
}
END_TEST

/* Recomputing only the flows connected to what changed gives every flow
 * the rate (and the update the changed list) that recomputing all flows
 * gives: two nets get the same random adds, removals and capacity changes
 * over 40 ports; the reference touches every port before each update. */
START_TEST(fair_share_by_groups_equals_all)
{
	enum { PORTS = 40 };
	struct flownet a, b;
	ck_assert_int_eq(flow_init(&a, PORTS), 0);
	ck_assert_int_eq(flow_init(&b, PORTS), 0);
	for (uint32_t p = 0; p < PORTS; p++) {
		flow_set_capacity(&a, p, 1e9 * (1 + p % 7));
		flow_set_capacity(&b, p, 1e9 * (1 + p % 7));
	}
	uint32_t live[64], n_live = 0, ca[64], cb[64];
	uint64_t x = 3;
	int64_t now = 0;
	for (int step = 0; step < 4000; step++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		now += (int64_t)((x >> 40) % 1000000);
		int op = (int)((x >> 20) % 8);
		if ((op < 4 && n_live < 64) || n_live == 0) {
			uint32_t ports[3], np = 1 + (uint32_t)((x >> 30) % 3);
			for (uint32_t k = 0; k < np; k++)
				ports[k] = (uint32_t)((x >> (8 * k + 3)) % PORTS);
			double bytes = 1e6 * (1 + (double)((x >> 50) % 100));
			uint32_t fa = flow_add(&a, now, ports, np, bytes, 0);
			uint32_t fb = flow_add(&b, now, ports, np, bytes, 0);
			ck_assert_uint_eq(fa, fb);
			live[n_live++] = fa;
		} else if (op < 7) {
			uint32_t k = (uint32_t)((x >> 33) % n_live);
			flow_remove(&a, live[k]);
			flow_remove(&b, live[k]);
			live[k] = live[--n_live];
		} else {
			uint32_t p = (uint32_t)((x >> 33) % PORTS);
			double factor = 0.1 + (double)((x >> 45) % 10) / 10;
			flow_scale(&a, p, factor);
			flow_scale(&b, p, factor);
		}
		for (uint32_t p = 0; p < PORTS; p++) /* the reference recomputes all */
			flow_scale(&b, p, b.cap[p] / b.base[p]);
		uint32_t na = flow_update(&a, now, ca), nb = flow_update(&b, now, cb);
		ck_assert_uint_eq(na, nb);
		for (uint32_t k = 0; k < na; k++)
			ck_assert_uint_eq(ca[k], cb[k]);
		for (uint32_t k = 0; k < n_live; k++) {
			ck_assert(a.f[live[k]].rate == b.f[live[k]].rate);
			ck_assert(a.f[live[k]].left == b.f[live[k]].left);
		}
	}
	flow_free(&a);
	flow_free(&b);
}
END_TEST

/* --- running scenarios ---------------------------------------------------- */

struct seen {
	uint64_t n, retried, after_crash_on_dead, shed_new, shed_cont, no_reason;
	uint64_t reasons_watermark, on_node[8];
	int64_t crash_ns;
	int dead;
	struct request turn1, turn2;
	int have1, have2;
};

static void on_req(void *ctx, const struct request *r)
{
	struct seen *t = ctx;
	t->n++;
	t->retried += r->retries > 0;
	if (r->state == REQ_DONE && t->dead >= 0 && r->node == t->dead &&
	    r->finish_ns > t->crash_ns)
		t->after_crash_on_dead++;
	if (r->state == REQ_SHED || r->state == REQ_FAILED) {
		t->no_reason += r->reason == NULL;
		if (r->reason && !strcmp(r->reason, "kv_watermark"))
			t->reasons_watermark++;
	}
	if (r->state == REQ_SHED) {
		if (r->turn <= 1)
			t->shed_new++;
		else
			t->shed_cont++;
	}
	if (r->state == REQ_DONE && r->node >= 0 && r->node < 8)
		t->on_node[r->node]++;
	if (r->session == 1 && r->turn == 1) {
		t->turn1 = *r;
		t->have1 = 1;
	}
	if (r->session == 1 && r->turn == 2) {
		t->turn2 = *r;
		t->have2 = 1;
	}
}

static void run_in(const char *json, const char *base_file, const char *const *sets,
		   struct met_summary *m, struct seen *t)
{
	struct scenario s;
	th_scenario(json, sets, &s);
	if (base_file)
		cfg_scenario_set_source(&s, base_file);
	struct sim_opts o = {.on_request = on_req, .ctx = t, .audit = 1};
	char err[1024] = "";
	int rc = sim_run(&s, &o, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "sim_run failed: %s", err);
	ck_assert_uint_eq(m->arrived, m->completed + m->shed + m->failed);
	ck_assert_uint_eq(t->n, m->arrived);
	const struct met_tokens *k = &m->tokens;
	ck_assert_uint_eq(k->cached + k->reloaded + k->migrated + k->recomputed + k->fresh, k->input);
}

static void fresh(struct seen *t)
{
	memset(t, 0, sizeof *t);
	t->dead = -1;
}

/* One session of two long turns (8,000 + 33 tokens, then 8,000 more) on
 * one node with a DRAM tier the engine offloads to (round robin plus an
 * offloading connector) and a watermark of 1% with the offload action:
 * after turn 1, the
 * node holds its 502 blocks, above 1% of the cache, so the least recently
 * used ones (the chain's tail) are written down to DRAM until 1% is left.
 * Turn 2 finds the head in HBM and reloads the rest over PCIe before its
 * prefill. */
static const char *two_long_turns =
    "{\"duration_s\": 100, \"cluster\": {\"nodes\": 1, \"model\": \"Llama-3.1-8B\","
    "  \"tiers\": {\"dram_gib_per_server\": 64}},"
    " \"router\": {\"policy\": \"round_robin\", \"params\": {}, \"kv_watermark\": 0.01,"
    "  \"offload\": true, \"watermark_action\": \"offload\"},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 1,"
    "  \"turns\": {\"dist\": \"constant\", \"value\": 2},"
    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 8000},"
    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 33},"
    "  \"think_time_s\": {\"dist\": \"constant\", \"value\": 3},"
    "  \"system_prompts\": {\"count\": 0}}}";

START_TEST(tier_reload_time_is_exact)
{
	struct met_summary m;
	struct seen t;
	fresh(&t);
	run_in(two_long_turns, NULL, NULL, &m, &t);
	ck_assert(t.have2);
	struct scenario s;
	th_scenario(two_long_turns, NULL, &s);
	uint32_t blocks = (uint32_t)s.kv_blocks_per_node;
	double mark = 0.01 * blocks;
	/* Turn 1 computed 8,032 tokens: 502 full blocks, all cached after it. */
	uint32_t held = 502;
	uint32_t evicted = (uint32_t)ceil(held - mark), keep = held - evicted;
	const struct request *r = &t.turn2;
	ck_assert_uint_eq(r->prompt_tokens, 16033);
	ck_assert_uint_eq(r->cached, keep * 16);
	ck_assert_uint_eq(r->reloaded, evicted * 16);
	ck_assert_uint_eq(r->recomputed, 0);
	double bytes = evicted * 16.0 * 131072;
	ck_assert_double_eq(m.offload_bytes_in, bytes);
	/* Written down: turn 1's tail, then after turn 2 (1,004 blocks) its
	 * tail from the same point, of which blocks 502-1003 are new to DRAM
	 * (the rest it already holds). */
	ck_assert_double_eq(m.offload_bytes_out, bytes + 502 * 16.0 * 131072);
	/* TTFT = PCIe 5 reload (64 GB/s, then 2 us) + one iteration that
	 * prefills the 8,001 new tokens after 8,032 in cache. */
	int64_t reload_ns = (int64_t)ceil(bytes / 64e9 * 1e9) + 2000;
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 16033 - 502 * 16, 502 * 16);
	ck_assert_int_eq(r->first_token_ns - r->arrival_ns, reload_ns + cost_iteration_ns(&cm, &b));
	met_summary_free(&m);
	/* Without the tier the same blocks are simply dropped: recomputed. */
	const char *sets[] = {"cluster.tiers.dram_gib_per_server=0", "router.kv_watermark=1", NULL};
	fresh(&t);
	run_in(two_long_turns, NULL, sets, &m, &t);
	ck_assert_uint_eq(t.turn2.cached, 502 * 16);
	ck_assert_uint_eq(t.turn2.reloaded, 0);
	met_summary_free(&m);
	cfg_scenario_free(&s);
}
END_TEST

/* One node, three long requests close together, watermark 1%: the first
 * one's KV (500 blocks) closes the node; the other two are new sessions
 * with no open node: shed with reason kv_watermark. */
START_TEST(watermark_closes_the_node_to_new_sessions)
{
	const char *json =
	    "{\"duration_s\": 100, \"cluster\": {\"nodes\": 1, \"model\": \"Llama-3.1-8B\"},"
	    " \"router\": {\"policy\": \"least_loaded\", \"params\": {}, \"kv_watermark\": 0.01,"
	    "  \"watermark_action\": \"close\"},"
	    " \"workload\": {\"kind\": \"open\", \"rate_per_s\": 20, \"max_requests\": 3,"
	    "  \"input_tokens\": {\"dist\": \"constant\", \"value\": 8000},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 500}}}";
	struct met_summary m;
	struct seen t;
	fresh(&t);
	run_in(json, NULL, NULL, &m, &t);
	ck_assert_uint_eq(m.completed, 1);
	ck_assert_uint_eq(m.shed, 2);
	ck_assert_uint_eq(t.reasons_watermark, 2);
	met_summary_free(&m);
	/* With two nodes the second request goes to the open node; the third
	 * finds both closed. */
	const char *sets[] = {"cluster.nodes=2", NULL};
	fresh(&t);
	run_in(json, NULL, sets, &m, &t);
	ck_assert_uint_eq(m.completed, 2);
	ck_assert_uint_eq(t.on_node[0], 1);
	ck_assert_uint_eq(t.on_node[1], 1);
	ck_assert_uint_eq(t.reasons_watermark, 1);
	met_summary_free(&m);
	/* Off (1.0): all three run. */
	const char *off[] = {"router.kv_watermark=1", NULL};
	fresh(&t);
	run_in(json, NULL, off, &m, &t);
	ck_assert_uint_eq(m.completed, 3);
	met_summary_free(&m);
}
END_TEST

/* Overload on one single-sequence node with a short queue bound and
 * admission control (a wait limit too high to act, so the bound decides):
 * new sessions are shed at half the bound, continuing ones only at the bound,
 * so continuing sessions lose far fewer turns than when both share one
 * bound; every shed request names its reason. */
START_TEST(shedding_drops_new_sessions_first)
{
	const char *json =
	    "{\"duration_s\": 120, \"cluster\": {\"nodes\": 1,"
	    "  \"engine\": {\"max_num_seqs\": 1},"
	    "  \"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, \"per_token_ms\": 0}},"
	    " \"router\": {\"policy\": \"least_loaded\", \"params\": {}, \"max_queue_per_node\": 8,"
	    "  \"new_session_queue_frac\": 0.5, \"shed\": \"predicted_wait\","
	    "  \"shed_wait_slo_multiple\": 1e6},"
	    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 4, \"max_sessions\": 100000,"
	    "  \"turns\": {\"dist\": \"constant\", \"value\": 4},"
	    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 50},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 100},"
	    "  \"think_time_s\": {\"dist\": \"exponential\", \"mean\": 2}}}";
	struct met_summary m;
	struct seen a, b;
	fresh(&a);
	run_in(json, NULL, NULL, &m, &a);
	ck_assert_uint_gt(a.shed_new, 100);
	ck_assert_uint_eq(a.no_reason, 0);
	met_summary_free(&m);
	const char *same[] = {"router.new_session_queue_frac=1", NULL};
	fresh(&b);
	run_in(json, NULL, same, &m, &b);
	ck_assert_uint_eq(b.no_reason, 0);
	ck_assert_uint_gt(b.shed_cont, 10);
	ck_assert_uint_lt(a.shed_cont * 4, b.shed_cont);
	met_summary_free(&m);
	/* The same order when the predicted wait decides (a bound too high to
	 * act; prefill priced at 0.02 ms a token, a limit of 0.1 s): new
	 * sessions meet 0.5 x the limit. */
	const char *wait[] = {"router.max_queue_per_node=100000",
			      "cluster.cost_model.per_token_ms=0.02",
			      "router.shed_wait_slo_multiple=0.05", NULL};
	const char *wait_same[] = {"router.max_queue_per_node=100000",
				   "cluster.cost_model.per_token_ms=0.02",
				   "router.shed_wait_slo_multiple=0.05",
				   "router.new_session_queue_frac=1", NULL};
	fresh(&a);
	run_in(json, NULL, wait, &m, &a);
	ck_assert_uint_gt(a.shed_new, 100);
	met_summary_free(&m);
	fresh(&b);
	run_in(json, NULL, wait_same, &m, &b);
	ck_assert_uint_gt(b.shed_cont, 10);
	ck_assert_uint_lt(a.shed_cont * 4, b.shed_cont);
	met_summary_free(&m);
}
END_TEST

/* Swap preemption in a column that does not offload (round robin in front
 * of plain vLLM with its CPU swap space): DRAM holds the preempted
 * requests' KV and nothing else, so only swapped blocks come back (none of
 * an evicted prefix is written down or reloaded); with offload on as well,
 * evicted blocks are written down too. */
START_TEST(swap_without_offload_moves_only_swapped_kv)
{
	const char *json =
	    "{\"duration_s\": 60, \"seed\": 3, \"cluster\": {\"nodes\": 4, \"model\": \"Llama-3.1-8B\","
	    "  \"engine\": {\"gpu_memory_utilization\": 0.25, \"max_num_seqs\": 64,"
	    "  \"preemption\": \"swap\"}, \"tiers\": {\"dram_gib_per_server\": 64}},"
	    " \"router\": {\"policy\": \"round_robin\", \"params\": {}},"
	    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 8,"
	    "  \"user_tokens\": {\"dist\": \"lognormal\", \"median\": 300, \"sigma\": 0.8},"
	    "  \"output_tokens\": {\"dist\": \"lognormal\", \"median\": 150, \"sigma\": 0.6},"
	    "  \"think_time_s\": {\"dist\": \"exponential\", \"mean\": 5},"
	    "  \"system_prompts\": {\"count\": 8, \"zipf_s\": 1.0,"
	    "   \"tokens\": {\"dist\": \"uniform\", \"min\": 500, \"max\": 3000}}}}";
	struct met_summary a, b;
	struct seen t;
	fresh(&t);
	run_in(json, NULL, NULL, &a, &t);
	ck_assert_uint_gt(a.preemptions, 0);
	ck_assert_double_gt(a.offload_bytes_out, 0);
	ck_assert_double_le(a.offload_bytes_in, a.offload_bytes_out);
	const char *off[] = {"router.offload=true", NULL};
	fresh(&t);
	run_in(json, NULL, off, &b, &t);
	ck_assert_double_gt(b.offload_bytes_out, 2 * a.offload_bytes_out);
	met_summary_free(&a);
	met_summary_free(&b);
}
END_TEST

/* Early rejection by predicted wait, by hand: one node running one
 * sequence at a time, each request 1,000 prompt tokens and one output token
 * at a fixed 2 ms + 0.08 ms per token (82 ms each), offered 50 per second
 * (four times what it serves). The prediction for a request that finds n
 * waiting is (n + 1) x 1,000 x 0.08 ms = 80 (n + 1) ms; open requests are
 * new sessions, whose limit is new_session_queue_frac (0.75) x 1 x the
 * TTFT SLO (1 s): 750 ms, so at most 8 wait ahead of an admitted request
 * and its TTFT is at most the one in service (82 ms) + 8 x 82 + its own
 * 82 = 820 ms. Without the rule the queue grows to its bound. */
START_TEST(predicted_wait_sheds_what_would_miss_the_slo)
{
	const char *json =
	    "{\"duration_s\": 60, \"cluster\": {\"nodes\": 1,"
	    "  \"engine\": {\"max_num_seqs\": 1, \"prefix_caching\": false},"
	    "  \"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, \"per_token_ms\": 0.08}},"
	    " \"router\": {\"policy\": \"least_loaded\", \"params\": {}, \"shed\": \"predicted_wait\"},"
	    " \"slo\": {\"ttft_p99_s\": 1.0},"
	    " \"workload\": {\"kind\": \"open\", \"rate_per_s\": 50, \"max_requests\": 3000,"
	    "  \"input_tokens\": {\"dist\": \"constant\", \"value\": 1000},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 1}}}";
	struct met_summary m;
	struct seen t;
	fresh(&t);
	run_in(json, NULL, NULL, &m, &t);
	ck_assert_uint_gt(m.shed, 1000);
	ck_assert_uint_eq(t.no_reason, 0);
	ck_assert_uint_eq(m.shed_why.n, 1);
	ck_assert_str_eq(m.shed_why.reason[0], "overload_new_session");
	ck_assert_double_le(m.ttft.max, 0.820 + 1e-9);
	ck_assert_double_gt(m.ttft.max, 0.738); /* the queue did reach 8 */
	met_summary_free(&m);
	/* off: nothing shed before the queue bound, TTFT grows to seconds */
	const char *off[] = {"router.shed=none", NULL};
	fresh(&t);
	run_in(json, NULL, off, &m, &t);
	ck_assert_double_gt(m.ttft.max, 10);
	met_summary_free(&m);
}
END_TEST

static const char *chat8 =
    "{\"duration_s\": 240, \"cluster\": {\"nodes\": 8, \"nodes_per_server\": 4},"
    " \"router\": {\"policy\": \"session_affinity\", \"params\": {\"threshold\": 24}},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 6, \"max_sessions\": 2000,"
    "  \"think_time_s\": {\"dist\": \"exponential\", \"mean\": 5}}}";

/* A crash of 1 of 8 nodes mid-run: nothing is lost, the requests on it
 * run again elsewhere, nothing completes on it afterwards, and its
 * sessions' context is recomputed. */
START_TEST(crash_of_one_node_loses_nothing)
{
	struct met_summary base, m;
	struct seen t;
	fresh(&t);
	run_in(chat8, NULL, NULL, &base, &t);
	const char *sets[] = {"faults=[{\"kind\": \"crash\", \"node\": 3, \"at_s\": 100}]", NULL};
	fresh(&t);
	t.dead = 3;
	t.crash_ns = 100000000000LL;
	run_in(chat8, NULL, sets, &m, &t);
	ck_assert_uint_eq(m.failed, 0);
	ck_assert_uint_gt(t.retried, 0);
	ck_assert_uint_eq(t.after_crash_on_dead, 0);
	ck_assert_uint_gt(m.tokens.recomputed, base.tokens.recomputed + 5000);
	ck_assert_double_eq(m.nodes[3].requests < base.nodes[3].requests, 1);
	met_summary_free(&m);
	/* Recovering after 50 s, it serves again (with an empty cache). */
	const char *rec[] = {
	    "faults=[{\"kind\": \"crash\", \"node\": 3, \"at_s\": 100, \"recover_after_s\": 50}]",
	    NULL};
	fresh(&t);
	run_in(chat8, NULL, rec, &m, &t);
	ck_assert_uint_gt(t.on_node[3], 0);
	ck_assert_uint_eq(m.failed, 0);
	met_summary_free(&m);
	/* max_retries 0: the crashed node's requests fail, with a reason. */
	const char *none[] = {"faults=[{\"kind\": \"crash\", \"node\": 3, \"at_s\": 100}]",
			      "router.max_retries=0", NULL};
	fresh(&t);
	run_in(chat8, NULL, none, &m, &t);
	ck_assert_uint_gt(m.failed, 0);
	ck_assert_uint_eq(t.no_reason, 0);
	met_summary_free(&m);
	met_summary_free(&base);
}
END_TEST

/* Slow-downs, link degradation and cooling failure act where they should. */
START_TEST(health_faults_act_where_they_should)
{
	struct met_summary base, m;
	struct seen t;
	fresh(&t);
	const char *th[] = {"cluster.thermal.enabled=true", NULL};
	run_in(chat8, NULL, th, &base, &t);
	for (int i = 0; i < 8; i++) /* 25 C inlet: steady at most 74 C (at TDP) < 85 */
		ck_assert_double_eq(base.nodes[i].throttled_s, 0);
	/* Server 0's cooling fails (70 C inlet) from 20 s to 220 s. Without
	 * the health filter its GPUs, decoding at about 300 W (steady near 91
	 * C), throttle and decode at 0.6 x speed: the slowest TPOTs grow. */
	const char *cool[] = {"cluster.thermal.enabled=true", "router.health.enabled=false",
			      "faults=[{\"kind\": \"cooling\", \"server\": 0, \"at_s\": 20, "
			      "\"duration_s\": 200, \"ambient_c\": 70}]",
			      NULL};
	fresh(&t);
	run_in(chat8, NULL, cool, &m, &t);
	double hot_s = 0;
	for (int i = 0; i < 4; i++) {
		ck_assert_double_gt(m.nodes[i].throttled_s, 1);
		hot_s += m.nodes[i].throttled_s;
	}
	for (int i = 4; i < 8; i++)
		ck_assert_double_eq(m.nodes[i].throttled_s, 0);
	ck_assert_double_gt(m.tpot.p99, 1.3 * base.tpot.p99);
	/* With it (the seed's default), server 0's nodes, hotter than the
	 * resume temperature or throttled, get no work while server 1's can
	 * take it: the traffic moves, the throttled time falls (less load,
	 * less heat) and TPOT does not get worse. */
	const char *healthy[] = {cool[0], cool[2], NULL};
	struct met_summary h;
	fresh(&t);
	run_in(chat8, NULL, healthy, &h, &t);
	uint64_t on0_off = 0, on0_on = 0;
	double hot_on = 0;
	for (int i = 0; i < 4; i++) {
		on0_off += m.nodes[i].requests;
		on0_on += h.nodes[i].requests;
		hot_on += h.nodes[i].throttled_s;
	}
	ck_assert_uint_lt(on0_on * 10, on0_off * 8); /* at least a fifth moved away */
	ck_assert_double_lt(hot_on, 0.5 * hot_s);
	ck_assert_double_le(h.tpot.p99, m.tpot.p99);
	ck_assert_uint_gt(h.migration_by_reason[MR_HEALTH], 0);
	met_summary_free(&h);
	met_summary_free(&m);
	met_summary_free(&base);

	/* A straggler at half speed is busier for the same work. */
	fresh(&t);
	run_in(chat8, NULL, NULL, &base, &t);
	const char *slow[] = {
	    "faults=[{\"kind\": \"slow\", \"node\": 2, \"at_s\": 0, \"duration_s\": 1000, "
	    "\"factor\": 0.5}]",
	    NULL};
	fresh(&t);
	run_in(chat8, NULL, slow, &m, &t);
	/* The top TPOTs are node 2's: about twice the others'. */
	ck_assert_double_gt(m.tpot.p99, 1.5 * base.tpot.p99);
	met_summary_free(&m);
	met_summary_free(&base);

	/* Migrations over a NIC degraded to 1% take longer. */
	const char *rr[] = {"router.policy=round_robin", "router.params={}",
			    "router.migration=transfer", NULL};
	const char *rr_link[] = {"router.policy=round_robin", "router.params={}",
				 "router.migration=transfer",
				 "faults=[{\"kind\": \"link\", \"server\": 0, \"at_s\": 0, "
				 "\"duration_s\": 1000, \"factor\": 0.01}]",
				 NULL};
	fresh(&t);
	run_in(chat8, NULL, rr, &base, &t);
	fresh(&t);
	run_in(chat8, NULL, rr_link, &m, &t);
	ck_assert_double_gt(m.migration_s / m.migration_count,
			    5 * base.migration_s / base.migration_count);
	met_summary_free(&m);
	met_summary_free(&base);
}
END_TEST

/* The affinity store's latency is part of TTFT: with redis, a new key
 * costs a read and a write (0.4 ms), a hit a read (0.2 ms). */
START_TEST(store_latency_adds_to_ttft)
{
	const char *json =
	    "{\"duration_s\": 100, \"cluster\": {\"nodes\": 2, \"nodes_per_server\": 1},"
	    " \"router\": {\"policy\": \"session_affinity\", \"params\": {}},"
	    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 1,"
	    "  \"turns\": {\"dist\": \"constant\", \"value\": 2},"
	    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 160},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 33},"
	    "  \"think_time_s\": {\"dist\": \"constant\", \"value\": 3},"
	    "  \"system_prompts\": {\"count\": 0}}}";
	struct met_summary a, b;
	struct seen ta, tb;
	fresh(&ta);
	run_in(json, NULL, NULL, &a, &ta);
	const char *redis[] = {"router.store=redis", NULL};
	fresh(&tb);
	run_in(json, NULL, redis, &b, &tb);
	ck_assert(ta.have1 && ta.have2 && tb.have1 && tb.have2);
	int64_t t1a = ta.turn1.first_token_ns - ta.turn1.arrival_ns;
	int64_t t1b = tb.turn1.first_token_ns - tb.turn1.arrival_ns;
	int64_t t2a = ta.turn2.first_token_ns - ta.turn2.arrival_ns;
	int64_t t2b = tb.turn2.first_token_ns - tb.turn2.arrival_ns;
	ck_assert_int_eq(t1b - t1a, 400000);
	ck_assert_int_eq(t2b - t2a, 200000);
	met_summary_free(&a);
	met_summary_free(&b);
}
END_TEST

/* Router replicas with local stores each keep their own affinity map, so
 * a session's turns (sprayed over replicas) lose their node; a shared
 * store keeps them together. Stale load reports still conserve requests. */
START_TEST(replicas_and_stale_views)
{
	struct met_summary one, local4, redis4, stale;
	struct seen t;
	fresh(&t);
	run_in(chat8, NULL, NULL, &one, &t);
	const char *l4[] = {"router.replicas=4", NULL};
	fresh(&t);
	run_in(chat8, NULL, l4, &local4, &t);
	const char *r4[] = {"router.replicas=4", "router.store=redis", NULL};
	fresh(&t);
	run_in(chat8, NULL, r4, &redis4, &t);
	double h1 = (double)one.tokens.cached / one.tokens.input;
	double hl = (double)local4.tokens.cached / local4.tokens.input;
	double hr = (double)redis4.tokens.cached / redis4.tokens.input;
	ck_assert_double_lt(hl + 0.1, h1);
	ck_assert_double_gt(hr, hl + 0.1);
	const char *st[] = {"router.load_report_interval_ms=2000", "router.policy=least_loaded",
			    "router.params={\"metric\": \"kv_util\"}", NULL};
	fresh(&t);
	run_in(chat8, NULL, st, &stale, &t);
	met_summary_free(&one);
	met_summary_free(&local4);
	met_summary_free(&redis4);
	met_summary_free(&stale);
}
END_TEST

/* Swap preemption writes preempted requests' KV to DRAM and brings it
 * back, so less is recomputed after preemptions than with recompute. */
START_TEST(swap_preemption_recomputes_less)
{
	const char *base_sets[] = {"router.policy=round_robin", "router.params={}",
				   "cluster.engine.gpu_memory_utilization=0.215",
				   "cluster.engine.activation_reserve_gib=0",
				   "cluster.tiers.dram_gib_per_server=256",
				   "workload.sessions_per_s=6", NULL};
	const char *swap_sets[] = {"router.policy=round_robin", "router.params={}",
				   "cluster.engine.gpu_memory_utilization=0.215",
				   "cluster.engine.activation_reserve_gib=0",
				   "cluster.tiers.dram_gib_per_server=256",
				   "workload.sessions_per_s=6", "cluster.engine.preemption=swap",
				   NULL};
	struct met_summary a, b;
	struct seen t;
	fresh(&t);
	run_in(chat8, NULL, base_sets, &a, &t);
	fresh(&t);
	run_in(chat8, NULL, swap_sets, &b, &t);
	ck_assert_uint_gt(a.preemptions, 0);
	ck_assert_uint_gt(b.preemptions, 0);
	ck_assert_uint_lt(b.tokens.preempt_recomputed * 2, a.tokens.preempt_recomputed);
	ck_assert_double_gt(b.offload_bytes_out, a.offload_bytes_out);
	met_summary_free(&a);
	met_summary_free(&b);
}
END_TEST

/* Decode spans stay a pure speed-up with the router's mechanisms on:
 * crashes (the second inside a span, whose ended iterations count in the
 * node's busy time and KV integral), a shared store with two replicas,
 * transfers. */
START_TEST(spans_identical_with_faults_and_replicas)
{
	const char *dirs[2] = {"/tmp/kvsim_phys_span_1", "/tmp/kvsim_phys_span_256"};
	const char *spans[2] = {"cluster.engine.max_span_iterations=1",
				"cluster.engine.max_span_iterations=256"};
	for (int i = 0; i < 2; i++) {
		const char *sets[] = {spans[i],
				      "router.replicas=2",
				      "router.store=redis",
				      "router.migration=transfer",
				      "router.params={\"threshold\": 4, \"when_full\": \"least_loaded\"}",
				      "faults=[{\"kind\": \"crash\", \"node\": 5, \"at_s\": 60, "
				      "\"recover_after_s\": 30}, {\"kind\": \"crash\", \"node\": 2, "
				      "\"at_s\": 75.3, \"recover_after_s\": 30}]",
				      NULL};
		struct scenario s;
		th_scenario(chat8, sets, &s);
		struct sim_opts o = {.out_dir = dirs[i], .audit = 1};
		struct met_summary m;
		char err[1024] = "";
		int rc = sim_run(&s, &o, &m, err, sizeof err);
		cfg_scenario_free(&s);
		ck_assert_msg(rc == 0, "%s", err);
		ck_assert_uint_gt(m.migration_count, 0);
		met_summary_free(&m);
	}
	char *a = th_slurp("/tmp/kvsim_phys_span_1/requests.csv");
	char *b = th_slurp("/tmp/kvsim_phys_span_256/requests.csv");
	ck_assert(strcmp(a, b) == 0);
	free(a);
	free(b);
	/* the crashed node's busy time and KV integral: a span's iterations
	 * that ended before the crash count, as one event each would have */
	a = th_summary_without_perf("/tmp/kvsim_phys_span_1/summary.json");
	b = th_summary_without_perf("/tmp/kvsim_phys_span_256/summary.json");
	ck_assert_msg(strcmp(a, b) == 0, "summary.json differs");
	free(a);
	free(b);
}
END_TEST

/* One node gets hot: prefix affinity sends the sessions of the most popular
 * of 4 system prompts (Zipf s = 2: 70% of them) to one of 4 nodes whose KV
 * cache (30% of an H100's memory) holds about a third of its sessions'
 * histories, while the others have room. With watermark_action "close"
 * (the node only refuses new sessions, and only above the mark in use)
 * its idle sessions' KV is evicted before their next turns: recomputed.
 * With "migrate" the coldest idle sessions' KV moves to the nodes with
 * room as the hot node passes the mark, and their turns follow it. */
static const char *hot_prefix =
    "{\"duration_s\": 300, \"cluster\": {\"nodes\": 4, \"nodes_per_server\": 4,"
    "  \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\","
    "  \"engine\": {\"gpu_memory_utilization\": 0.3}},"
    " \"router\": {\"policy\": \"prefix_affinity\", \"params\": {}},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 100000,"
    "  \"system_prompts\": {\"count\": 4, \"zipf_s\": 2.0}}}";

static void run_out(const char *const *sets, const char *dir, const struct sim_opts *base,
		    struct met_summary *m)
{
	struct scenario s;
	th_scenario(hot_prefix, sets, &s);
	struct sim_opts o = *base;
	o.out_dir = dir;
	o.audit = 1;
	char err[1024] = "";
	int rc = sim_run(&s, &o, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(m->arrived, m->completed + m->shed + m->failed);
	ck_assert_uint_eq(m->failed, 0);
}

static void assert_same_run(const char *a_dir, const char *b_dir)
{
	char pa[128], pb[128];
	snprintf(pa, sizeof pa, "%s/requests.csv", a_dir);
	snprintf(pb, sizeof pb, "%s/requests.csv", b_dir);
	char *a = th_slurp(pa), *b = th_slurp(pb);
	ck_assert_msg(strcmp(a, b) == 0, "%s differs from %s", pb, pa);
	free(a);
	free(b);
	snprintf(pa, sizeof pa, "%s/summary.json", a_dir);
	snprintf(pb, sizeof pb, "%s/summary.json", b_dir);
	a = th_summary_without_perf(pa);
	b = th_summary_without_perf(pb);
	ck_assert_msg(strcmp(a, b) == 0, "%s differs from %s", pb, pa);
	free(a);
	free(b);
}

/* The four requests of two 2-turn sessions, by (session - 1, turn - 1). */
struct two_sessions {
	struct request r[2][2];
	int n;
};

static void on_two(void *ctx, const struct request *r)
{
	struct two_sessions *t = ctx;
	ck_assert(r->session >= 1 && r->session <= 2 && r->turn >= 1 && r->turn <= 2);
	t->r[r->session - 1][r->turn - 1] = *r;
	t->n++;
}

/* Preemptive migration by hand. Two sessions share a one-block system
 * prompt, so prefix affinity (keyed on it) puts both on node 0. Each first
 * turn computes 16 + 2,400 prompt and 32 output tokens: 153 full blocks
 * (the last output token's KV is never computed), block 0 shared. Then
 * node 0 holds 1 + 2 x 152 = 305 blocks, above a watermark of 200: the
 * session idle the longest moves to node 1 (empty: 153 blocks stay under
 * 200 there), all 153 blocks of its chain over NVLink; node 0 frees its
 * 152 own blocks (the shared one is the other session's too), which
 * brings it to 153, under the mark: no other move. Its second turn goes
 * where its KV went and finds all 153 blocks cached; the other one's
 * stays on node 0 and finds its own. */
START_TEST(watermark_migrate_by_hand)
{
	const char *json =
	    "{\"duration_s\": 200, \"cluster\": {\"nodes\": 2, \"nodes_per_server\": 2,"
	    "  \"gpu\": \"H100-SXM\", \"model\": \"Llama-3-8B\","
	    "  \"engine\": {\"gpu_memory_utilization\": 0.3}},"
	    " \"router\": {\"policy\": \"prefix_affinity\", \"params\": {\"prefix_tokens\": 16},"
	    "  \"watermark_action\": \"migrate\"},"
	    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 10, \"max_sessions\": 2,"
	    "  \"turns\": {\"dist\": \"constant\", \"value\": 2},"
	    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 2400},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 33},"
	    "  \"think_time_s\": {\"dist\": \"constant\", \"value\": 30},"
	    "  \"system_prompts\": {\"count\": 1, \"tokens\": {\"dist\": \"constant\", \"value\": 16}}}}";
	struct scenario s;
	th_scenario(json, NULL, &s);
	char wm[64];
	snprintf(wm, sizeof wm, "router.kv_watermark=%.12g", 200.0 / (double)s.kv_blocks_per_node);
	double block_bytes = s.cluster.model->kv_bytes_per_token * 16;
	cfg_scenario_free(&s);
	const char *sets[] = {wm, NULL};
	th_scenario(json, sets, &s);
	struct two_sessions t;
	memset(&t, 0, sizeof t);
	struct sim_opts o = {.on_request = on_two, .ctx = &t, .audit = 1};
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&s, &o, &m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(t.n, 4);
	ck_assert_uint_eq(m.completed, 4);
	ck_assert_int_eq(t.r[0][0].node, 0);
	ck_assert_int_eq(t.r[1][0].node, 0);
	int cold = t.r[0][0].finish_ns < t.r[1][0].finish_ns ? 0 : 1, warm = 1 - cold;
	ck_assert_uint_eq(m.migration_count, 1);
	ck_assert_uint_eq(m.migration_by_reason[MR_WATERMARK], 1);
	ck_assert_double_eq(m.migration_bytes, 153 * block_bytes);
	/* its time counts in migration.seconds, as a migration's does */
	ck_assert_double_gt(m.migration_s, 153 * block_bytes / 1e12);
	ck_assert_double_lt(m.migration_s, 0.01);
	const struct request *moved = &t.r[cold][1], *stayed = &t.r[warm][1];
	ck_assert_uint_eq(moved->prompt_tokens, 2448 + 1 + 2400);
	ck_assert_int_eq(moved->node, 1);
	ck_assert_uint_eq(moved->cached, 153 * 16);
	ck_assert_uint_eq(moved->migrated, 0);
	ck_assert_uint_eq(moved->recomputed, 0);
	ck_assert_int_eq(stayed->node, 0);
	ck_assert_uint_eq(stayed->cached, 153 * 16);
	ck_assert_uint_eq(stayed->recomputed, 0);
	met_summary_free(&m);
}
END_TEST

START_TEST(watermark_migrate_moves_idle_sessions_off_a_hot_node)
{
	const char *close_[] = {"router.watermark_action=close", NULL};
	const char *migrate[] = {"router.watermark_action=migrate", NULL};
	const struct sim_opts plain = {0};
	struct met_summary c, m, again;
	run_out(close_, "/tmp/kvsim_phys_wm_close", &plain, &c);
	run_out(migrate, "/tmp/kvsim_phys_wm_migrate", &plain, &m);
	ck_assert_uint_eq(c.migration_by_reason[MR_WATERMARK], 0);
	ck_assert_uint_gt(m.migration_by_reason[MR_WATERMARK], 20);
	ck_assert_double_gt(m.migration_bytes, 0);
	/* the same sessions arrive; far less of their history is recomputed */
	ck_assert_uint_gt(c.tokens.recomputed, 100000);
	ck_assert_uint_lt(m.tokens.recomputed * 3, c.tokens.recomputed);
	ck_assert_double_lt(m.recompute_gpu_s * 3, c.recompute_gpu_s);
	/* nothing lost (run_out: audited, every request ended), and the same
	 * results again, with one iteration per event, without prefill folds
	 * and with every block committed when filled */
	run_out(migrate, "/tmp/kvsim_phys_wm_again", &plain, &again);
	assert_same_run("/tmp/kvsim_phys_wm_migrate", "/tmp/kvsim_phys_wm_again");
	met_summary_free(&again);
	const char *one[] = {"router.watermark_action=migrate",
			     "cluster.engine.max_span_iterations=1", NULL};
	run_out(one, "/tmp/kvsim_phys_wm_one", &plain, &again);
	assert_same_run("/tmp/kvsim_phys_wm_migrate", "/tmp/kvsim_phys_wm_one");
	met_summary_free(&again);
	const struct sim_opts eager = {.no_fold = 1, .eager_commits = 1, .eager_kv_views = 1};
	run_out(migrate, "/tmp/kvsim_phys_wm_eager", &eager, &again);
	assert_same_run("/tmp/kvsim_phys_wm_migrate", "/tmp/kvsim_phys_wm_eager");
	met_summary_free(&again);
	/* Races, audited: links slowed so that moves take seconds (next turns
	 * arrive while their KV is on its way: they go to the source, and the
	 * move is dropped when it lands), and crashes of sources and
	 * destinations while moves are in flight. */
	const char *races[] = {
	    "router.watermark_action=migrate",
	    "faults=[{\"kind\": \"link\", \"server\": 0, \"at_s\": 0, \"duration_s\": 1000,"
	    " \"factor\": 0.0003}, {\"kind\": \"crash\", \"node\": 1, \"at_s\": 100,"
	    " \"recover_after_s\": 20}, {\"kind\": \"crash\", \"node\": 0, \"at_s\": 150,"
	    " \"recover_after_s\": 10}, {\"kind\": \"crash\", \"node\": 2, \"at_s\": 200,"
	    " \"recover_after_s\": 10}, {\"kind\": \"crash\", \"node\": 3, \"at_s\": 230,"
	    " \"recover_after_s\": 10}]",
	    NULL};
	run_out(races, "/tmp/kvsim_phys_wm_races", &plain, &again);
	ck_assert_uint_gt(again.migration_by_reason[MR_WATERMARK], 20);
	met_summary_free(&again);
	/* No KV transfer path: nothing can move. */
	const char *none[] = {"router.watermark_action=migrate", "cluster.kv_transfer=none", NULL};
	run_out(none, "/tmp/kvsim_phys_wm_none", &plain, &again);
	ck_assert_uint_eq(again.migration_count, 0);
	met_summary_free(&again);
	met_summary_free(&c);
	met_summary_free(&m);
}
END_TEST

/* --- direction checks on real workloads ---------------------------------- */

static double metric_of(const char *json, const char *base, const char *policy,
			const char *migration, int what)
{
	char p[80], mg[80];
	snprintf(p, sizeof p, "router.policy=%s", policy);
	snprintf(mg, sizeof mg, "router.migration=%s", migration);
	const char *sets[] = {p, "router.params={}", mg, NULL};
	struct met_summary m;
	struct seen t;
	fresh(&t);
	run_in(json, base, sets, &m, &t);
	double in = (double)m.tokens.input;
	double v = what == 0   ? m.tokens.recomputed / in
		   : what == 1 ? m.tokens.cached / in
			       : (m.tokens.recomputed + m.tokens.migrated) / in;
	met_summary_free(&m);
	return v;
}

START_TEST(chat_session_affinity_recomputes_less_than_round_robin)
{
	char *json = th_slurp("workloads/scenarios/chat.json");
	/* A stateless balancer in front of engines that cannot fetch KV from
	 * each other recomputes the history of every turn that lands
	 * elsewhere; affinity keeps turns with their KV. */
	double rr = metric_of(json, NULL, "round_robin", "recompute", 0);
	double sa = metric_of(json, NULL, "session_affinity", "recompute", 0);
	ck_assert_double_lt(sa * 5, rr);
	/* With KV transfer allowed (auto), round robin pays in migration
	 * instead: recomputed + migrated stays far above affinity's. */
	rr = metric_of(json, NULL, "round_robin", "auto", 2);
	sa = metric_of(json, NULL, "session_affinity", "auto", 2);
	ck_assert_double_lt(sa * 5, rr);
	free(json);
}
END_TEST

START_TEST(mooncake_cache_aware_policies_hit_more_than_round_robin)
{
	const char *file = "workloads/scenarios/mooncake-conversation.json";
	char *json = th_slurp(file);
	/* The first 4,000 requests of the trace keep this test short. */
	cJSON *root = cJSON_Parse(json);
	cJSON *wl = cJSON_GetObjectItem(root, "workload");
	cJSON_AddNumberToObject(wl, "max_requests", 4000);
	char *cut = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	double rr = metric_of(cut, file, "round_robin", "auto", 1);
	const char *better[] = {"cache_aware", "kv_cost", "precise_prefix"};
	for (int i = 0; i < 3; i++) {
		double h = metric_of(cut, file, better[i], "auto", 1);
		ck_assert_msg(h > rr * 1.3, "%s: prefix hit ratio %.3f vs round_robin %.3f",
			      better[i], h, rr);
	}
	free(cut);
	free(json);
}
END_TEST

Suite *physics_suite(void)
{
	Suite *s = suite_create("physics");
	TCase *tc = tcase_create("physics");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, fair_share_arithmetic);
	tcase_add_test(tc, fair_share_by_groups_equals_all);
	tcase_add_test(tc, tier_reload_time_is_exact);
	tcase_add_test(tc, watermark_closes_the_node_to_new_sessions);
	tcase_add_test(tc, shedding_drops_new_sessions_first);
	tcase_add_test(tc, crash_of_one_node_loses_nothing);
	tcase_add_test(tc, health_faults_act_where_they_should);
	tcase_add_test(tc, store_latency_adds_to_ttft);
	tcase_add_test(tc, replicas_and_stale_views);
	tcase_add_test(tc, swap_preemption_recomputes_less);
	tcase_add_test(tc, predicted_wait_sheds_what_would_miss_the_slo);
	tcase_add_test(tc, swap_without_offload_moves_only_swapped_kv);
	tcase_add_test(tc, spans_identical_with_faults_and_replicas);
	tcase_add_test(tc, watermark_migrate_by_hand);
	tcase_add_test(tc, watermark_migrate_moves_idle_sessions_off_a_hot_node);
	tcase_add_test(tc, chat_session_affinity_recomputes_less_than_round_robin);
	tcase_add_test(tc, mooncake_cache_aware_policies_hit_more_than_round_robin);
	suite_add_tcase(s, tc);
	return s;
}
