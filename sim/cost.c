/* cost: roofline and fixed iteration-time models (DESIGN 3). */
#include "sim/cost.h"

#include <math.h>

#include "sim/config.h"

void cost_init(struct cost_model *cm, const struct cluster_cfg *cl, double weight_bytes)
{
	const struct cat_model *m = cl->model;
	const struct cat_gpu *g = cl->gpu;
	cm->fixed = cl->cost.kind == COST_FIXED;
	cm->base_s = cl->cost.base_ms * 1e-3;
	cm->per_token_s = cl->cost.per_token_ms * 1e-3;
	cm->flops_per_token = 2.0 * m->active_params;
	cm->attn_flops_per_pair = 4.0 * m->layers * m->q_heads * m->head_dim;
	cm->weight_bytes = weight_bytes;
	cm->kv_bytes_per_token = m->kv_bytes_per_token;
	double peak = cl->dtype == DTYPE_FP8 ? g->fp8_flops : g->bf16_flops;
	cm->flops_per_s = cl->tp * peak * cl->cost.mfu;
	cm->bytes_per_s = cl->tp * g->hbm_bytes_per_s * cl->cost.mbu;
	cm->overhead_s = cl->cost.overhead_ms * 1e-3;
	cm->tp = cl->tp;
	cm->layers = m->layers;
	cm->act_bytes_per_token = 2.0 * m->hidden;
	cm->link_bytes_per_s = cl->intra_server->bytes_per_s;
	cm->link_latency_s = cl->intra_server->latency_s;
}

void cost_add_prefill(struct cost_batch *b, double n, double c)
{
	b->new_tokens += n;
	b->attn_pairs += n * (c + n / 2.0);
	b->kv_tokens += c + n;
	b->prefills++;
}

void cost_add_decode(struct cost_batch *b, double k)
{
	b->new_tokens += 1;
	b->attn_pairs += k;
	b->kv_tokens += k;
	b->decodes++;
}

static double compute_s(const struct cost_model *cm, const struct cost_batch *b)
{
	double flops = cm->flops_per_token * b->new_tokens + cm->attn_flops_per_pair * b->attn_pairs;
	double bytes = cm->weight_bytes + cm->kv_bytes_per_token * b->kv_tokens;
	double t = fmax(flops / cm->flops_per_s, bytes / cm->bytes_per_s);
	if (cm->tp > 1) {
		/* Ring all-reduce of the layer's activations, twice per layer. */
		double msg = cm->act_bytes_per_token * b->new_tokens;
		double one = cm->link_latency_s +
			     2.0 * (cm->tp - 1) / cm->tp * msg / cm->link_bytes_per_s;
		t += 2.0 * cm->layers * one;
	}
	return t;
}

double cost_iteration_s(const struct cost_model *cm, const struct cost_batch *b)
{
	if (cm->fixed)
		return cm->base_s + cm->per_token_s * b->new_tokens;
	return compute_s(cm, b) + cm->overhead_s;
}

int64_t cost_iteration_ns(const struct cost_model *cm, const struct cost_batch *b)
{
	double ns = floor(cost_iteration_s(cm, b) * 1e9 + 0.5);
	return ns < 1 ? 1 : (int64_t)ns;
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
