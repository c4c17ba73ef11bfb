/* check_scale: autoscaling (sim/autoscale.c): a Kubernetes HPA traced by
 * hand, GPU time held, and no request lost while nodes join and drain. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metrics.h"
#include "config/config.h"
#include "sim/request.h"
#include "sim/sim.h"
#include "tests/helpers.h"
#include "tests/suites.h"

enum { MAX_KEPT = 64 };

struct seen {
	struct request kept[MAX_KEPT];
	uint32_t n_kept, ended, done;
	/* TTFTs of requests completed that arrived in [from_ns, to_ns) */
	int64_t from_ns, to_ns;
	double *ttft;
	size_t n_ttft, cap_ttft;
};

static void on_request(void *ctx, const struct request *r)
{
	struct seen *t = ctx;
	t->ended++;
	t->done += r->state == REQ_DONE;
	if (t->n_kept < MAX_KEPT)
		t->kept[t->n_kept++] = *r;
	if (t->cap_ttft && r->state == REQ_DONE && r->arrival_ns >= t->from_ns &&
	    r->arrival_ns < t->to_ns) {
		if (t->n_ttft == t->cap_ttft) {
			t->cap_ttft *= 2;
			t->ttft = realloc(t->ttft, t->cap_ttft * sizeof *t->ttft);
			ck_assert_ptr_nonnull(t->ttft);
		}
		t->ttft[t->n_ttft++] = (double)(r->first_token_ns - r->arrival_ns) * 1e-9;
	}
}

static void run(const char *json, const char *const *sets, struct met_summary *m, struct seen *t)
{
	struct scenario s;
	th_scenario(json, sets, &s);
	struct sim_opts o = {.audit = 1, .on_request = t ? on_request : NULL, .ctx = t};
	char err[1024] = "";
	int rc = sim_run(&s, &o, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "sim_run failed: %s", err);
}

/* One H100 serving Llama-3.1-8B at 5 ms + 0.01 ms per new token (a fixed
 * cost model), round robin, routing without delay; an HPA on arrivals per
 * node per second, target 1, a tick every 10 s, 5 s start-up without
 * jitter, a 20 s stabilisation window, 1..4 nodes. tests/data/
 * hpa_trace.jsonl: 30 requests every 0.3 s from 0 to 8.7 s, then one at
 * 12 s, three at 16, 17 and 18 s and one at 45 s (64 prompt tokens, 4
 * out: each done 5.64 + 3 x 5.01 = 20.67 ms after it starts).
 *   t = 10: 30 arrivals in the window, 3 per second on the 1 node: ratio
 *     3 > 1.1, desired ceil(3 / 1) = 3: nodes 1 and 2 are requested
 *     (held from 10 s) and serve from 15 s.
 *   The request at 12 s finds node 0 alone; those at 16, 17 and 18 s go
 *     round the three nodes.
 *   t = 20: 4 arrivals, 0.4/s: desired 1, but the window still holds the
 *     3 of t = 10: no change. t = 30: likewise (10 >= 30 - 20).
 *   t = 40: the window holds 1, 1, 1: down to 1; the newest nodes go
 *     (held alike: the higher number first), idle, so released at once:
 *     each held 30 s.
 * The run ends when the request at 45 s is done: 45.02067 s. */
static const char *hpa_json =
    "{\"duration_s\": 100, \"cluster\": {\"model\": \"Llama-3.1-8B\", \"gpu\": \"H100-SXM\","
    "  \"nodes\": 1, \"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 5, \"per_token_ms\": 0.01},"
    "  \"autoscaler\": {\"kind\": \"hpa\", \"metric\": \"rps_per_node\", \"target\": 1,"
    "   \"tick_s\": 10, \"startup_s\": 5, \"startup_jitter_s\": 0, \"stabilization_s\": 20,"
    "   \"min_nodes\": 1, \"max_nodes\": 4}},"
    " \"router\": {\"policy\": \"round_robin\", \"params\": {}, \"hash_ns_per_token\": 0,"
    "  \"store\": \"local\"},"
    " \"workload\": {\"kind\": \"trace\", \"format\": \"mooncake\","
    "  \"path\": \"tests/data/hpa_trace.jsonl\"}}";

START_TEST(hpa_traced_by_hand)
{
	struct met_summary m;
	static struct seen t;
	memset(&t, 0, sizeof t);
	run(hpa_json, NULL, &m, &t);
	ck_assert_uint_eq(m.completed, 35);
	ck_assert_uint_eq(m.scale_up, 2);
	ck_assert_uint_eq(m.scale_down, 2);
	ck_assert_double_eq(m.nodes_max, 3);
	ck_assert_uint_eq(m.n_nodes, 4);
	int64_t end = 45000000000LL + 5640000 + 3 * 5010000;
	ck_assert_double_eq_tol(m.sim_time_s, (double)end * 1e-9, 1e-12);
	ck_assert_double_eq(m.nodes[0].held_s, (double)end * 1e-9);
	ck_assert_double_eq_tol(m.nodes[1].held_s, 30.0, 1e-9);
	ck_assert_double_eq_tol(m.nodes[2].held_s, 30.0, 1e-9);
	ck_assert_double_eq(m.nodes[3].held_s, 0.0);
	/* energy: the H100's 115 W idle floor while held, its 700 W TDP
	 * while busy (a fixed cost model draws TDP); nodes 1 and 2 each ran
	 * one request (20.67 ms) in their 30 s, node 3 was never held */
	ck_assert_double_eq_tol(m.nodes[1].energy_j, 115 * 30.0 + (700 - 115) * 0.02067, 1e-6);
	ck_assert_double_eq_tol(m.nodes[2].energy_j, 115 * 30.0 + (700 - 115) * 0.02067, 1e-6);
	ck_assert_double_eq(m.nodes[3].energy_j, 0.0);
	/* GPU-hours: (end + 60 s) x 1 GPU; the price is the catalog's */
	ck_assert_double_eq_tol(m.gpu_hours, ((double)end * 1e-9 + 60) / 3600, 1e-12);
	ck_assert_double_eq_tol(m.nodes_mean, ((double)end * 1e-9 + 60) / ((double)end * 1e-9),
				1e-12);
	int on_new = 0;
	for (uint32_t k = 0; k < t.n_kept; k++) {
		const struct request *r = &t.kept[k];
		if (r->arrival_ns < 15000000000LL)
			ck_assert_int_eq(r->node, 0); /* the new nodes serve from 15 s */
		if (r->arrival_ns >= 16000000000LL && r->arrival_ns <= 18000000000LL)
			on_new |= 1 << r->node;
		ck_assert_int_eq(r->finish_ns - r->sched_ns, 5640000 + 3 * 5010000);
	}
	ck_assert_int_eq(on_new, 7); /* one each on nodes 0, 1 and 2 */
	met_summary_free(&m);
}
END_TEST

/* Scale-in drains: the node takes no new work, finishes what it runs and
 * is released when empty. Two nodes, the HPA of hpa_json without a
 * stabilisation window, tests/data/hpa_drain.jsonl: A at 0 (node 0, 4
 * out), B at 0.1 s (node 1, 4,000 out: done at 0.1 + 5.64 ms + 3,999 x
 * 5.01 ms = 20.14063 s), C at 12 s and D at 31 s (4 out each).
 *   t = 10: 2 arrivals, 0.2/s over 2 nodes: desired 1; node 1 (the
 *     newest by number) drains, still running B.
 *   C at 12 s goes to node 0, the only node taking work.
 *   B ends at 20.14063 s and node 1 is released then: held 20.14063 s.
 * The run ends with D: 31.02067 s. */
START_TEST(scale_in_drains_and_releases_when_empty)
{
	const char *sets[] = {"cluster.nodes=2", "cluster.autoscaler.max_nodes=2",
			      "cluster.autoscaler.stabilization_s=0",
			      "workload.path=tests/data/hpa_drain.jsonl", NULL};
	struct met_summary m;
	static struct seen t;
	memset(&t, 0, sizeof t);
	run(hpa_json, sets, &m, &t);
	ck_assert_uint_eq(m.completed, 4);
	ck_assert_uint_eq(m.scale_up, 0);
	ck_assert_uint_eq(m.scale_down, 1);
	int64_t b_end = 100000000 + 5640000 + 3999LL * 5010000;
	int64_t end = 31000000000LL + 5640000 + 3 * 5010000;
	for (uint32_t k = 0; k < 4; k++) {
		const struct request *r = &t.kept[k];
		if (r->arrival_ns == 100000000) {
			ck_assert_int_eq(r->finish_ns, b_end);
			ck_assert_int_eq(r->node, 1);
		} else if (r->arrival_ns > 0) {
			ck_assert_int_eq(r->node, 0); /* C and D: node 1 takes no new work */
		}
	}
	ck_assert_double_eq_tol(m.nodes[1].held_s, (double)b_end * 1e-9, 1e-12);
	ck_assert_double_eq_tol(m.nodes[0].held_s, (double)end * 1e-9, 1e-12);
	met_summary_free(&m);
}
END_TEST

/* A draining node still holds its cache: a session's next turn, routed
 * elsewhere, fetches its KV from there. tests/data/hpa_drain_session.jsonl
 * (kvsim format, 16-token blocks) on two nodes, round robin with KV
 * transfers (router.migration "transfer"), the HPA of
 * scale_in_drains_and_releases_when_empty: session 2's turn 1 (64 + 4
 * tokens) runs on node 1 at 0.1 s, and session 4's 4,000-token answer
 * keeps node 1 busy from 0.3 s to 20.34 s. Node 1 drains from 10 s; turn 2
 * comes 12 s after turn 1's end, goes to node 0 and takes turn 1's 4
 * blocks (64 tokens) from node 1. */
START_TEST(next_turn_fetches_kv_from_a_draining_node)
{
	const char *sets[] = {"cluster.nodes=2",
			      "cluster.autoscaler.max_nodes=2",
			      "cluster.autoscaler.stabilization_s=0",
			      "router.migration=transfer",
			      "workload.format=kvsim",
			      "workload.path=tests/data/hpa_drain_session.jsonl",
			      NULL};
	struct met_summary m;
	static struct seen t;
	memset(&t, 0, sizeof t);
	run(hpa_json, sets, &m, &t);
	ck_assert_uint_eq(m.completed, 5);
	ck_assert_uint_eq(m.scale_down, 1);
	ck_assert_uint_eq(m.migration_count, 1);
	int seen = 0;
	for (uint32_t k = 0; k < t.n_kept; k++) {
		const struct request *r = &t.kept[k];
		if (r->session != 2 || r->turn != 2)
			continue;
		seen = 1;
		ck_assert_int_eq(r->arrival_ns, 100000000 + 20670000 + 12000000000LL);
		ck_assert_int_eq(r->node, 0);
		ck_assert_uint_eq(r->migrated, 64);
	}
	ck_assert_int_eq(seen, 1);
	met_summary_free(&m);
}
END_TEST

/* Without an autoscaler every node is held for the whole run: GPU-hours are
 * nodes x tp x the run's time, priced at the catalog's $3.00 an H100-hour;
 * nodes_mean and nodes_max are the node count. */
START_TEST(static_gpu_hours_are_nodes_times_time)
{
	const char *sets[] = {"cluster.nodes=3", "cluster.tp=2", "cluster.autoscaler={\"kind\": \"none\"}",
			      NULL};
	struct met_summary m;
	run(hpa_json, sets, &m, NULL);
	ck_assert_uint_eq(m.completed, 35);
	double T = m.sim_time_s;
	ck_assert_double_eq_tol(m.gpu_hours, 3 * 2 * T / 3600, 1e-12);
	ck_assert_double_eq_tol(m.cost_usd, 3 * 2 * T / 3600 * 3.00, 1e-12);
	ck_assert_double_eq_tol(m.nodes_mean, 3, 1e-12);
	ck_assert_double_eq(m.nodes_max, 3);
	ck_assert_uint_eq(m.scale_up + m.scale_down, 0);
	ck_assert_int_eq(m.autoscaled, 0);
	for (size_t i = 0; i < m.n_nodes; i++)
		ck_assert_double_eq(m.nodes[i].held_s, T);
	met_summary_free(&m);
}
END_TEST

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The 99th percentile of the TTFTs t kept (sorts them). */
static double p99_of(struct seen *t)
{
	ck_assert_uint_gt(t->n_ttft, 1000);
	qsort(t->ttft, t->n_ttft, sizeof *t->ttft, by_value);
	return t->ttft[(size_t)(0.99 * (double)(t->n_ttft - 1))];
}

/* The direction the world shows, on workloads/scenarios/autoscale.json (a
 * cosine day of chat on Llama-3-70B over 2 H100s, x0.2 to x1): the HPA
 * holds the SLOs as well as the smallest static fleet that does (6
 * replicas: 5 attain 0.98) on fewer GPU-hours, as the day's mean load is
 * 0.6 of its peak (it saves 28% here; BLIS and Dynamo report savings of
 * this order on diurnal traffic); and a longer start-up makes the morning
 * ramp's TTFT worse, the new nodes coming later. */
START_TEST(autoscaling_a_day_saves_gpu_hours_and_startup_costs_ttft)
{
	char *json = th_slurp("workloads/scenarios/autoscale.json");
	struct met_summary a, st;
	const char *static6[] = {"cluster.autoscaler.kind=none", "cluster.nodes=6", NULL};
	run(json, NULL, &a, NULL);
	run(json, static6, &st, NULL);
	ck_assert_double_ge(st.slo_attainment, 0.99);
	ck_assert_double_ge(a.slo_attainment, st.slo_attainment - 0.005);
	ck_assert_double_lt(a.gpu_hours, 0.8 * st.gpu_hours);
	ck_assert_double_gt(a.gpu_hours, 0.6 * 6 * 2 * 24 * 0.9); /* not below the mean load's */
	ck_assert_uint_gt(a.scale_up, 10);
	met_summary_free(&a);
	met_summary_free(&st);
	/* the ramp: arrivals from 02:00 to 14:00 */
	double p99[2];
	const char *startup[2][3] = {
	    {"cluster.autoscaler.startup_s=60", "cluster.autoscaler.startup_jitter_s=0", NULL},
	    {"cluster.autoscaler.startup_s=600", "cluster.autoscaler.startup_jitter_s=0", NULL}};
	for (int k = 0; k < 2; k++) {
		static struct seen t;
		memset(&t, 0, sizeof t);
		t.from_ns = 7200000000000LL;
		t.to_ns = 50400000000000LL;
		t.cap_ttft = 1024;
		t.ttft = malloc(t.cap_ttft * sizeof *t.ttft);
		struct met_summary m;
		run(json, startup[k], &m, &t);
		p99[k] = p99_of(&t);
		free(t.ttft);
		met_summary_free(&m);
	}
	ck_assert_double_gt(p99[1], 1.5 * p99[0]);
	free(json);
}
END_TEST

/* Start-up jitters are drawn from the run's seed alone: the same seed
 * gives the same run, request by request; other seeds move the new nodes'
 * first service (the HPA of hpa_json with 5 +- 4 s start-ups: the new
 * nodes serve from 11 to 19 s, around the requests at 16-18 s). */
START_TEST(startup_jitter_repeats_with_the_seed)
{
	const char *jitter[] = {"cluster.autoscaler.startup_jitter_s=4", NULL, NULL};
	int32_t nodes[6][MAX_KEPT];
	char seed[32];
	for (int k = 0; k < 6; k++) {
		snprintf(seed, sizeof seed, "seed=%d", k < 2 ? 1 : k);
		jitter[1] = seed;
		struct met_summary m;
		static struct seen t;
		memset(&t, 0, sizeof t);
		run(hpa_json, jitter, &m, &t);
		ck_assert_uint_eq(t.n_kept, 35);
		for (uint32_t i = 0; i < t.n_kept; i++)
			nodes[k][i] = (int32_t)(t.kept[i].id << 8 | (uint32_t)t.kept[i].node);
		met_summary_free(&m);
	}
	ck_assert_mem_eq(nodes[0], nodes[1], 35 * sizeof nodes[0][0]);
	int differ = 0;
	for (int k = 2; k < 6; k++)
		differ |= memcmp(nodes[0], nodes[k], 35 * sizeof nodes[0][0]) != 0;
	ck_assert_int_eq(differ, 1);
}
END_TEST

/* A draining node takes back its own swapped-out requests: memory-tight
 * nodes that swap preempted requests to host DRAM, all but one drained
 * at the first tick (an HPA whose target no load reaches), with requests
 * still swapped out on them. Each drained node finishes them and is
 * released; the run ends (a swap-in turned away from a draining node once
 * left it counting a reload in flight for ever, and its queue stopped). */
START_TEST(draining_node_takes_back_its_swapped_requests)
{
	const char *json =
	    "{\"duration_s\": 30, \"seed\": 3, \"cluster\": {\"model\": \"Llama-3.1-8B\","
	    " \"gpu\": \"H100-SXM\", \"nodes\": 4, \"engine\": {\"gpu_memory_utilization\": 0.203,"
	    " \"preemption\": \"swap\"}, \"tiers\": {\"dram_gib_per_server\": 64,"
	    " \"nvme_gib_per_server\": 0}, \"autoscaler\": {\"kind\": \"hpa\", \"metric\":"
	    " \"rps_per_node\", \"target\": 1000, \"tick_s\": 2, \"startup_s\": 1,"
	    " \"stabilization_s\": 0, \"min_nodes\": 1, \"max_nodes\": 4}},"
	    " \"router\": {\"policy\": \"round_robin\"}, \"workload\": {\"kind\": \"open\","
	    " \"rate_per_s\": 30, \"max_requests\": 300, \"input_tokens\": {\"dist\":"
	    " \"uniform\", \"min\": 200, \"max\": 1200}, \"output_tokens\": {\"dist\":"
	    " \"uniform\", \"min\": 100, \"max\": 400}}}";
	struct scenario s;
	th_scenario(json, NULL, &s);
	struct sim_opts o = {.audit = 1, .wall_limit_s = 60};
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&s, &o, &m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(m.truncated, 0);
	ck_assert_uint_eq(m.arrived, 300);
	ck_assert_uint_eq(m.completed, 300);
	ck_assert_uint_eq(m.scale_down, 3);
	ck_assert_uint_gt(m.preemptions, 50);
	for (size_t i = 1; i < 4; i++) {
		ck_assert_double_gt(m.nodes[i].held_s, 2.0); /* drained after the first tick */
		ck_assert_double_lt(m.nodes[i].held_s, m.sim_time_s);
	}
	met_summary_free(&m);
}
END_TEST

/* Nodes not yet ready are set aside, as Kubernetes' replica calculator
 * does, and count at 0 only to confirm a scale-up. Two nodes, the HPA of
 * hpa_json with 15 s start-ups and no stabilisation window,
 * tests/data/hpa_unready.jsonl: 40 requests in the first 10 s, 24 from
 * 10.4 to 19.6 s, one at 45 s.
 *   t = 10: 4/s over 2 nodes serving: ratio 2, desired 4: nodes 2 and 3
 *     are requested (serving from 25 s).
 *   t = 20: 2.4/s over the 2 serving: ratio 1.2, up; with the 2 starting
 *     at 0: 0.6, which turns it down: nothing changes (counting the
 *     starting nodes in the ratio would have released one at 20 s).
 *   t = 30: nothing arrived: desired 1; nodes 3 and 2 (newest, higher
 *     number first) and then 1 drain, idle, and go: 2 and 3 held 20 s. */
START_TEST(hpa_sets_nodes_not_ready_aside)
{
	const char *sets[] = {"cluster.nodes=2", "cluster.autoscaler.stabilization_s=0",
			      "cluster.autoscaler.startup_s=15",
			      "workload.path=tests/data/hpa_unready.jsonl", NULL};
	struct met_summary m;
	run(hpa_json, sets, &m, NULL);
	ck_assert_uint_eq(m.completed, 65);
	ck_assert_uint_eq(m.scale_up, 2);
	ck_assert_uint_eq(m.scale_down, 3);
	ck_assert_double_eq_tol(m.nodes[1].held_s, 30.0, 1e-9);
	ck_assert_double_eq_tol(m.nodes[2].held_s, 20.0, 1e-9);
	ck_assert_double_eq_tol(m.nodes[3].held_s, 20.0, 1e-9);
	met_summary_free(&m);
}
END_TEST

/* A slot whose crash is in force is not requested: it would be paid for
 * and never serve. hpa_json with slot 1 crashed for good from the start:
 * the scale-up at 10 s takes slots 2 and 3, each held 30 s. */
START_TEST(hpa_skips_crashed_slots)
{
	const char *sets[] = {"faults=[{\"kind\": \"crash\", \"node\": 1, \"at_s\": 0}]", NULL};
	struct met_summary m;
	run(hpa_json, sets, &m, NULL);
	ck_assert_uint_eq(m.completed, 35);
	ck_assert_uint_eq(m.scale_up, 2);
	ck_assert_double_eq(m.nodes[1].held_s, 0);
	ck_assert_double_eq_tol(m.nodes[2].held_s, 30.0, 1e-9);
	ck_assert_double_eq_tol(m.nodes[3].held_s, 30.0, 1e-9);
	met_summary_free(&m);
}
END_TEST

Suite *scale_suite(void)
{
	Suite *s = suite_create("scale");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, static_gpu_hours_are_nodes_times_time);
	tcase_add_test(tc, hpa_traced_by_hand);
	tcase_add_test(tc, hpa_sets_nodes_not_ready_aside);
	tcase_add_test(tc, hpa_skips_crashed_slots);
	tcase_add_test(tc, scale_in_drains_and_releases_when_empty);
	tcase_add_test(tc, next_turn_fetches_kv_from_a_draining_node);
	tcase_add_test(tc, startup_jitter_repeats_with_the_seed);
	tcase_add_test(tc, draining_node_takes_back_its_swapped_requests);
	tcase_add_test(tc, autoscaling_a_day_saves_gpu_hours_and_startup_costs_ttft);
	suite_add_tcase(s, tc);
	return s;
}
