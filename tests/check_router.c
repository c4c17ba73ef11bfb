/* check_router: the routers' own record of what they sent, end to end. */
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

/* No shared prefixes near saturation: 8 H100s serving Llama-3-8B, 2,048-
 * token prompts of their own, 100 requests/s (offered 130/s, the cluster
 * completes about 95/s on this stream and its queues grow). */
static const char *open_saturated =
    "{\"duration_s\": 60, \"cluster\": {\"nodes\": 8, \"gpu\": \"H100-SXM\", \"model\": "
    "\"Llama-3-8B\"}, \"router\": {\"migration\": \"recompute\"}, \"workload\": {\"kind\": "
    "\"open\", \"rate_per_s\": 100, \"max_requests\": 100000, \"input_tokens\": {\"dist\": "
    "\"constant\", \"value\": 2048}, \"output_tokens\": {\"dist\": \"lognormal\", \"median\": "
    "128, \"sigma\": 0.6}}}";

/* The node of each request, by id (ids count arrivals from 1). */
enum { MAX_IDS = 8000 };
struct picks {
	int32_t node[MAX_IDS + 1];
	uint64_t last_id;
};

static void note_pick(void *ctx, const struct request *r)
{
	struct picks *p = ctx;
	ck_assert_uint_le(r->id, MAX_IDS);
	p->node[r->id] = r->state == REQ_DONE ? r->node : -1;
	if (r->id > p->last_id)
		p->last_id = r->id;
}

/* The longest run of consecutive arrivals routed to one node. */
static uint32_t longest_run(const struct picks *p)
{
	uint32_t run = 0, most = 0;
	int32_t last = -2;
	for (uint64_t id = 1; id <= p->last_id; id++) {
		int32_t n = p->node[id];
		if (n < 0)
			continue;
		run = n == last ? run + 1 : 1;
		last = n;
		if (run > most)
			most = run;
	}
	return most;
}

static void run_open(const char *const *sets, struct picks *p, struct met_summary *m)
{
	struct scenario s;
	th_scenario(open_saturated, sets, &s);
	memset(p, 0, sizeof *p);
	struct sim_opts o = {.on_request = note_pick, .ctx = p};
	char err[1024] = "";
	int rc = sim_run(&s, &o, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_uint_eq(m->shed + m->failed, 0);
}

/* kv_cost counts the prefills and blocks it sent each node at once, so
 * arrivals between two completions spread over the nodes: with overlap
 * weight 1 and 0 (pure load balancing) no run of more than a handful of
 * consecutive arrivals goes to one node (measured: 3 and 6, least_loaded's
 * 6). Scored on the engine's KV use (the older form), which leaves out
 * what was routed but not admitted, the same node stays cheapest until
 * its queue admits: runs of dozens (measured: 30 for both weights). */
START_TEST(kv_cost_does_not_herd)
{
	static struct picks p;
	static const char *const params[] = {
	    "router.params={\"overlap_weight\": 1}", "router.params={\"overlap_weight\": 0}",
	    "router.params={\"load\": \"engine\"}",
	    "router.params={\"load\": \"engine\", \"overlap_weight\": 0}"};
	for (int k = 0; k < 4; k++) {
		const char *sets[] = {"router.policy=kv_cost", params[k], NULL};
		struct met_summary m;
		run_open(sets, &p, &m);
		uint32_t run = longest_run(&p);
		met_summary_free(&m);
		if (k < 2)
			ck_assert_msg(run <= 8, "%s: %u consecutive arrivals to one node", params[k],
				      run);
		else
			ck_assert_msg(run >= 20, "%s: only %u consecutive arrivals to one node",
				      params[k], run);
	}
}
END_TEST

/* The production routers on their own counts are as good as least_loaded
 * (outstanding requests) on TTFT p99 where there is nothing to reuse:
 * within 1.25x, with exact load reports and with reports every 50 ms
 * (measured at 100/s, exact / 50 ms: least_loaded 0.369 / 0.369 s,
 * kv_cost 0.259 / 0.259 s, weighted_scorer 0.237 / 0.394 s; the older
 * kv_cost form 1.29 / 1.73 s). */
START_TEST(production_routers_keep_up_with_least_loaded)
{
	static struct picks p;
	static const char *const intervals[] = {"router.load_report_interval_ms=0",
						"router.load_report_interval_ms=50"};
	static const char *const policies[] = {"router.policy=least_loaded", "router.policy=kv_cost",
					       "router.policy=weighted_scorer"};
	for (int i = 0; i < 2; i++) {
		double p99[3];
		for (int k = 0; k < 3; k++) {
			const char *sets[] = {policies[k], "router.params={}", intervals[i], NULL};
			struct met_summary m;
			run_open(sets, &p, &m);
			p99[k] = m.ttft.p99;
			met_summary_free(&m);
		}
		for (int k = 1; k < 3; k++)
			ck_assert_msg(p99[k] <= 1.25 * p99[0], "%s, %s: TTFT p99 %.3f s against %.3f s",
				      intervals[i], policies[k], p99[k], p99[0]);
	}
}
END_TEST

static void count_retried(void *ctx, const struct request *r)
{
	*(uint64_t *)ctx += r->retries > 0;
}

/* Every run here is audited: at each event the record each router keeps
 * of a node (prompt blocks of the requests it sent there, prompt tokens
 * still to prefill) equals what its requests on the node hold, and after
 * the drain every figure is back at 0. Through crashes with queues
 * (requests retried before and after their first token), shedding at the
 * queue bound and the watermark, swap preemption, KV transfers and
 * reloads from DRAM, two router replicas, load reports every 50 ms, and
 * kv_cost's own lookups (its prefills count their cached blocks out). */
START_TEST(router_records_drain_to_zero)
{
	static const char *const cases[][8] = {
	    {"router.policy=kv_cost", "router.params={}", "cluster.engine.max_num_seqs=16",
	     "workload.rate_per_s=100", "duration_s=40",
	     "faults=[{\"kind\": \"crash\", \"node\": 3, \"at_s\": 20, \"recover_after_s\": 10}]"},
	    {"router.policy=least_loaded", "router.params={}", "workload.rate_per_s=160",
	     "router.max_queue_per_node=8", "duration_s=30", "router.replicas=2"},
	    {"router.policy=weighted_scorer", "router.params={}",
	     "cluster.engine={\"preemption\": \"swap\", \"gpu_memory_utilization\": 0.3}",
	     "cluster.tiers={\"dram_gib_per_server\": 64}", "duration_s=30",
	     "router.load_report_interval_ms=50"},
	    {"router.policy=kv_cost", "router.params={}", "router.migration=transfer",
	     "cluster.tiers={\"dram_gib_per_server\": 64, \"nvme_gib_per_server\": 256}",
	     "workload={\"kind\": \"chat\", \"sessions_per_s\": 20, \"max_sessions\": 600}",
	     "faults=[{\"kind\": \"crash\", \"node\": 5, \"at_s\": 15, \"recover_after_s\": 5}]",
	     "cluster.engine.gpu_memory_utilization=0.25", "router.offload=true"},
	    {"router.policy=session_affinity", "router.params={\"threshold\": 4}",
	     "router.migration=transfer", "router.replicas=2",
	     "workload={\"kind\": \"chat\", \"sessions_per_s\": 30, \"max_sessions\": 600}",
	     "duration_s=40"}};
	const char *const *c = cases[_i];
	const char *sets[] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], NULL};
	struct scenario s;
	th_scenario(open_saturated, sets, &s);
	uint64_t retried = 0;
	struct sim_opts o = {.audit = 1, .on_request = count_retried, .ctx = &retried};
	struct met_summary m;
	char err[1024] = "";
	int rc = sim_run(&s, &o, &m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "case %d: %s", _i, err);
	ck_assert_uint_eq(m.arrived, m.completed + m.shed + m.failed);
	/* each case does what it is there for */
	switch (_i) {
	case 0:
		ck_assert_uint_gt(retried, 100);
		break;
	case 1:
		ck_assert_uint_gt(m.shed, 100);
		break;
	case 2:
		ck_assert_uint_gt(m.preemptions, 0);
		ck_assert_double_gt(m.offload_bytes_out, 0);
		break;
	case 3:
		ck_assert_uint_gt(retried, 0);
		ck_assert_double_gt(m.offload_bytes_in, 0);
		break;
	default:
		ck_assert_uint_gt(m.migration_count, 0);
		break;
	}
	met_summary_free(&m);
}
END_TEST

/* Load reports every 50 ms take each node's KV use counted from its
 * decode span's plan where the plan allows, not applied (views_ev_report):
 * against reports that apply every span (sim_opts.eager_kv_views), the
 * same requests.csv and timeseries.csv, audited, for a policy that reads
 * no report (only the watermark does), one that reads KV use, kv_cost on
 * its own count, and a small cache where the watermark closes nodes. */
START_TEST(counted_reports_equal_applied_ones)
{
	static const char *const cases[][3] = {
	    {"router.policy=session_affinity", "router.params={}", "cluster.engine={}"},
	    {"router.policy=least_loaded", "router.params={\"metric\": \"kv_util\"}",
	     "cluster.engine={}"},
	    {"router.policy=kv_cost", "router.params={}", "cluster.engine={}"},
	    {"router.policy=session_affinity", "router.params={}",
	     "cluster.engine={\"gpu_memory_utilization\": 0.22}"}};
	const char *dirs[2] = {"/tmp/kvsim_check_report_a", "/tmp/kvsim_check_report_b"};
	uint64_t counted[2];
	for (int eager = 0; eager < 2; eager++) {
		const char *sets[] = {cases[_i][0], cases[_i][1], cases[_i][2],
				      "router.load_report_interval_ms=50", NULL};
		struct scenario s;
		th_scenario("{\"duration_s\": 200, \"cluster\": {\"nodes\": 4}, \"workload\": "
			    "{\"kind\": \"chat\", \"sessions_per_s\": 6, \"max_sessions\": 600, "
			    "\"think_time_s\": {\"dist\": \"exponential\", \"mean\": 5}}}",
			    sets, &s);
		struct sim_opts o = {.out_dir = dirs[eager], .audit = 1, .eager_kv_views = eager};
		struct met_summary m;
		char err[1024] = "";
		int rc = sim_run(&s, &o, &m, err, sizeof err);
		cfg_scenario_free(&s);
		ck_assert_msg(rc == 0, "%s", err);
		counted[eager] = m.kv_views_counted;
		if (_i == 3)
			ck_assert_uint_gt(m.shed, 0); /* kv_watermark: closed nodes */
		met_summary_free(&m);
	}
	ck_assert_uint_gt(counted[0], 100);
	ck_assert_uint_eq(counted[1], 0);
	static const char *const files[] = {"requests.csv", "timeseries.csv"};
	for (int f = 0; f < 2; f++) {
		char pa[128], pb[128];
		snprintf(pa, sizeof pa, "%s/%s", dirs[0], files[f]);
		snprintf(pb, sizeof pb, "%s/%s", dirs[1], files[f]);
		char *a = th_slurp(pa), *b = th_slurp(pb);
		ck_assert_msg(strcmp(a, b) == 0, "case %d: %s differs", _i, files[f]);
		free(a);
		free(b);
	}
}
END_TEST

Suite *router_suite(void)
{
	Suite *s = suite_create("router");
	TCase *tc = tcase_create("own_counts");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, kv_cost_does_not_herd);
	tcase_add_test(tc, production_routers_keep_up_with_least_loaded);
	tcase_add_loop_test(tc, router_records_drain_to_zero, 0, 5);
	tcase_add_loop_test(tc, counted_reports_equal_applied_ones, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}
