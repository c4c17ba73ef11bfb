/* noise: when two figures differ beyond the noise of the seeds (docs/outputs.md, The verdict). */
#include "results/noise.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "results/metric_table.h"

/* One seed's noise floors (docs/outputs.md, The verdict). Tail latencies:
 * a p99 rests on the slowest 1% of one seed's requests; seeds 1-3 of the
 * default scenario (600 and 1,200 s) move the steady columns' TTFT p99 by
 * up to 13% of the smallest (0.054-0.061 s), within 10% and 5 ms (about
 * one decode iteration; 0.5 ms per output token). Counts of work
 * (recompute, migrated bytes): 5%, and 5 GPU-s (0.1% of the GPU time of
 * the default scenario's ten minutes on 8 GPUs) or 0.1 GB. Closed-loop
 * rates and per-token figures: the same seeds move completed requests by up
 * to 2.0% and J per output token by up to 1.6%, so 3%. SLO attainment: 0.5
 * points. */
static const struct res_noise noise[] = {
    {"ttft_s.p99", 0.005, 0.10},	 {"tpot_s.p99", 0.0005, 0.10},
    {"recompute_gpu_s", 5, 0.05},	 {"migration.bytes", 1e8, 0.05},
    {"slo.attainment", 0.005, 0},	 {"slo.goodput_rps", 0, 0.03},
    {"cost_per_output_token_usd", 0, 0.03}, {"energy.j_per_output_token", 0, 0.03},
    {"requests.completed", 0, 0.03},	 {"throughput.requests_per_s", 0, 0.03},
    /* the other latency rows of the table: the same granularity (one
     * decode iteration, one token's step), medians 5%, tails 10% */
    {"ttft_s.p50", 0.005, 0.05},	 {"tpot_s.p50", 0.0005, 0.05},
    {"e2e_s.p99", 0.005, 0.10},		 {"queue_s.p99", 0.005, 0.10},
};

static const struct res_noise default_noise = {NULL, 0, 0.05};

const struct res_noise *res_noise_of(const char *path)
{
	for (size_t i = 0; i < sizeof noise / sizeof *noise; i++)
		if (!strcmp(noise[i].path, path))
			return &noise[i];
	return NULL;
}

int res_material(const struct res_metric *m, const struct res_spread *a,
		 const struct res_spread *b)
{
	if (isnan(a->median) || isnan(b->median))
		return 0;
	if (a->min < a->max || b->min < b->max) /* seeds: the ranges are apart */
		return a->min > b->max || a->max < b->min;
	const struct res_noise *z = res_noise_of(m->path);
	if (!z)
		z = &default_noise;
	return fabs(a->median - b->median) > z->abs + z->rel * fabs(b->median);
}

