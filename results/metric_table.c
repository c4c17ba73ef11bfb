/* metric_table: the one list of summary figures, and the walks and cells the outputs share. */
#include "results/metric_table.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/summary.h"
#include "sim/request.h"

#define RUN RES_SCOPE_RUN
#define U64(field) RUN, RES_KIND_U64, offsetof(struct met_summary, field), 0
#define F64(field) RUN, RES_KIND_F64, offsetof(struct met_summary, field), 0
#define SIZE(field) RUN, RES_KIND_SIZE, offsetof(struct met_summary, field), 0
#define PER(sum, count)                                                                            \
	RUN, RES_KIND_PER, offsetof(struct met_summary, sum), offsetof(struct met_summary, count)
#define POOL(kind, field) RES_SCOPE_POOL, RES_KIND_##kind, offsetof(struct met_pool, field), 0
#define NODE(kind, field) RES_SCOPE_NODE, RES_KIND_##kind, offsetof(struct met_node, field), 0
#define HI RES_BETTER_HIGHER
#define LO RES_BETTER_LOWER
#define NO RES_BETTER_NONE
#define TAB RES_M_TABLE
#define CSV RES_M_CSV
#define DIF RES_M_DIFF
#define SWP RES_M_SWEEP
#define PD RES_M_IF_DISAGG
#define SC RES_M_IF_SCALED
#define CL RES_M_IF_CLIENT
#define NB RES_M_NO_BEST

/* Rows of one JSON object keep the object's key order; the order of the
 * rest is the comparison table's, comparison.csv's, diff's and sweep.csv's
 * (their _LAST rows apart). A per-request statistic is one RES_STATS entry
 * (metric_table.h): label, comparison.csv stem, slot, the span of request
 * times it measures, decimals, the rows shown under its mean, and which
 * outputs take its mean, p50, p90, p99 and max; the collector, summary.json
 * and requests.csv follow from it. Pool and node rows fill the elements of
 * summary.json's pools[] and nodes[], in table order. */
/* clang-format off */
/* The mean TTFT's four parts, shown under it (docs/outputs.md, Definitions). */
#define TTFT_PARTS \
    {"  prefill queue (ms)", "ttft_split.queue_s",             LO, F64(ttft_split_s[0]),          2, 1e-3, "ttft_queue_s",               TAB | CSV | DIF | PD, NULL}, \
    {"  prefill (ms)",       "ttft_split.prefill_s",           LO, F64(ttft_split_s[1]),          2, 1e-3, "ttft_prefill_s",             TAB | CSV | DIF | PD, NULL}, \
    {"  KV transfer (ms)",   "ttft_split.transfer_s",          LO, F64(ttft_split_s[2]),          2, 1e-3, "ttft_transfer_s",            TAB | CSV | DIF | PD, NULL}, \
    {"  decode queue (ms)",  "ttft_split.decode_queue_s",      LO, F64(ttft_split_s[3]),          2, 1e-3, "ttft_decode_queue_s",        TAB | CSV | DIF | PD, NULL},
static const struct res_metric builtin[] = {
/*   name                   path                             better scope/kind/field           dec unit csv                           use, stat */
    {"seed",                 "seed",                           NO, U64(seed),                     0, 1, NULL,                         0, NULL},
    {"requests arrived",     "requests.arrived",               NO, U64(arrived),                  0, 1, "arrived",                    TAB | CSV | SWP, NULL},
    {"  completed",          "requests.completed",             HI, U64(completed),                0, 1, "completed",                  TAB | CSV | DIF | SWP, NULL},
    {"  shed",               "requests.shed",                  LO, U64(shed),                     0, 1, "shed",                       TAB | CSV | DIF | SWP, NULL},
    {"  failed",             "requests.failed",                LO, U64(failed),                   0, 1, "failed",                     TAB | CSV | DIF | SWP, NULL},
    {"  skipped lines",      "requests.skipped_lines",         NO, U64(skipped_lines),            0, 1, NULL,                         0, NULL},
    RES_STATS("TTFT",  "ttft",  MET_TTFT,  RES_SPAN(arrival_ns, first_token_ns),   2, TTFT_PARTS,   TAB | CSV | DIF, TAB | CSV | DIF | SWP, TAB | DIF, TAB | CSV | DIF | SWP, 0),
    RES_STATS("TPOT",  "tpot",  MET_TPOT,  RES_PER_TOKEN(first_token_ns, finish_ns), 2, RES_NO_PARTS, TAB | DIF,    TAB | CSV | DIF | SWP, TAB, TAB | CSV | DIF | SWP, 0),
    RES_STATS("ITL",   "itl",   MET_ITL,   RES_GAPS,                               2, RES_NO_PARTS, TAB | DIF,       TAB,                   TAB, TAB | DIF,             0),
    RES_STATS("E2E",   "e2e",   MET_E2E,   RES_SPAN(arrival_ns, finish_ns),        2, RES_NO_PARTS, TAB,             TAB | DIF,             TAB, TAB | CSV | DIF | SWP, 0),
    RES_STATS("queue", "queue", MET_QUEUE, RES_SPAN(enqueue_ns, sched_ns),         2, RES_NO_PARTS, 0,               0,                     0,   TAB | CSV | DIF,       0),
    /* the client's view (docs/model.md): only in runs with a client block */
    RES_STATS("client TTFT", "ttft_client", MET_TTFT_CLIENT, RES_CLIENT(arrival_ns, first_token_ns, RES_CLIENT_TTFT), 2, RES_NO_PARTS, TAB | CSV | CL, TAB | CSV | CL, TAB | CSV | CL, TAB | CSV | CL, CL),
    RES_STATS("client ITL",  "itl_client",  MET_ITL_CLIENT,  RES_CLIENT(first_token_ns, finish_ns, RES_CLIENT_ITL),  2, RES_NO_PARTS, TAB | CSV | CL, TAB | CSV | CL, CL,             TAB | CSV | CL, CL),
    RES_STATS("client E2E",  "e2e_client",  MET_E2E_CLIENT,  RES_CLIENT(arrival_ns, finish_ns, RES_CLIENT_E2E),      2, RES_NO_PARTS, CL,             CL,             CL,             TAB | CL,       CL),
    {"prefix hit ratio",     "prefix_hit_ratio",               HI, F64(prefix_hit_ratio),         3, 1, "prefix_hit_ratio",           TAB | CSV | DIF | SWP, NULL},
    {"recompute ratio",      "recompute_ratio",                LO, F64(recompute_ratio),          3, 1, "recompute_ratio",            TAB | CSV | DIF | SWP, NULL},
    {"recompute GPU-s",      "recompute_gpu_s",                LO, F64(recompute_gpu_s),          1, 1, "recompute_gpu_s",            TAB | CSV | DIF, NULL},
    {"migrations",           "migration.count",                LO, U64(migration_count),          0, 1, "migrations",                 TAB | CSV | DIF | SWP, NULL},
    {"migrated GB",          "migration.bytes",                LO, F64(migration_bytes),          2, 1e9, "migrated_bytes",           TAB | CSV | DIF, NULL},
    {"migration s",          "migration.seconds",              LO, F64(migration_s),              1, 1, NULL,                         0, NULL},
    {"KV hand-overs",        "pd_transfer.count",              NO, U64(pd.count),                 0, 1, "pd_transfers",               TAB | CSV | PD, NULL},
    {"  hand-over GB",       "pd_transfer.bytes",              LO, F64(pd.bytes),                 2, 1e9, "pd_transfer_bytes",        TAB | CSV | DIF | PD, NULL},
    {"hand-over s",          "pd_transfer.seconds",            LO, F64(pd.seconds),               1, 1, NULL,                         0, NULL},
    {"  mean hand-over s",   "pd_transfer.mean_s",             LO, PER(pd.seconds, pd.count),     4, 1, "pd_transfer_mean_s",         TAB | CSV | DIF | PD, NULL},
    {"  failovers",          "pd_transfer.failovers",          LO, U64(pd.failovers),             0, 1, "pd_failovers",               TAB | CSV | DIF | PD, NULL},
    {"  kept on decode",     "pd_transfer.local",              NO, U64(pd.local),                 0, 1, "pd_local",                   TAB | CSV | PD, NULL},
    {"hand-over wait s",     "pd_transfer.wait_s",             LO, F64(pd.wait_s),                1, 1, NULL,                         0, NULL},
    {"offloaded GB",         "offload.bytes_out",              NO, F64(offload_bytes_out),        2, 1e9, NULL,                       0, NULL},
    {"offload reloaded GB",  "offload.bytes_in",               NO, F64(offload_bytes_in),         2, 1e9, NULL,                       0, NULL},
    {"preemptions",          "preemptions",                    LO, U64(preemptions),              0, 1, "preemptions",                TAB | CSV | DIF, NULL},
    {"throughput (req/s)",   "throughput.requests_per_s",      HI, F64(requests_per_s),           2, 1, "requests_per_s",             TAB | CSV | DIF | SWP, NULL},
    {"input tokens/s",       "throughput.input_tokens_per_s",  HI, F64(input_tokens_per_s),       0, 1, NULL,                         TAB, NULL},
    {"output tokens/s",      "throughput.output_tokens_per_s", HI, F64(output_tokens_per_s),      0, 1, "output_tokens_per_s",        TAB | CSV | DIF | SWP, NULL},
    {"total tokens/s",       "throughput.total_tokens_per_s",  HI, F64(total_tokens_per_s),       0, 1, NULL,                         TAB, NULL},
    {"SLO TTFT p99 (s)",     "slo.ttft_p99_s",                 NO, F64(slo_ttft_s),               3, 1, NULL,                         0, NULL},
    {"SLO TPOT p99 (s)",     "slo.tpot_p99_s",                 NO, F64(slo_tpot_s),               4, 1, NULL,                         0, NULL},
    {"SLO attainment",       "slo.attainment",                 HI, F64(slo_attainment),           3, 1, "slo_attainment",             TAB | CSV | DIF | SWP | RES_M_SWEEP_LAST, NULL},
    {"goodput (req/s)",      "slo.goodput_rps",                HI, F64(goodput_rps),              2, 1, "goodput_rps",                TAB | CSV | DIF | SWP, NULL},
    {"warm-up s",            "steadiness.warmup_s",            NO, F64(steadiness.warmup_s),      1, 1, NULL,                         0, NULL},
    {"arrival window s",     "steadiness.window_s",            NO, F64(steadiness.window_s),      1, 1, NULL,                         0, NULL},
    {"TTFT p99 1st half (s)", "steadiness.ttft_p99_first_half_s", NO, F64(steadiness.ttft_p99_first_s), 3, 1, NULL, 0, NULL},
    {"TTFT p99 2nd half (s)", "steadiness.ttft_p99_second_half_s", NO, F64(steadiness.ttft_p99_second_s), 3, 1, NULL, 0, NULL},
    {"in system mid",        "steadiness.in_system_mid",       NO, F64(steadiness.in_system_mid), 0, 1, NULL,                         0, NULL},
    {"in system end",        "steadiness.in_system_end",       NO, F64(steadiness.in_system_end), 0, 1, NULL,                         0, NULL},
    {"arrived 2nd half",     "steadiness.arrived_second_half", NO, F64(steadiness.arrived_second), 0, 1, NULL,                        0, NULL},
    {"ended 2nd half",       "steadiness.ended_second_half",   NO, F64(steadiness.ended_second),  0, 1, NULL,                         0, NULL},
    {"shed share 2nd half",  "steadiness.shed_share_second_half", NO, F64(steadiness.shed_share_second), 4, 1, NULL,                  0, NULL},
    {"GPU-hours",            "gpu_hours",                      LO, F64(gpu_hours),                2, 1, "gpu_hours",                  TAB | CSV | DIF | SWP | NB, NULL},
    {"cost (USD)",           "cost_usd",                       LO, F64(cost_usd),                 2, 1, "cost_usd",                   TAB | CSV | DIF | SWP | NB, NULL},
    {"cost/M out tok (USD)", "cost_per_output_token_usd", LO, PER(cost_usd, tokens.output), 3, 1e-6, NULL,            TAB, NULL},
    {"GPU-h/M out tok",     "gpu_hours_per_output_token", LO, PER(gpu_hours, tokens.output), 4, 1e-6, NULL,          TAB, NULL},
    {"energy J",             "energy.joules",                  LO, F64(energy_j),                 0, 1, NULL,                         NB, NULL},
    {"J per output token",   "energy.j_per_output_token",      LO, F64(energy_j_per_out),         3, 1, "j_per_output_token",         TAB | CSV | DIF | SWP, NULL},
    {"energy (kWh)",         "energy.kwh",                     LO, F64(energy_kwh),               3, 1, "energy_kwh",                 TAB | CSV | DIF | SWP | NB, NULL},
    {"scale-ups",            "scaling.up",                     NO, U64(scale_up),                 0, 1, "scale_ups",                  TAB | CSV | SC, NULL},
    {"scale-downs",          "scaling.down",                   NO, U64(scale_down),               0, 1, "scale_downs",                TAB | CSV | SC, NULL},
    {"nodes mean",           "scaling.nodes_mean",             NO, F64(nodes_mean),               2, 1, "nodes_mean",                 TAB | CSV | SC, NULL},
    {"nodes max",            "scaling.nodes_max",              NO, F64(nodes_max),                0, 1, "nodes_max",                  TAB | CSV | SC, NULL},
    {"load max/mean",        "load_imbalance.max_over_mean",   LO, F64(imbalance_max_over_mean),  2, 1, "load_max_over_mean",         TAB | CSV | DIF, NULL},
    {"load Jain index",      "load_imbalance.jain",            HI, F64(imbalance_jain),           3, 1, "load_jain",                  TAB | CSV | DIF, NULL},
    {"nodes",                "nodes",                          NO, SIZE(n_nodes),                 0, 1, NULL,                         TAB | RES_M_ARRAY_LEN, NULL},
    {"simulated s",          "sim_time_s",                     NO, F64(sim_time_s),               1, 1, NULL,                         TAB, NULL},
    {"events",               "perf.events",                    LO, U64(events),                   0, 1, NULL,                         RES_M_DIFF_NAMED | RES_M_DIFF_LAST | NB, NULL},
    {"wall s",               "perf.wall_s",                    LO, F64(wall_s),                   2, 1, NULL,                         TAB | RES_M_DIFF_NAMED | NB, NULL},
    {"requests per wall s",  "perf.requests_per_wall_s",       HI, F64(requests_per_wall_s),      0, 1, NULL,                         RES_M_DIFF_NAMED | NB, NULL},
    {"peak RSS bytes",       "perf.peak_rss_bytes",            LO, U64(peak_rss_bytes),           0, 1, NULL,                         RES_M_DIFF_NAMED | NB, NULL},
    {"input tokens",         "tokens.input",                   NO, U64(tokens.input),             0, 1, "tokens_input",               CSV, NULL},
    {"output tokens",        "tokens.output",                  NO, U64(tokens.output),            0, 1, NULL,                         0, NULL},
    {"cached tokens",        "tokens.cached",                  HI, U64(tokens.cached),            0, 1, "tokens_cached",              CSV, NULL},
    {"reloaded tokens",      "tokens.reloaded",                NO, U64(tokens.reloaded),          0, 1, "tokens_reloaded",            CSV, NULL},
    {"migrated tokens",      "tokens.migrated",                NO, U64(tokens.migrated),          0, 1, "tokens_migrated",            CSV, NULL},
    {"recomputed tokens",    "tokens.recomputed",              LO, U64(tokens.recomputed),        0, 1, "tokens_recomputed",          CSV, NULL},
    {"fresh tokens",         "tokens.fresh",                   NO, U64(tokens.fresh),             0, 1, "tokens_fresh",               CSV, NULL},
    {"preempt-recomputed tokens", "tokens.preempt_recomputed", LO, U64(tokens.preempt_recomputed), 0, 1, "tokens_preempt_recomputed", CSV, NULL},
    /* one per pool: summary.json's pools[] */
    {"pool",                 "pools.name",                     NO, POOL(TEXT, name),              0, 1, NULL,                         0, NULL},
    {"role",                 "pools.role",                     NO, POOL(TEXT_PTR, role),          0, 1, NULL,                         0, NULL},
    {"GPU",                  "pools.gpu",                      NO, POOL(TEXT, gpu),               0, 1, NULL,                         0, NULL},
    {"tp",                   "pools.tp",                       NO, POOL(INT, tp),                 0, 1, NULL,                         0, NULL},
    {"nodes",                "pools.nodes",                    NO, POOL(INT, nodes),              0, 1, NULL,                         0, NULL},
    {"busy ratio",           "pools.busy_ratio",               NO, POOL(F64, busy_ratio),         3, 1, NULL,                         0, NULL},
    {"mean KV use",          "pools.mean_kv_util",             NO, POOL(F64, mean_kv_util),       3, 1, NULL,                         0, NULL},
    {"requests",             "pools.requests",                 NO, POOL(U64, requests),           0, 1, NULL,                         0, NULL},
    {"nodes mean",           "pools.nodes_mean",               NO, POOL(F64, nodes_mean),         2, 1, NULL,                         0, NULL},
    {"GPU-hours",            "pools.gpu_hours",                NO, POOL(F64, gpu_hours),          2, 1, NULL,                         0, NULL},
    {"energy J",             "pools.energy_j",                 NO, POOL(F64, energy_j),           0, 1, NULL,                         0, NULL},
    /* one per node: summary.json's nodes[] */
    {"node",                 "nodes.id",                       NO, NODE(INT, id),                 0, 1, NULL,                         0, NULL},
    {"pool",                 "nodes.pool",                     NO, NODE(INT, pool),               0, 1, NULL,                         0, NULL},
    {"busy ratio",           "nodes.busy_ratio",               NO, NODE(F64, busy_ratio),         3, 1, NULL,                         0, NULL},
    {"mean KV use",          "nodes.mean_kv_util",             NO, NODE(F64, mean_kv_util),       3, 1, NULL,                         0, NULL},
    {"peak KV use",          "nodes.peak_kv_util",             NO, NODE(F64, peak_kv_util),       3, 1, NULL,                         0, NULL},
    {"requests",             "nodes.requests",                 NO, NODE(U64, requests),           0, 1, NULL,                         0, NULL},
    {"throttled s",          "nodes.throttled_s",              NO, NODE(F64, throttled_s),        1, 1, NULL,                         0, NULL},
    {"held s",               "nodes.held_s",                   NO, NODE(F64, held_s),             1, 1, NULL,                         0, NULL},
    {"energy J",             "nodes.energy_j",                 NO, NODE(F64, energy_j),           0, 1, NULL,                         0, NULL},
};
/* clang-format on */

static const struct res_metrics builtin_table = {builtin, sizeof builtin / sizeof *builtin};

int res_metric_is_latency(const struct res_metric *m)
{
	const size_t stat = offsetof(struct met_summary, stat),
		     split = offsetof(struct met_summary, ttft_split_s);
	const size_t stat_len = sizeof ((struct met_summary *)0)->stat,
		     split_len = sizeof ((struct met_summary *)0)->ttft_split_s;
	if (!strcmp(m->path, "slo.attainment") || !strcmp(m->path, "slo.goodput_rps"))
		return 1; /* read from the latencies */
	return m->scope == RES_SCOPE_RUN && m->kind == RES_KIND_F64 &&
	       m->better == RES_BETTER_LOWER &&
	       ((m->offset >= stat && m->offset < stat + stat_len) ||
		(m->offset >= split && m->offset < split + split_len));
}

const struct res_metrics *res_metrics_builtin(void)
{
	return &builtin_table;
}

const struct res_metrics *res_metrics_or_builtin(const struct res_metrics *t)
{
	return t ? t : &builtin_table;
}

const struct res_metric *res_metric_next(const struct res_metrics *t, enum res_list list,
					 size_t *cursor)
{
	static const struct {
		unsigned use, last;
	} sel[] = {
	    [RES_LIST_TABLE] = {TAB, 0},
	    [RES_LIST_CSV] = {CSV, 0},
	    [RES_LIST_DIFF] = {DIF, RES_M_DIFF_LAST},
	    [RES_LIST_DIFF_ALL] = {DIF | RES_M_DIFF_NAMED, RES_M_DIFF_LAST},
	    [RES_LIST_SWEEP] = {SWP, RES_M_SWEEP_LAST},
	};
	t = res_metrics_or_builtin(t);
	/* Cursor 0..n-1: the rows not marked last; n..2n-1: those marked. */
	for (; *cursor < 2 * t->n; ++*cursor) {
		const struct res_metric *m = &t->row[*cursor % t->n];
		int last_pass = *cursor >= t->n;
		if ((m->use & sel[list].use) && !(m->use & sel[list].last) == !last_pass) {
			++*cursor;
			return m;
		}
	}
	return NULL;
}

const struct res_metric *res_metric_find(const struct res_metrics *t, enum res_list list,
					 const char *path)
{
	size_t it = 0;
	const struct res_metric *m;
	while ((m = res_metric_next(t, list, &it)))
		if (!strcmp(m->path, path))
			return m;
	return NULL;
}

/* The struct holding element i of m's scope in s, or NULL when s has none. */
static const char *base_of(const struct res_metric *m, const struct met_summary *s, size_t i)
{
	switch (m->scope) {
	case RES_SCOPE_POOL:
		return i < s->n_pools ? (const char *)&s->pools[i] : NULL;
	case RES_SCOPE_NODE:
		return i < s->n_nodes ? (const char *)&s->nodes[i] : NULL;
	case RES_SCOPE_RUN:
		break;
	}
	return (const char *)s;
}

size_t res_scope_count(enum res_scope scope, const struct met_summary *s)
{
	return scope == RES_SCOPE_POOL ? s->n_pools : scope == RES_SCOPE_NODE ? s->n_nodes : 1;
}

const char *res_scope_key(enum res_scope scope)
{
	return scope == RES_SCOPE_POOL ? "pools" : scope == RES_SCOPE_NODE ? "nodes" : NULL;
}

int res_metric_shown(const struct res_metric *m, const struct met_summary *s, size_t n)
{
	if (!(m->use & (RES_M_IF_DISAGG | RES_M_IF_SCALED | RES_M_IF_CLIENT)))
		return 1;
	for (size_t j = 0; j < n; j++)
		if ((m->use & RES_M_IF_DISAGG)	   ? s[j].disaggregated
		    : (m->use & RES_M_IF_CLIENT) ? s[j].client
						 : s[j].autoscaled)
			return 1;
	return 0;
}

double res_metric_value_at(const struct res_metric *m, const struct met_summary *s, size_t i)
{
	const char *b = base_of(m, s, i);
	if (!b)
		return NAN;
	const void *f = b + m->offset;
	switch (m->kind) {
	case RES_KIND_U64:
		return (double)*(const uint64_t *)f;
	case RES_KIND_SIZE:
		return (double)*(const size_t *)f;
	case RES_KIND_INT:
		return *(const int *)f;
	case RES_KIND_PER: {
		uint64_t count = *(const uint64_t *)(b + m->per);
		return count ? *(const double *)f / (double)count : NAN; /* no sample */
	}
	case RES_KIND_TEXT:
	case RES_KIND_TEXT_PTR:
		return NAN;
	case RES_KIND_F64:
		break;
	}
	return *(const double *)f;
}

double res_metric_value(const struct res_metric *m, const struct met_summary *s)
{
	return res_metric_value_at(m, s, 0);
}

const char *res_metric_text_at(const struct res_metric *m, const struct met_summary *s, size_t i)
{
	const char *b = base_of(m, s, i);
	if (!b || (m->kind != RES_KIND_TEXT && m->kind != RES_KIND_TEXT_PTR))
		return NULL;
	return m->kind == RES_KIND_TEXT ? b + m->offset : *(const char *const *)(b + m->offset);
}

/* Integers in full and names as they are (of the first element of m's
 * scope), or 0 when m is fractional or there is no such element. */
static int put_exact(const struct res_metric *m, const struct met_summary *s, char *buf,
		     size_t len)
{
	const char *b = base_of(m, s, 0), *f = b ? b + m->offset : NULL;
	if (!f)
		return 0;
	if (m->kind == RES_KIND_U64)
		snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)f);
	else if (m->kind == RES_KIND_SIZE)
		snprintf(buf, len, "%zu", *(const size_t *)f);
	else if (m->kind == RES_KIND_INT)
		snprintf(buf, len, "%d", *(const int *)f);
	else if (m->kind == RES_KIND_TEXT || m->kind == RES_KIND_TEXT_PTR)
		snprintf(buf, len, "%s", res_metric_text_at(m, s, 0));
	else
		return 0;
	return 1;
}

void res_metric_cell(const struct res_metric *m, const struct met_summary *s, char *buf,
		     size_t len)
{
	if (put_exact(m, s, buf, len))
		return;
	double v = res_metric_value(m, s);
	if (isnan(v)) /* no sample, no price */
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.*f", m->decimals, v / m->unit);
}

void res_metric_csv_cell(const struct res_metric *m, const struct met_summary *s, char *buf,
			 size_t len)
{
	if (put_exact(m, s, buf, len))
		return;
	double v = res_metric_value(m, s);
	snprintf(buf, len, isnan(v) ? "n/a" : "%.9g", v);
}

const struct res_stat *res_stat_next_all(const struct res_metrics *t, size_t *cursor)
{
	t = res_metrics_or_builtin(t);
	while (*cursor < t->n)
		if (t->row[(*cursor)++].stat)
			return t->row[*cursor - 1].stat;
	return NULL;
}

const struct res_stat *res_stat_next(const struct res_metrics *t, size_t *cursor)
{
	const struct res_stat *g;
	while ((g = res_stat_next_all(t, cursor)) && g->client)
		;
	return g;
}

double res_stat_of(const struct res_stat *g, const struct request *r)
{
	if (r->state != REQ_DONE || g->per_token == RES_GAPS_KIND ||
	    (g->per_token && r->output_tokens < 2))
		return NAN;
	int64_t from, to;
	memcpy(&from, (const char *)r + g->from, sizeof from);
	memcpy(&to, (const char *)r + g->to, sizeof to);
	double span_s = (double)(to - from) * 1e-9;
	return g->per_token ? span_s / (double)(r->output_tokens - 1) : span_s;
}

const cJSON *res_json_item_at(const cJSON *o, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	char *save = NULL;
	for (char *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, t) : NULL;
	return o;
}

const cJSON *res_json_at(const cJSON *o, const char *path)
{
	o = res_json_item_at(o, path);
	return o && cJSON_IsNumber(o) ? o : NULL;
}
