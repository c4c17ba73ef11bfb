/* node_stats: a step's time-weighted figures (blocks in use, GPU work,
 * busy time), from the iteration ends of its decode span. */
#include <string.h>

#include "model/cost.h"
#include "model/node.h"

void node_span_used(struct node *n)
{
	if (n->span_used_ok)
		return;
	n->span_used_ok = 1;
	/* a request takes a new block at iteration j when the token it
	 * writes, c0 + j, starts one */
	uint32_t B = n->block_tokens, k = n->span_len;
	for (uint32_t j = 1; j < k; j++)
		n->span_used[j] = 0;
	for (uint32_t i = 0; i < n->n_batch; i++) {
		/* the first j > 0 with c0 + j a multiple of B */
		uint32_t c0 = n->batch[i].c0, j = (node_full_blocks(n, c0) + 1) * B - c0;
		for (; j < k; j += B)
			n->span_used[j]++;
	}
	for (uint32_t j = 1; j < k; j++)
		n->span_used[j] += n->span_used[j - 1];
}

/* Statistics of the step's iterations 0..last (ended): the used-block
 * integral term by term, in order (a double sum); busy time telescopes;
 * blocks in use only grow along a span, so its last iteration's are its
 * peak. */
void node_step_stats(struct node *n, uint32_t last)
{
	int64_t start = n->step_start_ns;
	double kv = n->kv_used_block_ns;
	uint32_t used = n->span_used[0], B = n->block_tokens;
	/* Utilisation: each iteration's work (node_iteration_work_ns), capped
	 * at its time. */
	double t = (double)(n->span_end[0] - start), w = n->work0_ns;
	double util = n->util_ns + (w < t ? w : t);
	const struct cost_batch *sb = &n->span_cb;
	double base = n->span_work_base_ns, dec = sb->decodes;
	uint32_t off = n->span_off;
	if (!n->span_used_ok && n->block_shift && B <= 64) {
		/* span_used on the fly: iteration j takes one block for each
		 * request with c0 + j a multiple of B, i.e. c0 = -j (mod B) */
		uint32_t starts[64];
		memset(starts, 0, B * sizeof *starts);
		for (uint32_t i = 0; i < n->n_batch; i++)
			starts[n->batch[i].c0 & (B - 1)]++;
		kv += (double)used * t;
		/* iteration j's growth (j - off) x decodes, by exact integer steps */
		double d = -(double)off * dec;
		for (uint32_t j = 1; j <= last; j++) {
			used += starts[(0 - j) & (B - 1)];
			t = (double)(n->span_end[j] - n->span_end[j - 1]);
			kv += (double)used * t;
			d += dec;
			w = cost_work_plus_ns(n->cost, sb, base, d);
			util += w < t ? w : t;
		}
	} else {
		node_span_used(n);
		for (uint32_t j = 0; j <= last; j++) {
			t = (double)(n->span_end[j] - start);
			kv += (double)n->span_used[j] * t;
			start = n->span_end[j];
			if (j > 0) {
				w = cost_work_at_ns(n->cost, sb, base, (double)(j - off));
				util += w < t ? w : t;
			}
		}
		used = n->span_used[last];
	}
	n->kv_used_block_ns = kv;
	n->util_ns = util;
	n->busy_ns += n->span_end[last] - n->step_start_ns;
	if (used > n->peak_used)
		n->peak_used = used;
	n->iterations += last + 1;
}
