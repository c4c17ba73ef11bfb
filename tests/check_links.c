/* check_links: servers, tensor-parallel links striped over a replica's GPUs, layouts. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metrics.h"
#include "config/config.h"
#include "model/cost.h"
#include "base/flow.h"
#include "sim/request.h"
#include "sim/sim.h"
#include "tests/helpers.h"
#include "tests/suites.h"

static void expect_error(const char *json, const char *fragment)
{
	struct scenario s;
	char err[1024] = "";
	ck_assert_int_eq(th_scenario_err(json, &s, err, sizeof err), -1);
	ck_assert_msg(strstr(err, fragment) != NULL, "error \"%s\" lacks \"%s\"", err, fragment);
}

/* Each GPU type runs in its own server type, and a replica of tp GPUs
 * owns tp of each per-GPU link. TP 1 keeps the per-GPU figures exactly
 * (1 x rate), so TP 1 results do not move. */
START_TEST(a_replica_owns_its_gpus_links)
{
	static const struct {
		const char *sets[4];
		const char *server;
		int nps;
		double nvlink, nic, host;
	} cases[] = {
	    /* DGX H100: NVLink4 450 GB/s, one 400 Gb/s ConnectX-7 (50 GB/s)
	     * and one PCIe Gen5 x16 (64 GB/s) per GPU */
	    {{NULL}, "DGX-H100", 8, 450e9, 50e9, 64e9},
	    {{"cluster.model=Llama-3-70B", "cluster.tp=8", NULL}, "DGX-H100", 1, 3600e9, 400e9,
	     512e9},
	    {{"cluster.model=Llama-3-70B", "cluster.tp=4", NULL}, "DGX-H100", 2, 1800e9, 200e9,
	     256e9},
	    {{"cluster.tp=2", NULL}, "DGX-H100", 4, 900e9, 100e9, 128e9},
	    /* DGX A100: NVLink3 300 GB/s, one HDR 200 Gb/s ConnectX-6 (25 GB/s)
	     * and PCIe Gen4 x16 (32 GB/s) per GPU */
	    {{"cluster.gpu=A100-80G", "cluster.model=Llama-3-70B", "cluster.tp=8", NULL},
	     "DGX-A100", 1, 2400e9, 200e9, 256e9},
	    /* L40S: no NVLink (PCIe Gen4 between GPUs), 200 GbE per GPU */
	    {{"cluster.gpu=L40S", "cluster.tp=2", NULL}, "PCIe-2-8-5-200", 4, 64e9, 50e9, 64e9},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct scenario s;
		th_scenario("{}", cases[i].sets, &s);
		const struct cluster_cfg *cl = &s.cluster;
		ck_assert_str_eq(cl->server->name, cases[i].server);
		ck_assert_int_eq(cl->nodes_per_server, cases[i].nps);
		ck_assert_double_eq(cl->nvlink_bytes_per_s, cases[i].nvlink);
		ck_assert_double_eq(cl->nic_bytes_per_s, cases[i].nic);
		ck_assert_double_eq(cl->host_bytes_per_s, cases[i].host);
		cfg_scenario_free(&s);
	}
	/* A server with fewer NIC ports than GPUs: a replica gets its GPUs'
	 * share (4 ports over 8 GPUs: half a port per GPU). */
	struct scenario s;
	th_scenario("{\"catalog\": {\"servers\": {\"half-nic\": {\"gpus\": 8, \"nics\": 4, "
		    "\"nic\": \"ib-ndr\", \"host\": \"pcie5\"}}}, \"cluster\": {\"server\": "
		    "\"half-nic\", \"tp\": 2}}",
		    NULL, &s);
	ck_assert_double_eq(s.cluster.nic_bytes_per_s, 50e9);
	ck_assert_int_eq(s.cluster.nodes_per_server, 4);
	cfg_scenario_free(&s);
	/* Named links are per GPU and multiplied the same way. */
	const char *sets[] = {"cluster.model=Llama-3-70B", "cluster.tp=8",
			      "cluster.links.inter_server=eth-100g", NULL};
	th_scenario("{}", sets, &s);
	ck_assert_double_eq(s.cluster.nic_bytes_per_s, 100e9);
	cfg_scenario_free(&s);
}
END_TEST

START_TEST(layouts_that_do_not_fit_are_refused)
{
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 8, \"nodes\": 16, "
		     "\"nodes_per_server\": 8}}",
		     "cluster.nodes_per_server: 8 replicas of tp 8 need 64 GPUs and a DGX-H100 "
		     "server has 8; expected at most 1, got 8");
	expect_error("{\"cluster\": {\"tp\": 2, \"nodes_per_server\": 5}}",
		     "cluster.nodes_per_server: 5 replicas of tp 2 need 10 GPUs and a DGX-H100 "
		     "server has 8; expected at most 4, got 5");
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 16}}",
		     "cluster.tp: a replica's GPUs share one server's NVLink domain and a DGX-H100 "
		     "server has 8 GPUs; expected at most 8, got 16");
	expect_error("{\"cluster\": {\"server\": \"DGX-Z\"}}",
		     "cluster.server: unknown server \"DGX-Z\" (known: DGX-A100, DGX-H100, ");
	expect_error("{\"cluster\": {\"gpu\": \"A100-80G\", \"server\": \"DGX-H100\"}}",
		     "cluster.server: a DGX-H100 server holds H100-SXM GPUs, not A100-80G");
	expect_error("{\"catalog\": {\"servers\": {\"x\": {\"gpus\": 8, \"nics\": 8, \"nic\": "
		     "\"ib-xyz\", \"host\": \"pcie5\"}}}}",
		     "catalog.servers.x.nic: unknown link \"ib-xyz\" (known: nvlink3");
	expect_error("{\"catalog\": {\"servers\": {\"x\": {\"gpus\": 8, \"nic\": \"ib-ndr\", "
		     "\"host\": \"pcie5\"}}}}",
		     "catalog.servers.x.nics: missing");
	expect_error("{\"catalog\": {\"servers\": {\"DGX-H100\": {\"gpus\": 0}}}}",
		     "catalog.servers.DGX-H100.gpus: expected an integer in [1, 4096], got 0");
	/* 16 TP 8 replicas span 16 servers: a link fault may name server 15,
	 * not 16 (the whole cluster is not one 64-GPU NVLink domain). */
	struct scenario s;
	th_scenario("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 8, \"nodes\": 16}, "
		    "\"faults\": [{\"kind\": \"link\", \"server\": 15, \"at_s\": 1, \"duration_s\": 1, "
		    "\"factor\": 0.5}]}",
		    NULL, &s);
	ck_assert_int_eq(s.cluster.nodes_per_server, 1);
	cfg_scenario_free(&s);
	expect_error("{\"cluster\": {\"model\": \"Llama-3-70B\", \"tp\": 8, \"nodes\": 16}, "
		     "\"faults\": [{\"kind\": \"link\", \"server\": 16, \"at_s\": 1, \"duration_s\": 1, "
		     "\"factor\": 0.5}]}",
		     "faults[0].server: expected an integer in [0, 15], got 16");
	/* A user's GPU that no server names runs in generic-8gpu. */
	th_scenario("{\"catalog\": {\"gpus\": {\"X1\": {\"bf16_flops\": 1e15, \"hbm_bytes\": 100e9, "
		    "\"hbm_bytes_per_s\": 4e12, \"tdp_w\": 800, \"link\": \"nvlink4\"}}}, "
		    "\"cluster\": {\"gpu\": \"X1\", \"tp\": 4}}",
		    NULL, &s);
	ck_assert_str_eq(s.cluster.server->name, "generic-8gpu");
	ck_assert_int_eq(s.cluster.nodes_per_server, 2);
	ck_assert_double_eq(s.cluster.nic_bytes_per_s, 200e9);
	cfg_scenario_free(&s);
}
END_TEST

struct turn2 {
	struct request r;
	int seen;
};

static void on_request(void *ctx, const struct request *r)
{
	struct turn2 *t = ctx;
	if (r->session == 1 && r->turn == 2) {
		t->r = *r;
		t->seen = 1;
	}
}

static void run(const char *json, const char *const *sets, struct met_summary *m,
		struct turn2 *t)
{
	struct scenario s;
	th_scenario(json, sets, &s);
	memset(t, 0, sizeof *t);
	struct sim_opts o = {.on_request = on_request, .ctx = t, .audit = 1};
	char err[1024] = "";
	int rc = sim_run(&s, &o, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "sim_run failed: %s", err);
	ck_assert(t->seen);
}

/* One session of two turns routed round robin over two replicas: turn 1
 * computes 8,160 + 33 - 1 = 8,192 tokens of Llama-3.1-8B (131,072 bytes
 * each: exactly 1 GiB); turn 2 lands on the other replica, which fetches
 * that KV over the link between them. */
static const char *gib_turns =
    "{\"duration_s\": 100, \"cluster\": {\"nodes\": 2, \"model\": \"Llama-3.1-8B\"},"
    " \"router\": {\"policy\": \"round_robin\", \"params\": {}, \"migration\": \"transfer\"},"
    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 1,"
    "  \"turns\": {\"dist\": \"constant\", \"value\": 2},"
    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 8160},"
    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 33},"
    "  \"think_time_s\": {\"dist\": \"constant\", \"value\": 3},"
    "  \"system_prompts\": {\"count\": 0}}}";

/* The 1 GiB transfer, hand-computed: latency + 2^30 B / (tp x per-GPU
 * rate), the last byte leaving at the next whole ns. */
START_TEST(kv_transfers_stripe_over_the_replicas_links)
{
	static const struct {
		const char *sets[4];
		int64_t ns;
	} cases[] = {
	    /* TP 1, two servers: one 400 Gb/s NIC, 2^30 / 50e9 s =
	     * 21,474,836.48 ns, + 5 us */
	    {{"cluster.nodes_per_server=1", NULL}, 21474837 + 5000},
	    /* TP 8, one replica per DGX H100 (the default): eight NICs,
	     * 2^30 / 400e9 s = 2,684,354.56 ns, + 5 us */
	    {{"cluster.tp=8", NULL}, 2684355 + 5000},
	    /* TP 4, two replicas in one server (the default): four NVLink4
	     * ports, 2^30 / 1.8e12 s = 596,523.24 ns, + 2 us */
	    {{"cluster.tp=4", NULL}, 596524 + 2000},
	    /* TP 4 on two servers: four NICs, 2^30 / 200e9 s = 5,368,709.12 ns */
	    {{"cluster.tp=4", "cluster.nodes_per_server=1", NULL}, 5368710 + 5000},
	    /* DGX A100, TP 8: eight HDR 200 Gb/s NICs, 2^30 / 200e9 s */
	    {{"cluster.gpu=A100-80G", "cluster.tp=8", NULL}, 5368710 + 5000},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct met_summary m;
		struct turn2 t;
		run(gib_turns, cases[i].sets, &m, &t);
		ck_assert_int_eq(t.r.node, 1);
		ck_assert_uint_eq(t.r.migrated, 8192);
		ck_assert_uint_eq(m.migration_count, 1);
		ck_assert_double_eq(m.migration_bytes, 1073741824.0);
		ck_assert_msg(llround(m.migration_s * 1e9) == cases[i].ns,
			      "case %zu: %.0f ns, expected %lld", i, m.migration_s * 1e9,
			      (long long)cases[i].ns);
		met_summary_free(&m);
	}
}
END_TEST

/* The server's host path is tp PCIe paths: one TP 8 replica writes its
 * cold KV down to DRAM and reloads it at 8 x 64 GB/s. Turn 1 leaves 502
 * full blocks; the watermark (1%) sends all but 1% of the cache down. */
START_TEST(tier_reload_uses_the_replicas_pcie_paths)
{
	const char *json =
	    "{\"duration_s\": 100, \"cluster\": {\"nodes\": 1, \"model\": \"Llama-3.1-8B\", "
	    "  \"tp\": 8, \"engine\": {\"gpu_memory_utilization\": 0.05, "
	    "  \"activation_reserve_gib\": 0}, \"tiers\": {\"dram_gib_per_server\": 64}},"
	    " \"router\": {\"policy\": \"round_robin\", \"params\": {}, \"kv_watermark\": 0.01,"
	    "  \"offload\": true, \"watermark_action\": \"offload\"},"
	    " \"workload\": {\"kind\": \"chat\", \"sessions_per_s\": 1, \"max_sessions\": 1,"
	    "  \"turns\": {\"dist\": \"constant\", \"value\": 2},"
	    "  \"user_tokens\": {\"dist\": \"constant\", \"value\": 8000},"
	    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 33},"
	    "  \"think_time_s\": {\"dist\": \"constant\", \"value\": 3},"
	    "  \"system_prompts\": {\"count\": 0}}}";
	struct scenario s;
	th_scenario(json, NULL, &s);
	uint32_t blocks = (uint32_t)s.kv_blocks_per_node;
	cfg_scenario_free(&s);
	ck_assert_uint_gt(blocks, 1100);
	ck_assert_uint_lt(blocks, 50200);
	uint32_t evicted = (uint32_t)ceil(502 - 0.01 * blocks);
	struct met_summary m;
	struct turn2 t;
	run(json, NULL, &m, &t);
	ck_assert_uint_eq(t.r.reloaded, evicted * 16);
	double bytes = evicted * 16.0 * 131072;
	ck_assert_double_eq(m.offload_bytes_in, bytes);
	/* TTFT = the reload (PCIe Gen5 x16 x 8 = 512 GB/s, then 2 us) + one
	 * iteration that prefills the 8,001 new tokens after 8,032 in cache. */
	int64_t reload_ns = (int64_t)ceil(bytes / 512e9 * 1e9) + 2000;
	th_scenario(json, NULL, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, 16033 - 502 * 16, 502 * 16);
	ck_assert_int_eq(t.r.first_token_ns - t.r.arrival_ns, reload_ns + cost_iteration_ns(&cm, &b));
	cfg_scenario_free(&s);
	met_summary_free(&m);
}
END_TEST

/* docs/model.md's claim behind one port of tp x rate per replica: when
 * every flow on a replica's links is split over all its tp GPUs (the KV
 * of a TP replica is split by heads), max-min sharing over tp ports of
 * rate r gives each transfer the same rate as one port of tp x r. Random
 * transfers between 4 replicas (tp 4) with staggered starts finish at the
 * same times (within rounding to the ns) in both networks. */
struct xfer {
	int a, b;
	double bytes;
	int64_t start_ns;
};

/* Runs xs over a network of 4 replicas with k ports each of rate r/k
 * (k = 1: one port of rate r); ends[] gets each transfer's end. */
static void run_flows(const struct xfer *xs, int n, int k, double r, int64_t *ends)
{
	struct flownet net;
	ck_assert_int_eq(flow_init(&net, 4 * (uint32_t)k), 0);
	for (uint32_t p = 0; p < 4 * (uint32_t)k; p++)
		flow_set_capacity(&net, p, r / k);
	uint32_t ids[64][4];
	int left[64], next = 0, live = 0;
	int64_t last = 0; /* the time of the last flow_update */
	for (int i = 0; i < n; i++)
		ends[i] = -1;
	while (next < n || live > 0) {
		int64_t t_end = INT64_MAX;
		for (uint32_t q = 0; q < net.n_active; q++) {
			int64_t e = flow_end_ns(&net, net.active[q], last);
			if (e < t_end)
				t_end = e;
		}
		if (next < n && xs[next].start_ns <= t_end) {
			int64_t now = xs[next].start_ns;
			for (int j = 0; j < k; j++) {
				uint32_t ports[2] = {(uint32_t)(xs[next].a * k + j),
						     (uint32_t)(xs[next].b * k + j)};
				ids[next][j] = flow_add(&net, now, ports, 2, xs[next].bytes / k, 0);
				net.f[ids[next][j]].kind = next;
			}
			left[next] = k;
			live++;
			next++;
			flow_update(&net, now, NULL);
			last = now;
			continue;
		}
		uint32_t done[256], n_done = 0;
		for (uint32_t q = 0; q < net.n_active; q++)
			if (flow_end_ns(&net, net.active[q], last) == t_end)
				done[n_done++] = net.active[q];
		ck_assert_uint_gt(n_done, 0);
		for (uint32_t q = 0; q < n_done; q++) {
			int x = net.f[done[q]].kind;
			flow_remove(&net, done[q]);
			if (--left[x] == 0) {
				ends[x] = t_end;
				live--;
			}
		}
		flow_update(&net, t_end, NULL);
		last = t_end;
	}
	flow_free(&net);
}

START_TEST(striped_ports_share_as_one_wide_port)
{
	struct xfer xs[40];
	uint64_t seed = 12345;
	int64_t t = 0;
	for (int i = 0; i < 40; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int a = (int)(seed >> 33) % 4, b = (a + 1 + (int)(seed >> 40) % 3) % 4;
		t += (int64_t)((seed >> 20) % 400000);
		xs[i] = (struct xfer){a, b, 1e6 + (double)((seed >> 11) % 50000000), t};
	}
	int64_t wide[40], striped[40];
	run_flows(xs, 40, 1, 200e9, wide);
	run_flows(xs, 40, 4, 200e9, striped);
	int overlapped = 0;
	for (int i = 0; i < 40; i++) {
		ck_assert_int_gt(wide[i], xs[i].start_ns);
		ck_assert_msg(llabs(wide[i] - striped[i]) <= 2, "transfer %d: %lld vs %lld ns", i,
			      (long long)wide[i], (long long)striped[i]);
		overlapped += i > 0 && xs[i].start_ns < wide[i - 1];
	}
	/* the case exercises sharing, not transfers one after another */
	ck_assert_int_gt(overlapped, 10);
}
END_TEST

Suite *links_suite(void)
{
	Suite *s = suite_create("links");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_replica_owns_its_gpus_links);
	tcase_add_test(tc, layouts_that_do_not_fit_are_refused);
	tcase_add_test(tc, kv_transfers_stripe_over_the_replicas_links);
	tcase_add_test(tc, tier_reload_uses_the_replicas_pcie_paths);
	tcase_add_test(tc, striped_ports_share_as_one_wide_port);
	suite_add_tcase(s, tc);
	return s;
}
