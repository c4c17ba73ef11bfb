/* check_energy: power, energy, GPU-hours and cost against hand-computed values. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metrics.h"
#include "config/config.h"
#include "model/cost.h"
#include "sim/power.h"
#include "sim/request.h"
#include "sim/sim.h"
#include "tests/helpers.h"
#include "tests/suites.h"

/* Round figures for H100 (catalog overrides): no engine overhead, an idle
 * power of 100 W (600 W below the 700 W TDP) and a memory weight of 0.5,
 * check_cost's round attention fit. */
#define ROUND_H100                                                                         \
	"\"catalog\": {\"gpus\": {\"H100-SXM\": {\"iteration_overhead\": {\"base_ms\": 0, "     \
	"\"per_seq_ms\": 0}, \"power\": {\"idle_w\": 100, \"memory_weight\": 0.5}, "            \
	"\"attention\": {\"flashinfer\": {\"prefill\": {\"fixed_us\": 10, "                      \
	"\"efficiency\": 0.5, \"causal\": 0.5, \"rows_half\": 1000, \"context_half\": 1000}, "    \
	"\"decode\": {\"fixed_us\": 5, \"per_head_us\": 0.01, \"bandwidth\": 0.8}}}}}}"
/* The plain roofline (mfu 0.7, mbu 0.8, plain max, no per-kernel cost). */
#define PLAIN_COST                                                                         \
	"\"engine\": {\"version\": \"vllm-0.6\"}, \"cost_model\": {\"mfu\": 0.7, \"mbu\": 0.8, \"knee\": 0, \"op_overhead_us\": 0}"

/* The power model's work of a batch by hand (s): Llama-3-8B (8.03e9
 * parameters of 2 bytes; 32 layers of 32 heads of 128; 131,072 KV bytes
 * per token) on one H100 (989e12 FLOP/s, 3.35e12 B/s) at mfu 0.7 and mbu
 * 0.8: 2 FLOPs per parameter and new token and 4 per attention pair, head
 * dimension and layer, at 0.7 x 989e12; half the time of the weight and
 * KV bytes at 0.8 x 3.35e12. */
static double hand_work_s(double new_tokens, double pairs, double kv_tokens)
{
	double flops_per_s = 0.7 * 989e12, bytes_per_s = 0.8 * 3.35e12;
	return 2 * 8.03e9 * new_tokens / flops_per_s + 4.0 * 32 * 128 * 32 * pairs / flops_per_s +
	       0.5 * (2 * 8.03e9 + 131072 * kv_tokens) / bytes_per_s;
}

/* One layer's decode attention of the round fit (check_cost's round_decode). */
static double round_decode(double d, double sum_k)
{
	return 5e-6 + 0.01e-6 * d * 8 + sum_k * 4096 / (3.35e12 * 0.8);
}

/* The work, utilisation and power of a memory-bound decode, of a
 * compute-bound prefill (capped: TDP) and of the fixed model, by hand. */
START_TEST(power_of_iterations_by_hand)
{
	struct scenario s;
	th_scenario("{\"cluster\": {" PLAIN_COST "}, " ROUND_H100 "}", NULL, &s);
	struct cost_model cm;
	cost_init(&cm, &s.cluster, s.weight_bytes);
	const struct cat_gpu *g = s.cluster.gpu;
	ck_assert_double_eq(catalog_gpu_idle_w(g), 100);

	/* One decode over 1,000 tokens: weights 1.606e10 B over 2.68e12 B/s
	 * (5.992 ms) plus 32 layers of attention (6.61 us each): 6.204 ms.
	 * Work: 23 us of FLOPs through the weights, 0.8 us of attention
	 * FLOPs, half the 6.04 ms of 1.606e10 + 1.3e8 B at 2.68e12 B/s: 3.045
	 * ms; u = 0.491, 394.5 W. */
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_decode(&b, 1000);
	double w = hand_work_s(1, 1000, 1000);
	double t = 2 * 8.03e9 / (0.8 * 3.35e12) + 32 * round_decode(1, 1000);
	ck_assert_double_eq_tol(cost_work_ns(&cm, &b), w * 1e9, 1e-6);
	int64_t t_ns = cost_iteration_ns(&cm, &b);
	ck_assert_int_eq(t_ns, llround(t * 1e9));
	ck_assert_double_eq_tol(power_busy_w(g, w * 1e9, t_ns), 100 + 600 * w * 1e9 / (double)t_ns,
				1e-9);
	ck_assert_double_eq_tol(100 + 600 * w / t, 394.5, 0.05);
	/* A decode span's next iteration: one more pair and KV token; the
	 * span's form of it is exactly its batch's. */
	struct cost_batch b2 = b;
	b2.attn_pairs += 1;
	b2.kv_tokens += 1;
	ck_assert_double_eq(cost_work_at_ns(&cm, &b, cost_work_base_ns(&cm, &b), 1),
			    cost_work_ns(&cm, &b2));
	ck_assert_double_eq_tol(cost_work_ns(&cm, &b2), hand_work_s(1, 1001, 1001) * 1e9, 1e-6);

	/* A 512-token prefill: 11.88 ms of FLOPs through the weights (5.99
	 * ms of weights: compute-bound) and 0.76 ms of attention, 12.63 ms;
	 * its work, 11.88 + 0.10 + 3.01 ms, exceeds its time: u = 1, TDP. */
	cost_batch_clear(&b);
	cost_add_prefill(&b, 512, 0);
	w = hand_work_s(512, 512 * 256, 512);
	ck_assert_double_eq_tol(cost_work_ns(&cm, &b), w * 1e9, 1e-6);
	t_ns = cost_iteration_ns(&cm, &b);
	ck_assert_double_gt(w * 1e9, (double)t_ns);
	ck_assert_double_eq(power_busy_w(g, cost_work_ns(&cm, &b), t_ns), 700);
	/* Throttled to 0.6 x speed, the same work over 1 / 0.6 the time. */
	int64_t slow = llround((double)t_ns / 0.6);
	ck_assert_double_eq_tol(power_busy_w(g, w * 1e9, slow), 100 + 600 * w * 1e9 / (double)slow,
				1e-9);
	cfg_scenario_free(&s);

	/* The fixed model has no FLOPs: busy at full power. */
	th_scenario("{\"cluster\": {\"cost_model\": {\"kind\": \"fixed\", \"base_ms\": 2, "
		    "\"per_token_ms\": 0.5}}}",
		    NULL, &s);
	cost_init(&cm, &s.cluster, s.weight_bytes);
	cost_batch_clear(&b);
	cost_add_prefill(&b, 10, 0);
	ck_assert_double_eq(cost_work_ns(&cm, &b), 7e6);
	ck_assert_double_eq(cost_work_at_ns(&cm, &b, 7e6, 100), 7e6);
	ck_assert_double_eq(power_busy_w(s.cluster.gpu, 7e6, 7000000), 700);
	cfg_scenario_free(&s);
}
END_TEST

/* What a run saw of its one request. */
struct one {
	struct request r;
	int n;
};

static void on_req(void *ctx, const struct request *r)
{
	struct one *o = ctx;
	o->r = *r;
	o->n++;
}

static void run(const char *json, const char *const *sets, const char *out_dir,
		struct met_summary *m, struct one *o)
{
	struct scenario s;
	th_scenario(json, sets, &s);
	memset(o, 0, sizeof *o);
	struct sim_opts opts = {.out_dir = out_dir, .on_request = on_req, .ctx = o, .audit = 1};
	char err[1024] = "";
	int rc = sim_run(&s, &opts, m, err, sizeof err);
	cfg_scenario_free(&s);
	ck_assert_msg(rc == 0, "sim_run failed: %s", err);
	ck_assert_int_eq(o->n, 1);
	ck_assert_uint_eq(m->completed, 1);
}

/* One request of 100 prompt tokens and 3 output tokens on a fixed cost
 * model of 10 ms an iteration, round robin over 3 nodes. */
static const char *one_fixed =
    "{\"duration_s\": 10, \"cluster\": {\"nodes\": 3, \"cost_model\": {\"kind\": \"fixed\", "
    "\"base_ms\": 10, \"per_token_ms\": 0}},"
    " \"router\": {\"policy\": \"round_robin\", \"params\": {}},"
    " \"workload\": {\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 1,"
    "  \"input_tokens\": {\"dist\": \"constant\", \"value\": 100},"
    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 3}}}";

/* Idle nodes draw the idle power for the whole run; the busy one, three
 * 10 ms iterations at TDP on top (the fixed model: u = 1). Every node
 * is held the whole run: GPU-hours nodes x tp x time / 3600, at the
 * catalog's 3.00 USD per H100-hour. */
START_TEST(idle_power_gpu_hours_and_cost_exact)
{
	for (int tp = 1; tp <= 2; tp++) {
		const char *sets[] = {tp == 2 ? "cluster.tp=2" : "cluster.tp=1", NULL};
		struct met_summary m;
		struct one o;
		run(one_fixed, sets, NULL, &m, &o);
		ck_assert_uint_eq(m.n_nodes, 3);
		double joules = 0, gpu_h = 0, usd = 0;
		for (uint32_t i = 0; i < 3; i++) {
			const struct met_node *n = &m.nodes[i];
			ck_assert_double_eq(n->held_s, m.sim_time_s);
			int is_busy = i == (uint32_t)o.r.node;
			double util_s = is_busy ? 3e7 * 1e-9 : 0;
			ck_assert_double_eq(n->busy_ratio, is_busy ? 3e7 * 1e-9 / m.sim_time_s : 0);
			ck_assert_double_eq(n->energy_j, tp * (115 * n->held_s + 585 * util_s));
			joules += n->energy_j;
			double h = n->held_s * tp / 3600.0;
			gpu_h += h;
			usd += h * 3.00;
		}
		/* nodes x idle power x time, plus the busy node's 30 ms at
		 * 585 W more per GPU */
		ck_assert_double_eq_tol(joules, tp * (3 * 115 * m.sim_time_s + 585 * 0.03), 1e-9);
		ck_assert_double_eq(m.energy_j, joules);
		ck_assert_double_eq(m.energy_j_per_out, joules / 3);
		ck_assert_double_eq(m.energy_kwh, joules / 3.6e6);
		ck_assert_double_eq(m.gpu_hours, gpu_h);
		ck_assert_double_eq_tol(m.gpu_hours, 3.0 * tp * m.sim_time_s / 3600, 1e-15);
		ck_assert_double_eq(m.cost_usd, usd);
		met_summary_free(&m);
	}
}
END_TEST

/* One timeseries row. */
struct row {
	double t, power_w, temp_c;
	unsigned node, nodes_up, running;
};

/* timeseries.csv's rows into rows (at most cap); returns how many. */
static int read_rows(const char *path, struct row *rows, int cap)
{
	char *text = th_slurp(path);
	ck_assert_str_eq(strtok(text, "\n"), "time_s,node,kv_util,running,queued,temperature_c,"
					      "throttled,nodes_up,power_w");
	int n = 0;
	for (char *l = strtok(NULL, "\n"); l && n < cap; l = strtok(NULL, "\n")) {
		struct row *w = &rows[n++];
		double kv;
		unsigned queued;
		int throttled, k = 0;
		/* the temperature is empty without the thermal model */
		char temp[32] = "";
		ck_assert_int_eq(sscanf(l, "%lf,%u,%lf,%u,%u,%n", &w->t, &w->node, &kv, &w->running,
					&queued, &k),
				 5);
		char *p = l + k, *comma = strchr(p, ',');
		ck_assert_ptr_nonnull(comma);
		snprintf(temp, sizeof temp, "%.*s", (int)(comma - p), p);
		w->temp_c = *temp ? atof(temp) : NAN;
		ck_assert_int_eq(
		    sscanf(comma + 1, "%d,%u,%lf", &throttled, &w->nodes_up, &w->power_w), 3);
	}
	free(text);
	return n;
}

/* One request of 512 prompt tokens and 2 output tokens on the plain
 * roofline, 3 nodes, sampled every millisecond. */
static const char *one_roofline =
    "{\"duration_s\": 10, \"cluster\": {\"nodes\": 3, " PLAIN_COST "},"
    " \"router\": {\"policy\": \"round_robin\", \"params\": {}},"
    " \"workload\": {\"kind\": \"open\", \"rate_per_s\": 10, \"max_requests\": 1,"
    "  \"input_tokens\": {\"dist\": \"constant\", \"value\": 512},"
    "  \"output_tokens\": {\"dist\": \"constant\", \"value\": 2}},"
    " \"output\": {\"timeseries_interval_s\": 0.001}, " ROUND_H100 "}";

/* The request's prefill (compute-bound: TDP) then its decode over 513
 * tokens (memory-bound: the hand formula), as energy and as power_w in
 * timeseries.csv; idle nodes at 100 W; nodes_up 3. The decode is folded
 * into the prefill's step (a decode span of two iterations); with the
 * thermal model each is a step of its own, with the same energy, and the
 * temperature follows the power: the idle nodes' stays at 25 + 0.07 x
 * 100 C, the busy node's rises towards 25 + 0.07 x 700 C while it
 * prefills. */
START_TEST(prefill_at_tdp_decode_by_hand_in_energy_and_timeseries)
{
	const char *dir = "/tmp/kvsim_check_energy";
	static const char *const thermal[] = {"cluster.thermal.enabled=true", NULL};
	double e_busy[2];
	for (int th = 0; th < 2; th++) {
		struct met_summary m;
		struct one o;
		run(one_roofline, th ? thermal : NULL, dir, &m, &o);
		uint32_t busy = (uint32_t)o.r.node;
		/* by hand: the prefill's time (its work exceeds it), the
		 * decode's work and time */
		double lin = 2 * 8.03e9 * 512 / (0.7 * 989e12);
		double flops = 4.0 * 32 * 128 * (0.5 * 512.0 * 512);
		double eff = 0.5 * (512 * 32) / (512 * 32 + 1000.0) * 512 / (512 + 1000.0);
		int64_t t_pf = llround((lin + 32 * (10e-6 + flops / (989e12 * eff))) * 1e9);
		double t_dec_s = 2 * 8.03e9 / (0.8 * 3.35e12) + 32 * round_decode(1, 513);
		int64_t t_dec = llround(t_dec_s * 1e9);
		double w_dec = hand_work_s(1, 513, 513) * 1e9;
		ck_assert_double_gt(hand_work_s(512, 512 * 256, 512) * 1e9, (double)t_pf);
		ck_assert_int_eq(o.r.first_token_ns - o.r.sched_ns, t_pf);
		ck_assert_int_eq(o.r.finish_ns - o.r.first_token_ns, t_dec);
		double p_dec = 100 + 600 * w_dec / (double)t_dec; /* about 394.4 W */
		ck_assert_double_eq_tol(p_dec, 394.4, 0.05);
		for (uint32_t i = 0; i < 3; i++) {
			const struct met_node *n = &m.nodes[i];
			double util_s = i == busy ? ((double)t_pf + w_dec) * 1e-9 : 0;
			ck_assert_double_eq_tol(n->energy_j, 100 * n->held_s + 600 * util_s, 1e-9);
		}
		e_busy[th] = m.nodes[busy].energy_j;

		char path[256];
		snprintf(path, sizeof path, "%s/timeseries.csv", dir);
		static struct row rows[20000];
		int nr = read_rows(path, rows, 20000), pf_rows = 0, dec_rows = 0;
		ck_assert_int_gt(nr, 0);
		double start = (double)o.r.sched_ns * 1e-9;
		double first = (double)o.r.first_token_ns * 1e-9;
		double end = (double)o.r.finish_ns * 1e-9;
		for (int k = 0; k < nr; k++) {
			const struct row *w = &rows[k];
			ck_assert_uint_eq(w->nodes_up, 3);
			double want = 100;
			if (w->node == busy && w->t > start && w->t < first) {
				want = 700;
				pf_rows++;
			} else if (w->node == busy && w->t > first && w->t < end) {
				want = p_dec;
				dec_rows++;
			}
			if (w->node == busy && (w->t == start || w->t == first || w->t == end))
				continue; /* a step boundary at the sample: either side */
			ck_assert_double_eq_tol(w->power_w, want, 5e-4);
			if (!th)
				continue;
			/* idle: steady at 32 C; prefilling: from 32 C towards 74 C */
			double temp = 32;
			if (w->node == busy && w->t > start && w->t < first)
				temp = 74 + (32 - 74) * exp(-(w->t - start) / 60);
			if (w->node != busy || w->t < start)
				ck_assert_double_eq_tol(w->temp_c, temp, 5e-4);
			if (w->node == busy && w->t > start && w->t < first)
				ck_assert_double_eq_tol(w->temp_c, temp, 5e-4);
		}
		ck_assert_int_ge(pf_rows, 10); /* 12.6 ms at 1 ms */
		ck_assert_int_ge(dec_rows, 5); /* 6.2 ms */
		met_summary_free(&m);
	}
	ck_assert_double_eq_tol(e_busy[1], e_busy[0], 1e-9);
}
END_TEST

Suite *energy_suite(void)
{
	Suite *s = suite_create("energy");
	TCase *tc = tcase_create("energy");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, power_of_iterations_by_hand);
	tcase_add_test(tc, idle_power_gpu_hours_and_cost_exact);
	tcase_add_test(tc, prefill_at_tdp_decode_by_hand_in_energy_and_timeseries);
	suite_add_tcase(s, tc);
	return s;
}
