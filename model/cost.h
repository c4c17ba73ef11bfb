/* cost: iteration time of one node's batch (roofline or fixed model). */
#ifndef KVSIM_COST_H
#define KVSIM_COST_H

#include <math.h>
#include <stdint.h>

#include "model/attention.h"

struct cluster_cfg;

/* Sums over one iteration's batch; the engine adds to them as it schedules.
 * Prefill chunk i computes n_i new tokens after c_i cached ones; decode j
 * attends over k_j tokens (its new token included). */
struct cost_batch {
	double new_tokens;    /* sum n_i + d: tokens through the weights */
	double attn_pairs;    /* sum n_i * (c_i + n_i / 2) + sum k_j */
	double kv_tokens;     /* sum (c_i + n_i) + sum k_j: KV read or written */
	double pf_new, pf_cached, pf_sq; /* the prefills': sum n_i, sum c_i, sum n_i^2 */
	int decodes, prefills;
};

struct cost_model {
	int fixed;                   /* 1: base + per_token * tokens */
	double base_s, per_token_s;  /* fixed */
	double flops_per_token;      /* 2 * active params */
	double weight_bytes;
	/* Mixture of experts (experts 0: dense): an iteration reads the dense
	 * weights and, of each MoE layer, the routed experts its tokens touch
	 * (cost_weight_read_bytes). */
	int experts;
	double dense_weight_bytes;  /* all but the routed experts */
	double expert_bytes;        /* one routed expert in every MoE layer */
	double log_expert_miss;     /* ln(1 - k / E): a token skipping an expert */
	double flops_per_s;          /* tp * peak * mfu */
	double bytes_per_s;          /* tp * hbm bandwidth * mbu */
	double overhead_s, per_seq_s; /* the engine's CPU time per iteration and per request in it */
	/* attention, per layer and GPU: the calibrated model, or (attn_table)
	 * measured times, scaled by the fit's ratio from table_shape where
	 * that differs from shape (table_scaled); attn_table_tp: measured at
	 * this replica's TP degree too (used where its rows surround a batch) */
	struct attn_fit attn;
	struct attn_shape shape;
	const struct attn_table *attn_table, *attn_table_tp;
	struct attn_fit table_fit;
	struct attn_shape table_shape;
	int table_scaled;
	/* tensor parallelism: 2 all-reduces per layer over the intra-server link */
	int tp, layers;
	double act_bytes_per_token;  /* hidden * 2 (bf16 activations) */
	double link_bytes_per_s, link_latency_s;
	double ar_alpha_s, ar_beta_s_per_byte; /* calibrated all-reduce (beta 0: none) */
	/* calibrated roofline: smooth max with exponent knee (0: plain max),
	 * plus op_overhead_s per kernel, COST_KERNELS_PER_LAYER per layer */
	double knee, op_overhead_s;
	/* The engine's modes (cost_cfg): a batch of at most graph_max_tokens
	 * new tokens replays a CUDA graph, a decode-only one whole
	 * (graph_full_decode: no launch cost), others with graph_eager_kernels
	 * kernels per layer launched outside it; larger batches launch
	 * COST_KERNELS_PER_LAYER per layer. Messages under car_max_bytes take
	 * the faster of NCCL's line and the custom all-reduce's (car_beta 0:
	 * none). async_cpu: the CPU's time overlaps the GPU's. */
	int graph_max_tokens, graph_full_decode, graph_eager_kernels, async_cpu;
	double car_alpha_s, car_beta_s_per_byte, car_max_bytes;
	double step_s; /* per step, outside the layers, not hidden by async_cpu */
	/* profile: measured per-layer operator times for this tp (NULL: roofline) */
	const struct prof_series *prof;
	/* An iteration's work for the power model (cost_work_ns), ns: per new
	 * token (its FLOPs through the weights), per attention pair (the
	 * attention's FLOPs), per KV token read or written, for the weights
	 * read (dense) and per byte (a MoE's weights, cost_weight_read_bytes);
	 * the byte terms times the GPU's memory_weight. The fixed model's
	 * pair and KV terms are 0. */
	double work_token_ns, work_pair_ns, work_kv_ns, work_weights_ns, work_byte_ns;
};

/* Kernels per transformer layer that pay the fixed launch cost: the four
 * linear projections plus two norms, rope, the activation and the add. */
#define COST_KERNELS_PER_LAYER 9

/* An iteration's time, term by term (seconds). */
struct cost_parts {
	double compute_s, memory_s; /* linear layers: FLOPs / (peak x mfu), weights / (bandwidth x mbu) */
	double combined_s;          /* their (smooth) maximum, or the profile's layers */
	double kernels_s;           /* fixed per-kernel cost */
	double attention_s;         /* the attention kernels of every layer */
	double comm_s;              /* tensor-parallel all-reduces */
	double overhead_s;          /* the engine's CPU time the step waits for (with
				     * asynchronous scheduling, what exceeds the GPU's time) */
	double total_s;
};

/* weight_bytes: bytes of weights one replica reads per iteration. */
void cost_init(struct cost_model *cm, const struct cluster_cfg *cl, double weight_bytes);
static inline void cost_batch_clear(struct cost_batch *b)
{
	b->new_tokens = b->attn_pairs = b->kv_tokens = 0;
	b->pf_new = b->pf_cached = b->pf_sq = 0;
	b->decodes = b->prefills = 0;
}
/* Adds a prefill chunk of n new tokens after c cached ones. */
static inline void cost_add_prefill(struct cost_batch *b, double n, double c)
{
	b->new_tokens += n;
	b->attn_pairs += n * (c + n / 2.0);
	b->kv_tokens += c + n;
	b->pf_new += n;
	b->pf_cached += c;
	b->pf_sq += n * n;
	b->prefills++;
}
/* Adds a decode step attending over k tokens (the new one included). */
static inline void cost_add_decode(struct cost_batch *b, double k)
{
	b->new_tokens += 1;
	b->attn_pairs += k;
	b->kv_tokens += k;
	b->decodes++;
}
/* Bytes of weights an iteration with tokens new tokens reads: all of them
 * for a dense model; for a mixture of experts the dense part plus the
 * expected distinct routed experts of each MoE layer, E (1 - (1 - k /
 * E)^tokens), every token choosing k of the E experts uniformly and
 * independently of the others (real routers are skewed, so a batch touches
 * somewhat fewer: an upper bound at small batches). */
static inline double cost_weight_read_bytes(const struct cost_model *cm, double tokens)
{
	if (cm->experts == 0)
		return cm->weight_bytes;
	double touched = tokens > 0 ? -cm->experts * expm1(tokens * cm->log_expert_miss) : 0;
	return cm->dense_weight_bytes + cm->expert_bytes * touched;
}
/* The iteration's time split into its terms. */
void cost_parts(const struct cost_model *cm, const struct cost_batch *b, struct cost_parts *p);
/* Iteration time in seconds, and rounded to integer nanoseconds (>= 1). */
double cost_iteration_s(const struct cost_model *cm, const struct cost_batch *b);
int64_t cost_iteration_ns(const struct cost_model *cm, const struct cost_batch *b);
/* An iteration's work (ns): the time its FLOPs take at flops_per_s plus
 * memory_weight x the time its weight and KV bytes take at bytes_per_s;
 * the fixed model's, its own time (busy at full power). The power model
 * takes utilisation u = min(1, work / the iteration's time, slow-downs
 * included) (docs/model.md, Energy). A few multiplications: every step
 * start computes it. In three parts, so that a decode span's iteration g
 * (cost_work_at_ns) is exactly what cost_work_ns of its own batch gives:
 * the part a span does not change (the weights, the FLOPs through them;
 * the fixed model's time), then the attention and KV terms. */
static inline double cost_work_base_ns(const struct cost_model *cm, const struct cost_batch *b)
{
	if (cm->fixed)
		return (double)cost_iteration_ns(cm, b);
	double w = cm->experts ? cost_weight_read_bytes(cm, b->new_tokens) * cm->work_byte_ns
			       : cm->work_weights_ns;
	return w + cm->work_token_ns * b->new_tokens;
}
/* The work of b with attn_pairs and kv_tokens up by d each, base being
 * cost_work_base_ns(cm, b). */
static inline double cost_work_plus_ns(const struct cost_model *cm, const struct cost_batch *b,
				       double base, double d)
{
	return base + cm->work_pair_ns * (b->attn_pairs + d) + cm->work_kv_ns * (b->kv_tokens + d);
}
/* The work of b grown by g decode iterations (attn_pairs and kv_tokens
 * up by g x decodes: a decode span's iteration g). */
static inline double cost_work_at_ns(const struct cost_model *cm, const struct cost_batch *b,
				     double base, double g)
{
	return cost_work_plus_ns(cm, b, base, g * b->decodes);
}
static inline double cost_work_ns(const struct cost_model *cm, const struct cost_batch *b)
{
	return cost_work_at_ns(cm, b, cost_work_base_ns(cm, b), 0);
}
/* An iteration's unrounded ns, and its first and second derivatives per
 * iteration were the batch a decode span's first iteration (attn_pairs and
 * kv_tokens up by decodes each): what cost_span_ns and cost_span_grid use. */
struct cost_x {
	double x, slope, curv;
};
/* cost_iteration_ns, also giving *x. */
int64_t cost_iteration_ns_x(const struct cost_model *cm, const struct cost_batch *b,
			    struct cost_x *x);
/* Bounds of the spacing, in iterations, of cost_span_ns's exact
 * evaluations. */
#define COST_SPAN_GRID_MIN 8
#define COST_SPAN_GRID_MAX 128
/* The spacing for a span beginning with x: a power of two in [MIN, MAX],
 * wider the straighter the iteration times run (fewer grid evaluations)
 * and narrower where they bend (fewer iterations near a rounding boundary
 * evaluated one by one). The times are the same with any spacing. */
uint32_t cost_span_grid(const struct cost_x *x);
/* A decode span's evaluations so far: grid[i] is iteration i * G's
 * unrounded ns for i < n_grid (grid[0] may come from the caller's
 * cost_iteration_ns_x; n_grid 0 is an empty grid); slope0, where grid[0]
 * came so, its slope (cost_x.slope), else NaN. grid needs room for
 * span length / G + 3 values. */
struct cost_span {
	double *grid;
	uint32_t n_grid, G;
	double slope0;
};
/* cost_iteration_ns of iterations j in [from, to) of a decode span, into
 * out[j - from]: iteration j is the batch b0 with attn_pairs and kv_tokens
 * grown by j * decodes. Adds the grid points it evaluates to sp, so the
 * span's later chunks (from >= this call's to) evaluate each once. The same
 * values as evaluating each iteration, with far fewer evaluations (see
 * cost.c). Returns the evaluations made. */
uint32_t cost_span_ns(const struct cost_model *cm, const struct cost_batch *b0, uint32_t from,
		      uint32_t to, struct cost_span *sp, int64_t *out);
/* Seconds to prefill n tokens after c cached ones as a batch of its own, the
 * engine's per-iteration overhead and the fixed per-kernel cost excluded
 * (the marginal cost of a recompute). */
double cost_prefill_s(const struct cost_model *cm, double n, double c);

#endif
