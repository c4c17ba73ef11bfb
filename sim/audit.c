/* audit: --audit's invariant checks after each event (KV, capacity, tokens, the ledger). */
#include "sim/audit.h"

#include <stdarg.h>
#include <stdio.h>

#include "sim/sim_int.h"

void audit_fail(struct sim *s, const char *fmt, ...)
{
	char what[600], msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof msg, "audit: at t=%.9f s: %s", (double)s->now * 1e-9, what);
	sim_fail_with(s, 3, msg);
}

static int audit_request(struct sim *s, const struct request *r)
{
	if (r->accounted && (uint64_t)r->cached + r->reloaded + r->migrated + r->recomputed +
				    r->fresh != r->prompt_tokens) {
		audit_fail(s, "request %llu: prompt split %u+%u+%u+%u+%u != %u tokens",
			   (unsigned long long)r->id, r->cached, r->reloaded, r->migrated,
			   r->recomputed, r->fresh, r->prompt_tokens);
		return -1;
	}
	if (r->preempt_recomputed != r->ep_recomputed + req_episode_recomputed(r)) {
		audit_fail(s, "request %llu: %u tokens counted recomputed after preemption, but its "
			      "admissions recomputed %u below their high water",
			   (unsigned long long)r->id, r->preempt_recomputed,
			   r->ep_recomputed + req_episode_recomputed(r));
		return -1;
	}
	if (r->num_computed > r->num_tokens || r->generated > r->output_tokens ||
	    r->num_tokens != r->prompt_tokens + r->generated) {
		audit_fail(s, "request %llu: computed %u, known %u, generated %u of %u (prompt %u)",
			   (unsigned long long)r->id, r->num_computed, r->num_tokens, r->generated,
			   r->output_tokens, r->prompt_tokens);
		return -1;
	}
	return 0;
}

/* The routers' own record of node i (views.c) against the requests on it:
 * for each router whose requests there are all in its queue or running
 * (none on the way, swapped out or moving KV), its prompt blocks are
 * theirs, and its prefill tokens as of now those of the ones without a
 * first token. Read only where the node's first tokens so far are applied
 * (idle, or its step's first iteration ended and applied, or not ended). */
static void audit_router_record(struct sim *s, uint32_t i)
{
	const struct node *n = &s->nodes[i];
	if (n->busy && n->span_ended == 0 && s->now >= n->span_end[0])
		return;
	for (uint32_t k = 0; k < s->vw.n_replicas; k++) {
		const struct pol_node_view *v = &s->vw.views[k][i];
		uint64_t blocks = 0, prefill = 0;
		uint32_t here = 0;
		for (const struct request *r = n->wait_head; r; r = r->qnext)
			if (r->replica == k) {
				here++;
				blocks += r->rt_blocks;
				prefill += r->generated ? 0 : r->rt_prefill;
			}
		for (uint32_t j = 0; j < n->n_running; j++) {
			const struct request *r = n->running[j];
			if (r->replica == k) {
				here++;
				blocks += r->rt_blocks;
				prefill += r->generated ? 0 : r->rt_prefill;
			}
		}
		if (here != v->outstanding)
			continue;
		uint64_t counted = v->prefill_tokens -
				   (s->now >= v->prefill_done_ns ? v->prefill_done_tokens : 0);
		if (blocks != v->active_blocks || prefill != counted) {
			audit_fail(s,
				   "node %u: router %u counts %llu prompt blocks and %llu tokens to "
				   "prefill, its %u requests there hold %llu and have %llu",
				   i, k, (unsigned long long)v->active_blocks,
				   (unsigned long long)counted, here, (unsigned long long)blocks,
				   (unsigned long long)prefill);
			return;
		}
	}
}

/* A node's invariants: its KV tree and counters; blocks in use equal the
 * locked cached blocks plus the running requests' own; each request where
 * its state says. O(runs + requests on the node). */
static void audit_node(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	uint64_t locked = 0, own = 0;
	uint32_t open = 0;
	const char *why = NULL;
	if (kv_audit(&n->kv, &locked, &why)) {
		audit_fail(s, "node %u: KV cache: %s", i, why);
		return;
	}
	uint32_t waiting = 0, held = 0;
	for (const struct request *r = n->wait_head; r; r = r->qnext) {
		waiting++;
		held += r->n_blocks != 0;
		/* a hand-over's KV came with it (node_reserve): its blocks are held */
		if (r->state != REQ_WAITING || r->node != (int32_t)i ||
		    (r->n_blocks != 0 && r->pd != PD_DECODE) || r->n_own > r->n_blocks) {
			audit_fail(s, "node %u: waiting request %llu has state %d, node %d, %u blocks", i,
				   (unsigned long long)r->id, r->state, r->node, r->n_blocks);
			return;
		}
		if (audit_request(s, r))
			return;
		own += r->n_own;
	}
	if (waiting != n->n_waiting || held != n->n_held) {
		audit_fail(s, "node %u: %u requests in the waiting queue (%u holding KV), counted "
			      "%u (%u)",
			   i, waiting, held, n->n_waiting, n->n_held);
		return;
	}
	if (n->n_running > n->max_seqs) {
		audit_fail(s, "node %u: %u running > max_num_seqs %u", i, n->n_running, n->max_seqs);
		return;
	}
	for (uint32_t k = 0; k < n->n_running; k++) {
		const struct request *r = n->running[k];
		if (r->state != REQ_RUNNING || r->node != (int32_t)i || r->n_own > r->n_blocks) {
			audit_fail(s, "node %u: running request %llu has state %d, node %d", i,
				   (unsigned long long)r->id, r->state, r->node);
			return;
		}
		if (audit_request(s, r))
			return;
		own += r->n_own;
		if (r->open_from != REQ_TAIL_SHUT) {
			open++;
			if (r->kv_tail == KV_NONE || !n->kv.runs[r->kv_tail].open) {
				audit_fail(s, "node %u: running request %llu holds blocks back, but "
					      "its tail run is not open",
					   i, (unsigned long long)r->id);
				return;
			}
		}
	}
	if (open != n->n_open) {
		audit_fail(s, "node %u: %u running requests with open tail runs, counted %u", i,
			   open, n->n_open);
		return;
	}
	own += s->pd.own[i]; /* held for hand-overs outside its queues (pd.c) */
	if (locked + own != n->kv.n_used) {
		audit_fail(s, "node %u: %llu blocks in use, but locked cached blocks (%llu) + its "
			      "requests' own blocks (%llu) = %llu",
			   i, (unsigned long long)n->kv.n_used, (unsigned long long)locked,
			   (unsigned long long)own, (unsigned long long)(locked + own));
		return;
	}
	if (n->kv.n_used > n->kv.n_blocks) {
		audit_fail(s, "node %u: %u blocks in use > capacity %u", i, n->kv.n_used,
			   n->kv.n_blocks);
		return;
	}
	audit_router_record(s, i);
}

/* Node slots under autoscaling: one not held, or still starting, holds
 * no request and no KV and takes no work; the count of held slots and
 * their records agree. */
static void audit_slots(struct sim *s)
{
	uint32_t held = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		const struct node *n = &s->nodes[i];
		uint8_t st = s->sl.nstate[i];
		held += s->sl.held_from[i] >= 0;
		if ((s->sl.held_from[i] >= 0) != (st != NS_OFF)) {
			audit_fail(s, "node %u: held since %lld in state %u", i,
				   (long long)s->sl.held_from[i], st);
			return;
		}
		if (st != NS_OFF && st != NS_STARTING)
			continue;
		if (s->alive[i] || n->busy || n->n_running || n->n_waiting || n->kv.n_used ||
		    s->eng.swq_head[i] || s->pd.own[i]) {
			audit_fail(s, "node %u: %s, yet it takes work or holds some (%u running, "
				      "%u waiting, %u blocks in use)",
				   i, st == NS_OFF ? "not held" : "starting", n->n_running,
				   n->n_waiting, n->kv.n_used);
			return;
		}
	}
	if (held != s->sl.n_held)
		audit_fail(s, "%u nodes held, the count says %u", held, s->sl.n_held);
}

/* A draining node that holds nothing is released at once, whichever way
 * its last request left. */
static void audit_draining(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_nodes && !s->error; i++)
		if (sim_drained(s, i))
			audit_fail(s, "node %u: draining and empty, yet still held", i);
}

void audit_event(struct sim *s, const struct event *ev)
{
	unsigned flags = s->ev_kinds[ev->kind].flags;
	if (s->as && (flags & EVK_SLOTS))
		audit_slots(s);
	if (s->sl.n_draining)
		audit_draining(s);
	if (ev->kind == EV_STEP)
		audit_node(s, (uint32_t)ev->node);
	else if (!(flags & EVK_READS_ONLY))
		for (uint32_t i = 0; i < s->n_nodes && !s->error; i++)
			if (s->nodes[i].busy || s->nodes[i].n_waiting)
				audit_node(s, i);
}

void audit_private(struct sim *s, uint32_t node, const struct request *r, uint32_t hit)
{
	const int32_t *nodes;
	int n = session_nodes(s, r, &nodes);
	if (n < 0 || hit <= r->n_shared)
		return;
	for (int k = 0; k < n; k++)
		if (nodes[k] == (int32_t)node)
			return;
	audit_fail(s, "request %llu finds %u blocks cached on node %u, past its %u shared ones, "
		      "but its session never ran there",
		   (unsigned long long)r->id, hit, node, r->n_shared);
}

void audit_frontier(struct sim *s, const struct request *r, struct session_rec was, uint32_t from,
		    uint32_t to)
{
	for (uint32_t b = from; b < to; b++)
		if (!session_computed_before(&was, r, b)) {
			was.frontier_len = b + 1;
			was.frontier_hash = r->hashes[b];
		}
	const struct session_rec *now = r->session_rec;
	if (now->frontier_len != was.frontier_len || now->frontier_hash != was.frontier_hash)
		audit_fail(s, "session frontier %u after blocks [%u, %u) of request %llu, block by "
			      "block %u",
			   now->frontier_len, from, to, (unsigned long long)r->id, was.frontier_len);
}
