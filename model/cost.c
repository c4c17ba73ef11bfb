/* cost: roofline and fixed iteration-time models (docs/design.md, section 3). */
#include "model/cost.h"

#include <math.h>
#include <string.h>

#include "config/config.h"
#include "model/profile.h"

void cost_init(struct cost_model *cm, const struct cluster_cfg *cl, double weight_bytes)
{
	const struct cat_model *m = cl->model;
	const struct cat_gpu *g = cl->gpu;
	const struct cost_cfg *co = &cl->cost;
	cm->fixed = co->kind == COST_FIXED;
	cm->base_s = co->base_ms * 1e-3;
	cm->per_token_s = co->per_token_ms * 1e-3;
	cm->flops_per_token = 2.0 * m->active_params;
	cm->weight_bytes = weight_bytes;
	cm->experts = m->experts;
	if (m->experts > 0) {
		double bytes_per_param = weight_bytes / m->params;
		cm->expert_bytes = m->moe_layers * m->expert_params * bytes_per_param;
		cm->dense_weight_bytes = weight_bytes - m->experts * cm->expert_bytes;
		cm->log_expert_miss = log1p(-(double)m->experts_per_token / m->experts);
	} else {
		cm->expert_bytes = cm->dense_weight_bytes = cm->log_expert_miss = 0;
	}
	double peak = cl->dtype == DTYPE_FP8 ? g->fp8_flops : g->bf16_flops;
	cm->flops_per_s = cl->tp * peak * co->mfu;
	cm->bytes_per_s = cl->tp * g->hbm_bytes_per_s * co->mbu;
	cm->overhead_s = co->overhead_ms * 1e-3;
	cm->per_seq_s = co->overhead_per_seq_ms * 1e-3;
	cm->tp = cl->tp;
	cm->layers = m->layers;
	cm->act_bytes_per_token = 2.0 * m->hidden;
	cm->link_bytes_per_s = cl->intra_server->bytes_per_s;
	cm->link_latency_s = cl->intra_server->latency_s;
	cm->ar_alpha_s = cl->tp <= 8 ? g->ar_alpha_s[cl->tp] : 0;
	cm->ar_beta_s_per_byte = cl->tp <= 8 ? g->ar_beta_s_per_byte[cl->tp] : 0;
	cm->knee = co->knee;
	cm->op_overhead_s = co->op_overhead_us * 1e-6;
	cm->graph_max_tokens = co->graph_max_tokens;
	cm->graph_full_decode = co->graph_full_decode;
	cm->graph_eager_kernels = co->graph_eager_kernels;
	cm->async_cpu = co->async_cpu;
	cm->step_s = co->step_ms * 1e-3;
	/* vLLM's custom all-reduce: within a server's NVLink, for buffers under
	 * its max_size, 8 MiB (vllm/distributed/device_communicators/
	 * custom_all_reduce.py) */
	int car = co->custom_ar && cl->tp <= 8 && g->car_beta_s_per_byte[cl->tp] > 0;
	cm->car_alpha_s = car ? g->car_alpha_s[cl->tp] : 0;
	cm->car_beta_s_per_byte = car ? g->car_beta_s_per_byte[cl->tp] : 0;
	cm->car_max_bytes = car ? 8.0 * 1048576 : 0;
	cm->prof = co->kind == COST_PROFILE && co->profile ? prof_series_for(co->profile, cl->tp)
							    : NULL;
	/* Attention per GPU: heads split over tp (KV heads replicated where
	 * fewer than tp), at the GPU's 16-bit peak (attention kernels run in
	 * 16 bits whatever the weights' precision). */
	struct attn_shape *sh = &cm->shape;
	sh->q_heads = (double)m->q_heads / cl->tp;
	sh->kv_heads = m->kv_heads >= cl->tp ? (double)m->kv_heads / cl->tp : 1;
	sh->head_dim = m->head_dim;
	/* one GPU's share of a token's KV in one layer, copies included
	 * (KV heads fewer than tp, an MLA latent on every GPU) */
	sh->kv_bytes = catalog_kv_bytes_per_token_tp(m, cl->tp) / cl->tp / m->layers;
	sh->peak_flops = g->bf16_flops;
	sh->hbm_bytes_per_s = g->hbm_bytes_per_s;
	cm->attn = co->attn;
	cm->attn_table = co->kind == COST_PROFILE ? co->attn_table : NULL;
	cm->attn_table_tp = cm->attn_table ? co->attn_table_tp : NULL;
	cm->table_fit = co->attn_table_fit;
	cm->table_shape = co->attn_table_shape;
	cm->table_scaled = cm->attn_table && memcmp(&cm->table_shape, sh, sizeof *sh) != 0;
	/* The power model's work: 2 FLOPs per active weight and new token; 4
	 * per attention pair, head and head dimension (the scores and the
	 * weighted sum); the replica's weight and KV bytes (every GPU's
	 * share, copies included) times the GPU's memory_weight. */
	double s_per_flop = 1e9 / cm->flops_per_s;
	cm->work_byte_ns = g->memory_weight * 1e9 / cm->bytes_per_s;
	cm->work_token_ns = cm->flops_per_token * s_per_flop;
	cm->work_pair_ns = cm->fixed ? 0 : 4.0 * m->q_heads * m->head_dim * m->layers * s_per_flop;
	cm->work_kv_ns =
	    cm->fixed ? 0 : catalog_kv_bytes_per_token_tp(m, cl->tp) * cm->work_byte_ns;
	cm->work_weights_ns = weight_bytes * cm->work_byte_ns;
}

/* One layer's prefill attention: the measured table (chunks aggregated as
 * Vidur does: sqrt(sum n_i^2) new tokens after sum c_i) at this TP degree
 * where its rows surround the chunk, else scaled from the table's shape
 * by the fit's ratio; or the fit. */
static double prefill_attn_s(const struct cost_model *cm, const struct cost_batch *b, double nc)
{
	if (b->prefills == 0)
		return 0;
	if (!cm->attn_table)
		return attn_fit_prefill_s(&cm->attn, &cm->shape, b->pf_new, nc, b->pf_sq,
					  (b->pf_cached + b->pf_new) / b->prefills);
	double n = sqrt(b->pf_sq), c = b->pf_cached;
	double t = cm->attn_table_tp ? attn_table_prefill_within(cm->attn_table_tp, n, c) : NAN;
	if (!isnan(t))
		return t;
	t = attn_table_prefill_s(cm->attn_table, n, c);
	if (cm->table_scaled)
		t *= attn_fit_prefill_s(&cm->table_fit, &cm->shape, n, n * c, n * n, c + n) /
		     attn_fit_prefill_s(&cm->table_fit, &cm->table_shape, n, n * c, n * n, c + n);
	return t;
}

/* One layer's decode attention over sum_k tokens in all, and (*slope) its
 * derivative in sum_k / decodes (a decode span's iteration): the table at
 * the mean context (Vidur's aggregation), scaled as above, or the fit. */
static double decode_attn_s(const struct cost_model *cm, double d, double sum_k, double *slope)
{
	*slope = 0;
	if (d <= 0)
		return 0;
	double pt, t;
	if (!cm->attn_table) {
		t = attn_fit_decode_s(&cm->attn, &cm->shape, d, sum_k, &pt);
		*slope = pt * d;
		return t;
	}
	double dt;
	t = cm->attn_table_tp ? attn_table_decode_within(cm->attn_table_tp, d, sum_k / d, &dt) : NAN;
	if (!isnan(t)) {
		*slope = dt;
		return t;
	}
	t = attn_table_decode_s(cm->attn_table, d, sum_k / d, &dt);
	if (!cm->table_scaled) {
		*slope = dt;
		return t;
	}
	double pa, pb, fa = attn_fit_decode_s(&cm->table_fit, &cm->shape, d, sum_k, &pa);
	double fb = attn_fit_decode_s(&cm->table_fit, &cm->table_shape, d, sum_k, &pb);
	*slope = dt * fa / fb + t * d * (pa * fb - fa * pb) / (fb * fb);
	return t * fa / fb;
}

/* max(a, b) when knee is 0, else (a^knee + b^knee)^(1/knee), scaled so
 * that large ratios do not overflow. */
static inline double smooth_max(double a, double b, double knee)
{
	/* (not fmax/fmin: a library call each at -O2; a and b are never NaN) */
	double hi = a > b ? a : b, lo = a > b ? b : a;
	if (knee <= 0 || hi <= 0)
		return hi;
	return hi * pow(1.0 + pow(lo / hi, knee), 1.0 / knee);
}

/* cost_parts; with d, also the first and second derivatives of total_s
 * in j (d[0], d[1]) for the batch grown by j decodes' worth of attention
 * and KV (a decode span's iteration j: attn_pairs and kv_tokens up by
 * b->decodes each per iteration): only the decodes' attention grows, the
 * fit's linearly (no curvature), a measured table's piecewise linearly. */
static inline __attribute__((always_inline)) void
parts_d(const struct cost_model *cm, const struct cost_batch *b, struct cost_parts *p, double *d)
{
	memset(p, 0, sizeof *p);
	if (cm->fixed) {
		p->overhead_s = cm->base_s;
		p->compute_s = p->combined_s = cm->per_token_s * b->new_tokens;
		p->total_s = p->overhead_s + p->combined_s;
		if (d)
			d[0] = d[1] = 0;
		return;
	}
	/* The decodes' KV tokens and the prefills' sum n_i c_i, from the sums
	 * (exact: integers far below 2^53). Only the decodes' part grows
	 * along a decode span, by one token per decode per iteration. */
	double dec_k = b->kv_tokens - b->pf_cached - b->pf_new;
	double nc = b->attn_pairs - dec_k - b->pf_sq / 2, slope;
	double attn = prefill_attn_s(cm, b, nc) + decode_attn_s(cm, b->decodes, dec_k, &slope);
	p->attention_s = cm->layers * attn;
	if (cm->prof) {
		/* Measured layers (all operators but attention, per GPU of the
		 * tp group) plus the embedding. */
		double layer = prof_interp(cm->prof, PROF_LAYER, b->new_tokens);
		double emb = prof_interp(cm->prof, PROF_EMB, b->new_tokens);
		p->combined_s = cm->layers * layer + emb;
	} else {
		/* The linear layers: 2 FLOPs per active weight and token; the
		 * weights read once (of a MoE layer, the experts the batch
		 * touches). */
		p->compute_s = cm->flops_per_token * b->new_tokens / cm->flops_per_s;
		p->memory_s = cost_weight_read_bytes(cm, b->new_tokens) / cm->bytes_per_s;
		p->combined_s = smooth_max(p->compute_s, p->memory_s, cm->knee);
		int k = COST_KERNELS_PER_LAYER;
		if (cm->graph_max_tokens > 0 && b->new_tokens <= cm->graph_max_tokens)
			k = b->prefills == 0 && cm->graph_full_decode ? 0 : cm->graph_eager_kernels;
		p->kernels_s = (double)cm->layers * k * cm->op_overhead_s;
	}
	if (d) /* along a span only attention grows: linear in the iteration */
		d[0] = cm->layers * slope, d[1] = 0;
	if (cm->tp > 1) {
		/* Ring all-reduce of the layer's activations, twice per layer. */
		double msg = cm->act_bytes_per_token * b->new_tokens;
		double one = cm->ar_beta_s_per_byte > 0
				 ? cm->ar_alpha_s + cm->ar_beta_s_per_byte * msg /* measured NCCL */
				 : cm->link_latency_s +
				       2.0 * (cm->tp - 1) / cm->tp * msg / cm->link_bytes_per_s;
		if (msg < cm->car_max_bytes) {
			/* vLLM's custom all-reduce (one-shot, two-shot by size);
			 * above about 1 MiB, beyond its measurements, NCCL's line
			 * is the faster */
			double car = cm->car_alpha_s + cm->car_beta_s_per_byte * msg;
			one = car < one ? car : one;
		}
		p->comm_s = 2.0 * cm->layers * one;
	}
	double cpu = cm->overhead_s + cm->per_seq_s * (b->decodes + b->prefills);
	p->kernels_s += cm->step_s;
	double gpu = p->combined_s + p->kernels_s + p->attention_s + p->comm_s;
	p->overhead_s = cpu;
	if (cm->async_cpu) {
		/* the next step is scheduled while this one runs: the step waits
		 * for the CPU only where it takes longer than the GPU */
		p->overhead_s = cpu > gpu ? cpu - gpu : 0;
		if (d && cpu > gpu)
			d[0] = 0;
	}
	p->total_s = gpu + p->overhead_s;
}

void cost_parts(const struct cost_model *cm, const struct cost_batch *b, struct cost_parts *p)
{
	parts_d(cm, b, p, NULL);
}

static double compute_s(const struct cost_model *cm, const struct cost_batch *b)
{
	struct cost_parts p;
	cost_parts(cm, b, &p);
	return p.combined_s + p.attention_s + p.comm_s; /* the fixed per-iteration costs excluded */
}

double cost_iteration_s(const struct cost_model *cm, const struct cost_batch *b)
{
	if (cm->fixed)
		return cm->base_s + cm->per_token_s * b->new_tokens;
	struct cost_parts p;
	cost_parts(cm, b, &p);
	return p.total_s;
}

/* Nanoseconds x rounded to the nearest integer, at least 1: monotone in x. */
static int64_t ns_of(double x)
{
	/* floor(y) by truncation, y >= 1 (floor itself is a long sequence on
	 * baseline x86-64); clamped where the conversion would overflow */
	double y = x + 0.5;
	if (!(y >= 1))
		return 1;
	return y < 9e18 ? (int64_t)y : INT64_MAX;
}

int64_t cost_iteration_ns(const struct cost_model *cm, const struct cost_batch *b)
{
	return ns_of(cost_iteration_s(cm, b) * 1e9);
}

int64_t cost_iteration_ns_x(const struct cost_model *cm, const struct cost_batch *b,
			    struct cost_x *x)
{
	struct cost_parts p;
	double d[2];
	parts_d(cm, b, &p, d);
	x->x = p.total_s * 1e9;
	x->slope = d[0] * 1e9;
	x->curv = d[1] * 1e9;
	return ns_of(x->x);
}

uint32_t cost_span_grid(const struct cost_x *x)
{
	/* Per iteration: an evaluation every G iterations, and one for an
	 * iteration near a rounding boundary, which is about as likely as
	 * the bounds' gap (~x'' G^2 / 4 ns) is wide; evaluating costs ~13x a
	 * settled iteration, so the total is least near G^3 x'' = 1.7. The
	 * bounds run closer than that estimate: 4 was the best threshold
	 * measured on chat and Mooncake runs (0.5 to 20 all within 1% in
	 * instructions). Any G gives the same times; only speed varies. */
	uint32_t G = COST_SPAN_GRID_MAX;
	while (G > COST_SPAN_GRID_MIN && !((double)G * G * G * x->curv <= 4))
		G /= 2;
	return G;
}

/* Iteration j of a decode span, in ns before rounding. */
static double span_x(const struct cost_model *cm, const struct cost_batch *b0, uint32_t j)
{
	struct cost_batch b = *b0;
	double d = b0->decodes;
	b.attn_pairs = b0->attn_pairs + j * d;
	b.kv_tokens = b0->kv_tokens + j * d;
	return cost_iteration_s(cm, &b) * 1e9;
}

/* Along a decode span the iteration time x(j) is convex in j: the decodes'
 * attention (the calibrated model's) is linear in j and the other terms
 * are constant (a measured attention table, piecewise linear, may bend
 * either way: such spans are evaluated iteration by iteration). So
 * with x known exactly at grid points G apart, on each grid interval the
 * chord bounds x from above and the neighbouring intervals' chords,
 * extended, bound it from below. Where both bounds (widened by a margin far
 * above the evaluation's rounding error) round to the same nanosecond, that
 * is the iteration's value; elsewhere (rare: the bounds are ~1e-3 ns apart)
 * the iteration is evaluated. Exact, not approximate: the same integers as
 * cost_iteration_ns of each iteration (a test compares).
 *
 * The grid is anchored at the span's first iteration (g_i = i G) and kept
 * by the caller, so a span evaluated in chunks evaluates each grid point
 * once: one evaluation per G iterations, the end of the last interval
 * (x(j) past the span's end is the same formula, still convex), and 2G for
 * the first interval's lower bound unless the caller knows x's slope at 0.
 * An interval's lower bound is the left neighbour's chord extended, and
 * the right one's where the grid already has it; the first interval's is
 * the tangent at 0 (a convex function lies above its tangents) where the
 * slope is known, and the right neighbour's chord where the grid has it:
 * a span cut inside its first interval then needs one evaluation, not two.
 * The spacing G is the caller's (cost_span_grid). Most iterations are
 * settled by one rounding: the chord minus the interval's largest gap to
 * the lower bound still rounds as the chord does; only near a rounding
 * boundary are the iteration's own bounds computed. */
/* A grid interval of cost_span_ns: its ends x0, x1 (chord slope s0), the
 * neighbouring chords' slopes where known, the slack, the grid spacing. */
struct span_iv {
	double x0, x1, s0, sl, sr, slack;
	uint32_t G;
	int left, right;
};

/* Iteration j (offset k in its interval) near a rounding boundary, or
 * outside the fast path's range: its own bounds, else its evaluation. */
static int64_t __attribute__((noinline))
near_boundary(const struct cost_model *cm, const struct cost_batch *b0, const struct span_iv *iv,
	      uint32_t j, uint32_t k, uint32_t *evals)
{
	double up = iv->x0 + iv->s0 * k;
	double lo = iv->right ? iv->x1 - iv->sr * (double)(iv->G - k) : -INFINITY;
	if (iv->left && iv->x0 + iv->sl * k > lo)
		lo = iv->x0 + iv->sl * k;
	int64_t lo_ns = ns_of(lo - iv->slack), up_ns = ns_of(up + iv->slack);
	if (lo_ns == up_ns)
		return up_ns;
	++*evals;
	return ns_of(span_x(cm, b0, j));
}

uint32_t cost_span_ns(const struct cost_model *cm, const struct cost_batch *b0, uint32_t from,
		      uint32_t to, struct cost_span *sp, int64_t *out)
{
	if (to <= from)
		return 0;
	const uint32_t G = sp->G;
	double *grid = sp->grid, slope0 = sp->slope0;
	uint32_t *n_grid = &sp->n_grid;
	/* The grid points needed: each interval's ends, and for the first
	 * interval (no left neighbour) without the tangent the point after it,
	 * for a lower bound. */
	int tangent = slope0 == slope0; /* not NaN */
	uint32_t evals = 0, last = (to - 1) / G + 1;
	if (from < G && last < 2 && !tangent)
		last = 2;
	/* measured attention tables are piecewise linear: maybe not convex */
	int convex = cm->fixed || ((cm->knee == 0 || cm->knee >= 1) && !cm->attn_table);
	if (!convex || (*n_grid <= last && to - from <= last + 1 - *n_grid)) {
		/* no grid, or one that would cost as much as the iterations */
		for (uint32_t j = from; j < to; j++)
			out[j - from] = ns_of(span_x(cm, b0, j));
		return to - from;
	}
	for (; *n_grid <= last; ++*n_grid, evals++)
		grid[*n_grid] = span_x(cm, b0, *n_grid * G);
	for (uint32_t j = from; j < to;) {
		uint32_t i = j / G, k = j % G;
		double x0 = grid[i], x1 = grid[i + 1];
		double s0 = (x1 - x0) / G;
		/* Lower bounds: the left neighbour's chord extended (slope sl), and
		 * the right neighbour's (slope sr) where the grid has it already.
		 * gap: how far below the chord the higher of them can lie on this
		 * interval. At offset k the left one is (s0 - sl) k below it and
		 * the right one (sr - s0) (G - k), so the gap is at most the
		 * crossing of those lines, ab G / (a + b), or with one of them its
		 * value at the interval's far end. */
		int left = i > 0 || tangent, right = i + 2 < *n_grid;
		double sl = i > 0 ? (x0 - grid[i - 1]) / G : tangent ? slope0 : 0;
		double sr = right ? (grid[i + 2] - x1) / G : 0;
		double a = s0 - sl > 0 ? s0 - sl : 0, b = sr - s0 > 0 ? sr - s0 : 0, gap;
		if (left && right)
			gap = a + b > 0 ? a * b * G / (a + b) : 0;
		else /* (neither: no bound, every iteration evaluated) */
			gap = left ? a * (G - 1) : right ? b * (G - 1) : INFINITY;
		double slack = 4e-12 * fabs(x1) + 1e-6, w = gap + 2 * slack;
		if (k == 0) {
			out[j++ - from] = ns_of(x0);
			k = 1;
		}
		uint32_t end = to - j < G - k ? j + (to - j) : j + (G - k);
		/* x + 0.5 lies in [r - w, r] with r = x0 + slack + 0.5 + s0 k: one
		 * integer part for the whole window is the iteration's nanoseconds.
		 * Truncation is floor while r stays in [1, 9e18) (x0, x1 bound it). */
		int fast = x0 >= 1 && x1 >= 1 && x0 < 1e18 && x1 < 1e18;
		double base = (x0 + slack) + 0.5;
		const struct span_iv iv = {x0, x1, s0, sl, sr, slack, G, left, right};
		if (fast) {
			for (; j < end; k++, j++) {
				double r = base + s0 * k;
				int64_t n = (int64_t)r;
				out[j - from] = r - (double)n >= w ? n : near_boundary(cm, b0, &iv, j, k, &evals);
			}
		}
		for (; j < end; k++, j++)
			out[j - from] = near_boundary(cm, b0, &iv, j, k, &evals);
	}
	return evals;
}

double cost_prefill_s(const struct cost_model *cm, double n, double c)
{
	struct cost_batch b;
	cost_batch_clear(&b);
	cost_add_prefill(&b, n, c);
	if (cm->fixed)
		return cm->per_token_s * n;
	return compute_s(cm, &b);
}
