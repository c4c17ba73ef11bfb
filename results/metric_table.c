/* metric_table: the one list of summary figures, and the walks and cells the outputs share. */
#include "results/metric_table.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"

#define U64(field) RES_KIND_U64, offsetof(struct met_summary, field), 0
#define F64(field) RES_KIND_F64, offsetof(struct met_summary, field), 0
#define SIZE(field) RES_KIND_SIZE, offsetof(struct met_summary, field), 0
#define PER(sum, count)                                                                            \
	RES_KIND_PER, offsetof(struct met_summary, sum), offsetof(struct met_summary, count)
#define HI RES_BETTER_HIGHER
#define LO RES_BETTER_LOWER
#define NO RES_BETTER_NONE
#define TAB RES_M_TABLE
#define CSV RES_M_CSV
#define DIF RES_M_DIFF
#define SWP RES_M_SWEEP
#define PD RES_M_IF_DISAGG
#define SC RES_M_IF_SCALED

/* Rows of one JSON object keep the object's key order; the order of the
 * rest is the comparison table's, comparison.csv's, diff's and sweep.csv's
 * (their _LAST rows apart). */
/* clang-format off */
static const struct res_metric builtin[] = {
/*   name                   path                             better kind/field                  dec unit csv                           use */
    {"seed",                 "seed",                           NO, U64(seed),                     0, 1, NULL,                         0},
    {"requests arrived",     "requests.arrived",               NO, U64(arrived),                  0, 1, "arrived",                    TAB | CSV | SWP},
    {"  completed",          "requests.completed",             HI, U64(completed),                0, 1, "completed",                  TAB | CSV | DIF | SWP},
    {"  shed",               "requests.shed",                  LO, U64(shed),                     0, 1, "shed",                       TAB | CSV | DIF | SWP},
    {"  failed",             "requests.failed",                LO, U64(failed),                   0, 1, "failed",                     TAB | CSV | DIF | SWP},
    {"  skipped lines",      "requests.skipped_lines",         NO, U64(skipped_lines),            0, 1, NULL,                         0},
    {"TTFT mean (s)",        "ttft_s.mean",                    LO, F64(ttft.mean),                3, 1, "ttft_mean_s",                TAB | CSV | DIF | PD},
    {"  prefill queue (s)",  "ttft_split.queue_s",             LO, F64(ttft_split_s[0]),          3, 1, "ttft_queue_s",               TAB | CSV | DIF | PD},
    {"  prefill (s)",        "ttft_split.prefill_s",           LO, F64(ttft_split_s[1]),          3, 1, "ttft_prefill_s",             TAB | CSV | DIF | PD},
    {"  KV transfer (s)",    "ttft_split.transfer_s",          LO, F64(ttft_split_s[2]),          3, 1, "ttft_transfer_s",            TAB | CSV | DIF | PD},
    {"  decode queue (s)",   "ttft_split.decode_queue_s",      LO, F64(ttft_split_s[3]),          3, 1, "ttft_decode_queue_s",        TAB | CSV | DIF | PD},
    {"TTFT p50 (s)",         "ttft_s.p50",                     LO, F64(ttft.p50),                 3, 1, "ttft_p50_s",                 TAB | CSV | DIF | SWP},
    {"TTFT p90 (s)",         "ttft_s.p90",                     LO, F64(ttft.p90),                 3, 1, NULL,                         DIF},
    {"TTFT p99 (s)",         "ttft_s.p99",                     LO, F64(ttft.p99),                 3, 1, "ttft_p99_s",                 TAB | CSV | DIF | SWP},
    {"TTFT max (s)",         "ttft_s.max",                     LO, F64(ttft.max),                 3, 1, NULL,                         0},
    {"TTFT samples",         "ttft_s.count",                   NO, SIZE(ttft.n),                  0, 1, NULL,                         0},
    {"TPOT mean (s)",        "tpot_s.mean",                    LO, F64(tpot.mean),                4, 1, NULL,                         DIF},
    {"TPOT p50 (s)",         "tpot_s.p50",                     LO, F64(tpot.p50),                 4, 1, "tpot_p50_s",                 TAB | CSV | DIF | SWP},
    {"TPOT p90 (s)",         "tpot_s.p90",                     LO, F64(tpot.p90),                 4, 1, NULL,                         0},
    {"TPOT p99 (s)",         "tpot_s.p99",                     LO, F64(tpot.p99),                 4, 1, "tpot_p99_s",                 TAB | CSV | DIF | SWP},
    {"TPOT max (s)",         "tpot_s.max",                     LO, F64(tpot.max),                 4, 1, NULL,                         0},
    {"TPOT samples",         "tpot_s.count",                   NO, SIZE(tpot.n),                  0, 1, NULL,                         0},
    {"E2E mean (s)",         "e2e_s.mean",                     LO, F64(e2e.mean),                 2, 1, NULL,                         0},
    {"E2E p50 (s)",          "e2e_s.p50",                      LO, F64(e2e.p50),                  2, 1, NULL,                         DIF},
    {"E2E p90 (s)",          "e2e_s.p90",                      LO, F64(e2e.p90),                  2, 1, NULL,                         0},
    {"E2E p99 (s)",          "e2e_s.p99",                      LO, F64(e2e.p99),                  2, 1, "e2e_p99_s",                  TAB | CSV | DIF | SWP},
    {"E2E max (s)",          "e2e_s.max",                      LO, F64(e2e.max),                  2, 1, NULL,                         0},
    {"E2E samples",          "e2e_s.count",                    NO, SIZE(e2e.n),                   0, 1, NULL,                         0},
    {"queue mean (s)",       "queue_s.mean",                   LO, F64(queue.mean),               3, 1, NULL,                         0},
    {"queue p50 (s)",        "queue_s.p50",                    LO, F64(queue.p50),                3, 1, NULL,                         0},
    {"queue p90 (s)",        "queue_s.p90",                    LO, F64(queue.p90),                3, 1, NULL,                         0},
    {"queue p99 (s)",        "queue_s.p99",                    LO, F64(queue.p99),                3, 1, "queue_p99_s",                TAB | CSV | DIF},
    {"queue max (s)",        "queue_s.max",                    LO, F64(queue.max),                3, 1, NULL,                         0},
    {"queue samples",        "queue_s.count",                  NO, SIZE(queue.n),                 0, 1, NULL,                         0},
    {"prefix hit ratio",     "prefix_hit_ratio",               HI, F64(prefix_hit_ratio),         3, 1, "prefix_hit_ratio",           TAB | CSV | DIF | SWP},
    {"recompute ratio",      "recompute_ratio",                LO, F64(recompute_ratio),          3, 1, "recompute_ratio",            TAB | CSV | DIF | SWP},
    {"recompute GPU-s",      "recompute_gpu_s",                LO, F64(recompute_gpu_s),          1, 1, "recompute_gpu_s",            TAB | CSV | DIF},
    {"migrations",           "migration.count",                LO, U64(migration_count),          0, 1, "migrations",                 TAB | CSV | DIF | SWP},
    {"migrated GB",          "migration.bytes",                LO, F64(migration_bytes),          2, 1e9, "migrated_bytes",           TAB | CSV | DIF},
    {"migration s",          "migration.seconds",              LO, F64(migration_s),              1, 1, NULL,                         0},
    {"KV hand-overs",        "pd_transfer.count",              NO, U64(pd.count),                 0, 1, "pd_transfers",               TAB | CSV | PD},
    {"  hand-over GB",       "pd_transfer.bytes",              LO, F64(pd.bytes),                 2, 1e9, "pd_transfer_bytes",        TAB | CSV | DIF | PD},
    {"hand-over s",          "pd_transfer.seconds",            LO, F64(pd.seconds),               1, 1, NULL,                         0},
    {"  mean hand-over s",   "pd_transfer.mean_s",             LO, PER(pd.seconds, pd.count),     4, 1, "pd_transfer_mean_s",         TAB | CSV | DIF | PD},
    {"  failovers",          "pd_transfer.failovers",          LO, U64(pd.failovers),             0, 1, "pd_failovers",               TAB | CSV | DIF | PD},
    {"  kept on decode",     "pd_transfer.local",              NO, U64(pd.local),                 0, 1, "pd_local",                   TAB | CSV | PD},
    {"hand-over wait s",     "pd_transfer.wait_s",             LO, F64(pd.wait_s),                1, 1, NULL,                         0},
    {"offloaded GB",         "offload.bytes_out",              NO, F64(offload_bytes_out),        2, 1e9, NULL,                       0},
    {"offload reloaded GB",  "offload.bytes_in",               NO, F64(offload_bytes_in),         2, 1e9, NULL,                       0},
    {"preemptions",          "preemptions",                    LO, U64(preemptions),              0, 1, "preemptions",                TAB | CSV | DIF},
    {"throughput (req/s)",   "throughput.requests_per_s",      HI, F64(requests_per_s),           2, 1, "requests_per_s",             TAB | CSV | DIF | SWP},
    {"output tokens/s",      "throughput.output_tokens_per_s", HI, F64(output_tokens_per_s),      0, 1, "output_tokens_per_s",        TAB | CSV | DIF | SWP},
    {"SLO TTFT p99 (s)",     "slo.ttft_p99_s",                 NO, F64(slo_ttft_s),               3, 1, NULL,                         0},
    {"SLO TPOT p99 (s)",     "slo.tpot_p99_s",                 NO, F64(slo_tpot_s),               4, 1, NULL,                         0},
    {"SLO attainment",       "slo.attainment",                 HI, F64(slo_attainment),           3, 1, "slo_attainment",             TAB | CSV | DIF | SWP | RES_M_SWEEP_LAST},
    {"goodput (req/s)",      "slo.goodput_rps",                HI, F64(goodput_rps),              2, 1, "goodput_rps",                TAB | CSV | DIF | SWP},
    {"GPU-hours",            "gpu_hours",                      LO, F64(gpu_hours),                2, 1, "gpu_hours",                  TAB | CSV | DIF | SWP},
    {"cost (USD)",           "cost_usd",                       LO, F64(cost_usd),                 2, 1, "cost_usd",                   TAB | CSV | DIF | SWP},
    {"energy J",             "energy.joules",                  LO, F64(energy_j),                 0, 1, NULL,                         0},
    {"J per output token",   "energy.j_per_output_token",      LO, F64(energy_j_per_out),         3, 1, "j_per_output_token",         TAB | CSV | DIF | SWP},
    {"energy (kWh)",         "energy.kwh",                     LO, F64(energy_kwh),               3, 1, "energy_kwh",                 TAB | CSV | DIF | SWP},
    {"scale-ups",            "scaling.up",                     NO, U64(scale_up),                 0, 1, "scale_ups",                  TAB | CSV | SC},
    {"scale-downs",          "scaling.down",                   NO, U64(scale_down),               0, 1, "scale_downs",                TAB | CSV | SC},
    {"nodes mean",           "scaling.nodes_mean",             NO, F64(nodes_mean),               2, 1, "nodes_mean",                 TAB | CSV | SC},
    {"nodes max",            "scaling.nodes_max",              NO, F64(nodes_max),                0, 1, "nodes_max",                  TAB | CSV | SC},
    {"load max/mean",        "load_imbalance.max_over_mean",   LO, F64(imbalance_max_over_mean),  2, 1, "load_max_over_mean",         TAB | CSV | DIF},
    {"load Jain index",      "load_imbalance.jain",            HI, F64(imbalance_jain),           3, 1, "load_jain",                  TAB | CSV | DIF},
    {"nodes",                "nodes",                          NO, SIZE(n_nodes),                 0, 1, NULL,                         TAB | RES_M_ARRAY_LEN},
    {"simulated s",          "sim_time_s",                     NO, F64(sim_time_s),               1, 1, NULL,                         TAB},
    {"events",               "perf.events",                    LO, U64(events),                   0, 1, NULL,                         RES_M_DIFF_NAMED | RES_M_DIFF_LAST},
    {"wall s",               "perf.wall_s",                    LO, F64(wall_s),                   2, 1, NULL,                         TAB | RES_M_DIFF_NAMED},
    {"requests per wall s",  "perf.requests_per_wall_s",       HI, F64(requests_per_wall_s),      0, 1, NULL,                         RES_M_DIFF_NAMED},
    {"peak RSS bytes",       "perf.peak_rss_bytes",            LO, U64(peak_rss_bytes),           0, 1, NULL,                         RES_M_DIFF_NAMED},
    {"input tokens",         "tokens.input",                   NO, U64(tokens.input),             0, 1, "tokens_input",               CSV},
    {"output tokens",        "tokens.output",                  NO, U64(tokens.output),            0, 1, NULL,                         0},
    {"cached tokens",        "tokens.cached",                  HI, U64(tokens.cached),            0, 1, "tokens_cached",              CSV},
    {"reloaded tokens",      "tokens.reloaded",                NO, U64(tokens.reloaded),          0, 1, "tokens_reloaded",            CSV},
    {"migrated tokens",      "tokens.migrated",                NO, U64(tokens.migrated),          0, 1, "tokens_migrated",            CSV},
    {"recomputed tokens",    "tokens.recomputed",              LO, U64(tokens.recomputed),        0, 1, "tokens_recomputed",          CSV},
    {"fresh tokens",         "tokens.fresh",                   NO, U64(tokens.fresh),             0, 1, "tokens_fresh",               CSV},
    {"preempt-recomputed tokens", "tokens.preempt_recomputed", LO, U64(tokens.preempt_recomputed), 0, 1, "tokens_preempt_recomputed", CSV},
};
/* clang-format on */

static const struct res_metrics builtin_table = {builtin, sizeof builtin / sizeof *builtin};

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

static const void *field(const struct res_metric *m, const struct met_summary *s)
{
	return (const char *)s + m->offset;
}

int res_metric_shown(const struct res_metric *m, const struct met_summary *s, size_t n)
{
	if (!(m->use & (RES_M_IF_DISAGG | RES_M_IF_SCALED)))
		return 1;
	for (size_t j = 0; j < n; j++)
		if ((m->use & RES_M_IF_DISAGG) ? s[j].disaggregated : s[j].autoscaled)
			return 1;
	return 0;
}

double res_metric_value(const struct res_metric *m, const struct met_summary *s)
{
	switch (m->kind) {
	case RES_KIND_U64:
		return (double)*(const uint64_t *)field(m, s);
	case RES_KIND_SIZE:
		return (double)*(const size_t *)field(m, s);
	case RES_KIND_PER: {
		uint64_t count = *(const uint64_t *)((const char *)s + m->per);
		return count ? *(const double *)field(m, s) / (double)count : 0;
	}
	case RES_KIND_F64:
		break;
	}
	return *(const double *)field(m, s);
}

/* Integers in full, or 0 when m is fractional. */
static int put_integer(const struct res_metric *m, const struct met_summary *s, char *buf,
		       size_t len)
{
	if (m->kind == RES_KIND_U64)
		snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field(m, s));
	else if (m->kind == RES_KIND_SIZE)
		snprintf(buf, len, "%zu", *(const size_t *)field(m, s));
	return m->kind == RES_KIND_U64 || m->kind == RES_KIND_SIZE;
}

void res_metric_cell(const struct res_metric *m, const struct met_summary *s, char *buf,
		     size_t len)
{
	if (put_integer(m, s, buf, len))
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
	if (put_integer(m, s, buf, len))
		return;
	double v = res_metric_value(m, s);
	snprintf(buf, len, isnan(v) ? "n/a" : "%.9g", v);
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
