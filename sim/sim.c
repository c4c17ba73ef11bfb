/* sim: the event loop, the router's mechanisms and session bookkeeping. */
#define _GNU_SOURCE
#include "sim/sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "results/metrics.h"
#include "results/writer.h"
#include "sim/config.h"
#include "sim/cost.h"
#include "sim/evq.h"
#include "sim/hmap.h"
#include "sim/node.h"
#include "sim/request.h"
#include "sim/rng.h"
#include "workloads/trace.h"
#include "workloads/workload.h"

#include "version.h" /* generated: build/version.h */

const char *kvsim_version(void)
{
	return KVSIM_VERSION;
}

enum { EV_ARRIVAL, EV_TRANSFER_DONE, EV_STEP, EV_SAMPLE };
enum { STREAM_ROUTING = 101 };

/* What the simulator remembers of a live session: where it last ran (the
 * source of a migration) and how far its private blocks were ever computed.
 *
 * "Computed before" (DESIGN 6) needs a record of blocks ever computed. Blocks
 * other sessions can name (n_shared, e.g. system prompts, trace blocks) go in
 * the cluster-wide set `ever`. A session's private blocks can only be named
 * by its own turns, and a block's KV exists only after its whole prefix's
 * does, so one frontier per session records them exactly: blocks [0, len)
 * of the chain ending in hash `frontier_hash`. A turn whose chain still holds
 * that hash at len - 1 extends it; one whose history was truncated (a new
 * chain) starts a new frontier. O(1) memory per live session, nothing to
 * forget when it ends. */
struct session_rec {
	uint64_t id;
	int32_t last_node;
	uint32_t frontier_len;
	uint64_t frontier_hash;
	struct session_rec *free_next;
};

struct sim {
	const struct scenario *sc;
	const struct sim_opts *opts;
	struct evq q;
	int64_t now, end_arrivals_ns;
	struct cost_model cost;
	struct node *nodes;
	uint32_t n_nodes;
	struct pol_node_view *view;
	const struct pol_ops *pol;
	void *pol_st;
	int pol_reads_kv_util;
	gsl_rng *r_route;
	const struct wl_ops *wl;
	void *wl_st;
	struct hmap ever;     /* shared block hash -> 1: computed somewhere before */
	struct hmap sessions; /* session id -> struct session_rec * */
	struct session_rec *free_sessions;
	struct request *free_reqs;
	struct metrics met;
	uint64_t next_id, migrations;
	double migration_bytes, migration_s;
	FILE *ts;               /* timeseries.csv (temporary name), or NULL */
	FILE *te;               /* trace events (temporary name), or NULL */
	uint64_t te_count;      /* events written; capped at TE_MAX */
	int64_t sample_ns;      /* its interval */
	int error; /* 3 after an internal failure */
	char *err;
	size_t errlen;
};

#define TE_MAX 2000000

/* One trace event; ph "X" (complete, with dur) or "i" (instant). Times in
 * microseconds, as the format wants. args is a JSON object's inside. */
static void trace_event(struct sim *s, const char *name, char ph, int pid, int tid, int64_t t_ns,
			int64_t dur_ns, const char *args)
{
	if (!s->te || s->te_count >= TE_MAX)
		return;
	fprintf(s->te, "%s{\"name\":\"%s\",\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f",
		s->te_count++ ? ",\n" : "", name, ph, pid, tid, (double)t_ns * 1e-3);
	if (ph == 'X')
		fprintf(s->te, ",\"dur\":%.3f", (double)dur_ns * 1e-3);
	else
		fputs(",\"s\":\"t\"", s->te);
	fprintf(s->te, ",\"args\":{%s}}", args);
}

/* The iterations of node i's step that is ending now. */
static void trace_step(struct sim *s, uint32_t i)
{
	const struct node *n = &s->nodes[i];
	uint32_t prefills = 0;
	for (uint32_t k = 0; k < n->n_batch; k++)
		prefills += !(n->batch[k].n == 1 && n->batch[k].r->generated > 0);
	int64_t start = n->step_start_ns;
	for (uint32_t j = 0; j < n->span_len; j++) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"requests\":%u,\"prefills\":%u,\"kv_blocks_used\":%u,\"span\":%u",
			 n->n_batch, j == 0 ? prefills : 0, n->span_used[j], n->span_len);
		trace_event(s, j == 0 && prefills ? "prefill+decode" : "decode", 'X', 1, (int)i, start,
			    n->span_end[j] - start, args);
		start = n->span_end[j];
	}
}

static void fail_with(struct sim *s, int code, const char *what)
{
	if (!s->error) {
		snprintf(s->err, s->errlen, "%s", what);
		s->error = code;
	}
}

static void fail(struct sim *s, const char *what)
{
	fail_with(s, 3, what);
}

/* The workload returned -1: bad input (exit 2) or no memory (3). */
static void workload_failed(struct sim *s)
{
	const char *why = s->wl->error ? s->wl->error(s->wl_st) : NULL;
	if (why)
		fail_with(s, 2, why);
	else
		fail(s, "out of memory in the workload");
}

static struct request *req_get(struct sim *s)
{
	struct request *r = s->free_reqs;
	if (r) {
		s->free_reqs = r->pool_next;
	} else {
		r = calloc(1, sizeof *r);
		if (!r) {
			fail(s, "out of memory");
			return NULL;
		}
	}
	/* Keep the hash buffer, clear the rest. */
	uint64_t *h = r->hashes;
	uint32_t hc = r->hashes_cap;
	memset(r, 0, sizeof *r);
	r->hashes = h;
	r->hashes_cap = hc;
	r->kv_tail = KV_NONE;
	r->node = -1;
	r->sched_ns = -1;
	return r;
}

static void req_put(struct sim *s, struct request *r)
{
	r->pool_next = s->free_reqs;
	s->free_reqs = r;
}

static struct session_rec *session_get(struct sim *s, uint64_t id)
{
	uint64_t *v = hmap_get(&s->sessions, id);
	if (v)
		return (struct session_rec *)(uintptr_t)*v;
	struct session_rec *rec = s->free_sessions;
	if (rec) {
		s->free_sessions = rec->free_next;
	} else {
		rec = calloc(1, sizeof *rec);
		if (!rec) {
			fail(s, "out of memory");
			return NULL;
		}
	}
	rec->id = id;
	rec->last_node = -1;
	rec->frontier_len = 0;
	rec->frontier_hash = 0;
	if (hmap_put(&s->sessions, id, (uint64_t)(uintptr_t)rec) < 0) {
		fail(s, "out of memory");
		return NULL;
	}
	return rec;
}

static void session_end(struct sim *s, struct session_rec *rec)
{
	hmap_del(&s->sessions, rec->id);
	rec->free_next = s->free_sessions;
	s->free_sessions = rec;
}

static void refresh_view(struct sim *s, uint32_t i)
{
	const struct node *n = &s->nodes[i];
	struct pol_node_view *v = &s->view[i];
	v->queued = n->n_waiting;
	v->running = n->n_running;
	v->queued_tokens = n->waiting_tokens;
	v->kv_util = (double)n->kv.n_used / (double)n->kv.n_blocks;
}

static void schedule_step(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	n->step_seq = evq_push(&s->q, n->step_end_ns, EV_STEP, (int32_t)i, NULL);
	if (!n->step_seq)
		fail(s, "out of memory");
}

static void kick(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	if (!n->busy && node_start_step(n, s->now) > 0)
		schedule_step(s, i);
	refresh_view(s, i);
}

/* Enqueues r on node i; an arrival cuts a decode span short, which moves
 * the node's step-end event earlier. */
static void enqueue(struct sim *s, uint32_t i, struct request *r)
{
	struct node *n = &s->nodes[i];
	if (node_enqueue(n, r, s->now)) {
		if (evq_cancel(&s->q, n->step_seq))
			fail(s, "out of memory");
		schedule_step(s, i);
	}
	kick(s, i);
}

static void schedule_arrival(struct sim *s, struct request *r, int from_source)
{
	if (!evq_push(&s->q, r->arrival_ns, EV_ARRIVAL, from_source, r))
		fail(s, "out of memory");
}

/* Pulls the source's next open-loop arrival, unless past the horizon. */
static void pull_source(struct sim *s)
{
	struct request *r = req_get(s);
	if (!r)
		return;
	int got = s->wl->next(s->wl_st, r);
	if (got < 0)
		workload_failed(s);
	if (got == 1 && r->arrival_ns <= s->end_arrivals_ns)
		schedule_arrival(s, r, 1);
	else
		req_put(s, r);
}

static double recompute_cost_s(const struct sim *s, const struct request *r)
{
	uint32_t n = r->recomputed + r->preempt_recomputed;
	if (n == 0)
		return 0;
	return s->cost.tp * cost_prefill_s(&s->cost, n, r->cached + r->migrated);
}

/* A request has ended: record it, let the policy and the workload know, and
 * schedule the session's next turn, if any. */
static void finish(struct sim *s, struct request *r)
{
	if (met_record(&s->met, r, recompute_cost_s(s, r)))
		fail(s, "out of memory");
	if (s->opts->on_request)
		s->opts->on_request(s->opts->ctx, r);
	int completed = r->state == REQ_DONE, session_done = 1;
	if (s->wl->follow_up) {
		struct request *next = req_get(s);
		if (!next)
			return;
		int got = s->wl->follow_up(s->wl_st, r, completed, s->now, next);
		if (got < 0)
			workload_failed(s);
		if (got == 1 && next->arrival_ns <= s->end_arrivals_ns) {
			schedule_arrival(s, next, 0);
			session_done = 0;
		} else {
			req_put(s, next);
		}
	}
	if (s->pol->on_complete)
		s->pol->on_complete(s->pol_st, r, completed ? r->node : -1, session_done);
	if (session_done && r->session_rec)
		session_end(s, r->session_rec);
	req_put(s, r);
}

static void reject(struct sim *s, struct request *r, enum req_state st, const char *reason)
{
	r->state = st;
	r->reason = reason;
	finish(s, r);
}

/* Decides whether to bring the session's KV from the node it last ran on.
 * Returns 1 if a transfer was started (the request waits for it). */
static int maybe_migrate(struct sim *s, struct request *r, uint32_t dst, enum pol_kv kv)
{
	struct session_rec *rec = r->session_rec;
	const struct scenario *sc = s->sc;
	if (!rec || rec->last_node < 0 || (uint32_t)rec->last_node == dst ||
	    !sc->cluster.engine.prefix_caching)
		return 0;
	uint32_t B = (uint32_t)sc->cluster.engine.kv_block_tokens;
	uint32_t full = r->prompt_tokens / B;
	if (full > r->n_hashes)
		full = r->n_hashes;
	const struct node *src = &s->nodes[rec->last_node];
	struct kv_match m_dst, m_src;
	node_sync(&s->nodes[dst], s->now);
	node_sync(&s->nodes[rec->last_node], s->now);
	kv_lookup_prefix(&s->nodes[dst].kv, r->hashes, full, &m_dst);
	kv_lookup_prefix(&src->kv, r->hashes, full, &m_src);
	uint32_t have = m_dst.blocks, there = m_src.blocks;
	if (there <= have)
		return 0;
	double tokens = (double)(there - have) * B;
	double bytes = tokens * sc->cluster.model->kv_bytes_per_token;
	const struct cat_link *link = src->server == s->nodes[dst].server ? sc->cluster.intra_server
									   : sc->cluster.inter_server;
	double t_xfer = link->latency_s + bytes / link->bytes_per_s;
	double t_recompute = cost_prefill_s(&s->cost, tokens, (double)have * B);
	enum migration_mode mode = kv == POL_KV_TRANSFER	    ? MIG_TRANSFER
				   : kv == POL_KV_RECOMPUTE ? MIG_RECOMPUTE
							     : sc->router.migration;
	if (mode == MIG_RECOMPUTE || (mode == MIG_AUTO && t_xfer >= t_recompute))
		return 0;
	r->mig_lo = have;
	r->mig_hi = there;
	r->state = REQ_TRANSFER;
	r->node = (int32_t)dst;
	s->migrations++;
	s->migration_bytes += bytes;
	s->migration_s += t_xfer;
	int64_t t_ns = (int64_t)llround(t_xfer * 1e9);
	if (s->te) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"from\":%d,\"to\":%u,\"bytes\":%.0f,\"link\":\"%s\"",
			 (unsigned long long)r->id, rec->last_node, dst, bytes, link->name);
		trace_event(s, "kv transfer", 'X', 2, (int)dst, s->now, t_ns > 0 ? t_ns : 1, args);
	}
	if (!evq_push(&s->q, s->now + (t_ns > 0 ? t_ns : 1), EV_TRANSFER_DONE, (int32_t)dst, r))
		fail(s, "out of memory");
	return 1;
}

static void on_arrival(struct sim *s, struct request *r, int from_source)
{
	r->id = ++s->next_id;
	s->met.arrived++;
	if (from_source)
		pull_source(s);
	r->session_rec = session_get(s, r->session);
	if (!r->session_rec)
		return;
	if (s->pol_reads_kv_util) {
		/* KV use grows inside decode spans; bring every node up to now. */
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			node_sync(&s->nodes[i], s->now);
			refresh_view(s, i);
		}
	}
	struct pol_view v = {s->n_nodes, s->view, s->now};
	struct pol_decision d = {POL_SHED, -1, POL_KV_DEFAULT, "no_decision"};
	s->pol->route(s->pol_st, &v, r, &d);
	if (s->te) {
		char args[200];
		snprintf(args, sizeof args,
			 "\"request\":%llu,\"session\":%llu,\"turn\":%u,\"node\":%d,\"decision\":\"%s\"",
			 (unsigned long long)r->id, (unsigned long long)r->session, r->turn, d.node,
			 d.action == POL_SHED ? (d.reason ? d.reason : "shed") : "route");
		trace_event(s, "route", 'i', 0, 0, s->now, 0, args);
	}
	if (d.action == POL_SHED || d.node < 0 || (uint32_t)d.node >= s->n_nodes) {
		reject(s, r, REQ_SHED, d.reason ? d.reason : "policy");
		return;
	}
	uint32_t dst = (uint32_t)d.node;
	struct node *n = &s->nodes[dst];
	if (n->n_waiting >= (uint32_t)s->sc->router.max_queue_per_node) {
		reject(s, r, REQ_SHED, "queue_full");
		return;
	}
	r->node = (int32_t)dst;
	if ((uint64_t)r->prompt_tokens + r->output_tokens > (uint64_t)s->sc->cluster.model->max_context) {
		reject(s, r, REQ_FAILED, "exceeds_context");
		return;
	}
	if (node_blocks_for(n, (uint64_t)r->prompt_tokens + r->output_tokens) > n->kv.n_blocks) {
		reject(s, r, REQ_FAILED, "exceeds_kv_capacity");
		return;
	}
	r->num_tokens = r->prompt_tokens;
	if (s->pol->on_dispatch)
		s->pol->on_dispatch(s->pol_st, r, d.node);
	s->view[dst].outstanding++;
	int moving = maybe_migrate(s, r, dst, d.kv);
	((struct session_rec *)r->session_rec)->last_node = (int32_t)dst;
	if (moving)
		return;
	enqueue(s, dst, r);
}

static void on_transfer_done(struct sim *s, struct request *r, uint32_t dst)
{
	struct node *n = &s->nodes[dst];
	/* Blocks that found no room (or whose prefix was evicted meanwhile)
	 * will be computed. */
	node_sync(n, s->now);
	uint32_t upto = kv_install(&n->kv, r->hashes, r->mig_lo, r->mig_hi);
	if (upto < r->mig_hi)
		r->mig_hi = upto > r->mig_lo ? upto : r->mig_lo;
	enqueue(s, dst, r);
}

/* node hooks */
static void hook_done(void *ctx, struct request *r, int64_t now_ns)
{
	struct sim *s = ctx;
	(void)now_ns;
	s->view[r->node].outstanding--;
	finish(s, r);
}

static int private_before(const struct session_rec *rec, const struct request *r, uint32_t idx)
{
	uint32_t len = rec->frontier_len;
	return idx < len && len <= r->n_hashes && r->hashes[len - 1] == rec->frontier_hash;
}

static int hook_before(void *ctx, const struct request *r, uint32_t idx)
{
	struct sim *s = ctx;
	if (idx < r->n_shared)
		return hmap_get(&s->ever, r->hashes[idx]) != NULL;
	return private_before(r->session_rec, r, idx);
}

static void hook_block(void *ctx, struct request *r, uint32_t idx)
{
	struct sim *s = ctx;
	if (idx < r->n_shared) {
		if (hmap_put(&s->ever, r->hashes[idx], 1) < 0)
			fail(s, "out of memory");
		return;
	}
	struct session_rec *rec = r->session_rec;
	if (!private_before(rec, r, idx)) {
		rec->frontier_len = idx + 1;
		rec->frontier_hash = r->hashes[idx];
	}
}

/* One timeseries row per node. Nodes inside a decode span are brought up
 * to now first (exact, so sampling never changes results). */
static void sample(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		node_sync(n, s->now);
		fprintf(s->ts, "%.6f,%u,%.6f,%u,%u,,0\n", (double)s->now * 1e-9, i,
			(double)n->kv.n_used / (double)n->kv.n_blocks, n->n_running, n->n_waiting);
	}
	/* Keep sampling while anything else is pending. */
	if (evq_size(&s->q) > 0 && !evq_push(&s->q, s->now + s->sample_ns, EV_SAMPLE, -1, NULL))
		fail(s, "out of memory");
}

static void audit_fail(struct sim *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void audit_fail(struct sim *s, const char *fmt, ...)
{
	char what[600], msg[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(msg, sizeof msg, "audit: at t=%.9f s: %s", (double)s->now * 1e-9, what);
	fail_with(s, 3, msg);
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
	if (r->num_computed > r->num_tokens || r->generated > r->output_tokens ||
	    r->num_tokens != r->prompt_tokens + r->generated) {
		audit_fail(s, "request %llu: computed %u, known %u, generated %u of %u (prompt %u)",
			   (unsigned long long)r->id, r->num_computed, r->num_tokens, r->generated,
			   r->output_tokens, r->prompt_tokens);
		return -1;
	}
	return 0;
}

/* A node's invariants: its KV tree and counters; blocks in use equal the
 * locked cached blocks plus the running requests' own; each request where
 * its state says. O(runs + requests on the node). */
static void audit_node(struct sim *s, uint32_t i)
{
	struct node *n = &s->nodes[i];
	uint64_t locked = 0, own = 0;
	const char *why = NULL;
	if (kv_audit(&n->kv, &locked, &why)) {
		audit_fail(s, "node %u: KV cache: %s", i, why);
		return;
	}
	uint32_t waiting = 0;
	for (const struct request *r = n->wait_head; r; r = r->qnext) {
		waiting++;
		if (r->state != REQ_WAITING || r->node != (int32_t)i || r->n_blocks != 0) {
			audit_fail(s, "node %u: waiting request %llu has state %d, node %d, %u blocks", i,
				   (unsigned long long)r->id, r->state, r->node, r->n_blocks);
			return;
		}
		if (audit_request(s, r))
			return;
	}
	if (waiting != n->n_waiting) {
		audit_fail(s, "node %u: %u requests in the waiting queue, counted %u", i, waiting,
			   n->n_waiting);
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
	}
	if (locked + own != n->kv.n_used) {
		audit_fail(s, "node %u: %llu blocks in use, but locked cached blocks (%llu) + running "
			      "requests' own blocks (%llu) = %llu",
			   i, (unsigned long long)n->kv.n_used, (unsigned long long)locked,
			   (unsigned long long)own, (unsigned long long)(locked + own));
		return;
	}
	if (n->kv.n_used > n->kv.n_blocks)
		audit_fail(s, "node %u: %u blocks in use > capacity %u", i, n->kv.n_used,
			   n->kv.n_blocks);
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(const struct sim *s, double started)
{
	double wall = wall_now() - started;
	uint64_t done = s->met.completed + s->met.shed + s->met.failed;
	fprintf(stderr,
		"\r  simulated %9.1f s | %10llu arrived | %10llu done | %8.0f req/s | %6.1f s wall",
		(double)s->now * 1e-9, (unsigned long long)s->met.arrived, (unsigned long long)done,
		wall > 0 ? (double)done / wall : 0.0, wall);
	fflush(stderr);
}

static void teardown(struct sim *s)
{
	/* After an error, requests may still sit in nodes: hand them back. */
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++) {
		struct node *n = &s->nodes[i];
		for (struct request *r = n->wait_head, *next; r; r = next) {
			next = r->qnext;
			req_put(s, r);
		}
		for (uint32_t k = 0; n->running && k < n->n_running; k++)
			req_put(s, n->running[k]);
		n->wait_head = NULL;
		n->n_running = 0;
	}
	for (uint32_t i = 0; s->nodes && i < s->n_nodes; i++)
		node_free(&s->nodes[i]);
	free(s->nodes);
	free(s->view);
	if (s->pol_st)
		s->pol->destroy(s->pol_st);
	if (s->wl_st)
		s->wl->destroy(s->wl_st);
	if (s->r_route)
		gsl_rng_free(s->r_route);
	/* Requests still referenced by events (only after an error). */
	struct event ev;
	while (evq_pop(&s->q, &ev))
		if (ev.ptr)
			req_put(s, ev.ptr);
	while (s->free_reqs) {
		struct request *r = s->free_reqs;
		s->free_reqs = r->pool_next;
		free(r->hashes);
		free(r);
	}
	for (size_t i = 0; i < s->sessions.cap; i++) {
		if (s->sessions.slots[i].key) {
			free((struct session_rec *)(uintptr_t)s->sessions.slots[i].val);
		}
	}
	while (s->free_sessions) {
		struct session_rec *rec = s->free_sessions;
		s->free_sessions = rec->free_next;
		free(rec);
	}
	hmap_free(&s->sessions);
	hmap_free(&s->ever);
	evq_free(&s->q);
	met_free(&s->met);
}

/* Builds policy and workload; 0, or 2 with err naming the JSON path. */
static int build_modules(struct sim *s, char *err, size_t errlen)
{
	const struct scenario *sc = s->sc;
	s->pol = pol_find(sc->router.policy);
	if (!s->pol) {
		char names[512];
		pol_names(names, sizeof names);
		snprintf(err, errlen, "router.policy: unknown policy \"%s\" (known: %s)",
			 sc->router.policy, names);
		return 2;
	}
	s->r_route = rng_stream(sc->seed, STREAM_ROUTING);
	if (!s->r_route) {
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	struct pol_env penv = {(uint32_t)sc->cluster.nodes, (uint32_t)sc->cluster.engine.kv_block_tokens,
			       s->r_route};
	s->pol_st = s->pol->create(sc->router.params, "router.params", &penv, err, errlen);
	if (!s->pol_st)
		return 2;
	s->pol_reads_kv_util = s->pol->reads_kv_util && s->pol->reads_kv_util(s->pol_st);
	struct wl_env wenv = {(uint32_t)sc->cluster.engine.kv_block_tokens,
			      (uint32_t)sc->cluster.model->max_context, sc->seed, sc->base_dir, 1.0};
	s->wl_st = wl_create(sc->workload, &wenv, &s->wl, err, errlen);
	return s->wl_st ? 0 : 2;
}

int sim_validate(const struct scenario *sc, char *err, size_t errlen)
{
	struct sim s;
	memset(&s, 0, sizeof s);
	s.sc = sc;
	evq_init(&s.q);
	int rc = build_modules(&s, err, errlen);
	teardown(&s);
	return rc;
}

static FILE *open_csv(const char *dir, char *tmp, size_t tmplen, char *err, size_t errlen)
{
	snprintf(tmp, tmplen, "%s/requests.csv.tmp.%ld", dir, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		snprintf(err, errlen, "%s: cannot create", tmp);
	return f;
}

int sim_run(const struct scenario *sc, const struct sim_opts *o, struct met_summary *out,
	    char *err, size_t errlen)
{
	struct sim s;
	static const struct sim_opts none = {0};
	memset(&s, 0, sizeof s);
	memset(out, 0, sizeof *out);
	s.sc = sc;
	s.opts = o ? o : &none;
	s.err = err;
	s.errlen = errlen;
	evq_init(&s.q);
	hmap_init(&s.ever);
	hmap_init(&s.sessions);
	double started = wall_now();
	char csv_tmp[4200] = "", ts_tmp[4200] = "", te_tmp[4200] = "";
	FILE *csv = NULL;
	int rc = build_modules(&s, err, errlen);
	if (rc)
		goto done;
	if (s.opts->out_dir) {
		if (res_mkdirs(s.opts->out_dir, err, errlen) ||
		    !(csv = open_csv(s.opts->out_dir, csv_tmp, sizeof csv_tmp, err, errlen))) {
			rc = 3;
			goto done;
		}
		met_csv_header(csv);
	}
	met_init(&s.met, sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, csv);
	cost_init(&s.cost, &sc->cluster, sc->weight_bytes);
	s.n_nodes = (uint32_t)sc->cluster.nodes;
	s.nodes = calloc(s.n_nodes, sizeof *s.nodes);
	s.view = calloc(s.n_nodes, sizeof *s.view);
	if (!s.nodes || !s.view) {
		snprintf(err, errlen, "out of memory for %u nodes", s.n_nodes);
		rc = 3;
		goto done;
	}
	struct node_hooks hooks = {&s, hook_done, hook_block, hook_before};
	for (uint32_t i = 0; i < s.n_nodes; i++) {
		int server = (int)(i / (uint32_t)sc->cluster.nodes_per_server);
		if (node_init(&s.nodes[i], (int)i, server, (uint32_t)sc->kv_blocks_per_node,
			      &sc->cluster.engine, &s.cost, &hooks)) {
			snprintf(err, errlen, "out of memory for node %u's KV cache", i);
			s.n_nodes = i + 1;
			rc = 3;
			goto done;
		}
		s.view[i].server = server;
		s.view[i].up = 1;
	}
	s.end_arrivals_ns = (int64_t)llround(sc->duration_s * 1e9);
	if (s.opts->trace_events) {
		snprintf(te_tmp, sizeof te_tmp, "%s.tmp.%ld", s.opts->trace_events, (long)getpid());
		s.te = fopen(te_tmp, "w");
		if (!s.te) {
			snprintf(err, errlen, "%s: cannot create", te_tmp);
			te_tmp[0] = 0;
			rc = 3;
			goto done;
		}
		fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", s.te);
		static const char *const tracks[] = {"router", "nodes (iterations)", "KV transfers"};
		for (int k = 0; k < 3; k++) {
			char args[64];
			snprintf(args, sizeof args, "\"name\":\"%s\"", tracks[k]);
			trace_event(&s, "process_name", 'M', k, 0, 0, 0, args);
		}
	}
	pull_source(&s);
	if (s.opts->out_dir) {
		snprintf(ts_tmp, sizeof ts_tmp, "%s/timeseries.csv.tmp.%ld", s.opts->out_dir,
			 (long)getpid());
		s.ts = fopen(ts_tmp, "w");
		if (!s.ts) {
			snprintf(err, errlen, "%s: cannot create", ts_tmp);
			ts_tmp[0] = 0;
			rc = 3;
			goto done;
		}
		fputs("time_s,node,kv_util,running,queued,temperature_c,throttled\n", s.ts);
		s.sample_ns = (int64_t)llround(sc->timeseries_interval_s * 1e9);
		if (s.sample_ns < 1)
			s.sample_ns = 1;
		if (!evq_push(&s.q, s.sample_ns, EV_SAMPLE, -1, NULL))
			fail(&s, "out of memory");
	}

	int show = s.opts->progress && isatty(2);
	double last_draw = started;
	struct event ev;
	while (!s.error && evq_pop(&s.q, &ev)) {
		if (ev.kind == EV_SAMPLE && evq_size(&s.q) == 0)
			break; /* the run is over; sampling does not extend it */
		if (s.opts->audit && ev.time_ns < s.now) {
			audit_fail(&s, "the clock went back to %.9f s", (double)ev.time_ns * 1e-9);
			break;
		}
		s.now = ev.time_ns;
		switch (ev.kind) {
		case EV_ARRIVAL:
			on_arrival(&s, ev.ptr, ev.node);
			break;
		case EV_TRANSFER_DONE:
			on_transfer_done(&s, ev.ptr, (uint32_t)ev.node);
			break;
		case EV_STEP:
			if (s.te)
				trace_step(&s, (uint32_t)ev.node);
			node_finish_step(&s.nodes[ev.node], s.now);
			kick(&s, (uint32_t)ev.node);
			break;
		case EV_SAMPLE:
			sample(&s);
			break;
		}
		if (ev.node >= 0 && ev.kind != EV_ARRIVAL && s.nodes[ev.node].kv.oom)
			fail(&s, "out of memory (KV cache index)");
		if (s.opts->audit && !s.error) {
			if (ev.kind == EV_STEP || ev.kind == EV_TRANSFER_DONE)
				audit_node(&s, (uint32_t)ev.node);
			else if (ev.kind == EV_ARRIVAL)
				for (uint32_t i = 0; i < s.n_nodes && !s.error; i++)
					if (s.nodes[i].busy || s.nodes[i].n_waiting)
						audit_node(&s, i);
		}
		if (show && (s.q.popped & 0xffff) == 0 && wall_now() - last_draw > 0.5) {
			progress(&s, started);
			last_draw = wall_now();
		}
	}
	if (show) {
		progress(&s, started);
		fputc('\n', stderr);
	}
	if (s.error) {
		rc = s.error;
		goto done;
	}

	if (s.opts->audit && s.met.arrived != s.met.completed + s.met.shed + s.met.failed) {
		audit_fail(&s, "after the drain %llu arrived != %llu completed + %llu shed + %llu failed",
			   (unsigned long long)s.met.arrived, (unsigned long long)s.met.completed,
			   (unsigned long long)s.met.shed, (unsigned long long)s.met.failed);
		rc = s.error;
		goto done;
	}
	/* The summary. */
	double sim_s = (double)s.now * 1e-9;
	met_summarize(&s.met, sim_s, out);
	snprintf(out->scenario, sizeof out->scenario, "%s", sc->name);
	snprintf(out->policy, sizeof out->policy, "%s", sc->router.policy);
	snprintf(out->version, sizeof out->version, "%s", kvsim_version());
	out->seed = sc->seed;
	out->migration_count = s.migrations;
	out->migration_bytes = s.migration_bytes;
	out->migration_s = s.migration_s;
	out->nodes = calloc(s.n_nodes, sizeof *out->nodes);
	if (!out->nodes) {
		snprintf(err, errlen, "out of memory");
		rc = 3;
		goto done;
	}
	out->n_nodes = s.n_nodes;
	double sum = 0, sumsq = 0, mx = 0;
	for (uint32_t i = 0; i < s.n_nodes; i++) {
		const struct node *n = &s.nodes[i];
		struct met_node *mn = &out->nodes[i];
		mn->id = (int)i;
		mn->busy_ratio = sim_s > 0 ? (double)n->busy_ns * 1e-9 / sim_s : 0;
		mn->mean_kv_util = s.now > 0 ? n->kv_used_block_ns / (double)s.now / n->kv.n_blocks : 0;
		mn->peak_kv_util = (double)n->peak_used / n->kv.n_blocks;
		mn->requests = n->completed;
		double x = (double)n->completed;
		sum += x;
		sumsq += x * x;
		if (x > mx)
			mx = x;
	}
	double mean = sum / s.n_nodes;
	out->imbalance_max_over_mean = mean > 0 ? mx / mean : 0;
	out->imbalance_jain = sumsq > 0 ? sum * sum / (s.n_nodes * sumsq) : 1;
	out->events = s.q.popped;
	out->wall_s = wall_now() - started;
	out->requests_per_wall_s = out->wall_s > 0 ? (double)out->arrived / out->wall_s : 0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	out->peak_rss_bytes = (uint64_t)ru.ru_maxrss * 1024;

	if (s.te) {
		fprintf(s.te, "\n],\"otherData\":{\"kvsim_version\":\"%s\",\"events\":%llu,"
			      "\"truncated\":%s}}\n",
			kvsim_version(), (unsigned long long)s.te_count,
			s.te_count >= TE_MAX ? "true" : "false");
		int bad = ferror(s.te);
		bad |= fclose(s.te) != 0;
		s.te = NULL;
		if (bad || rename(te_tmp, s.opts->trace_events) != 0) {
			snprintf(err, errlen, "%s: write failed", s.opts->trace_events);
			rc = 3;
			goto done;
		}
		te_tmp[0] = 0;
	}
	if (csv) {
		int bad = ferror(csv);
		bad |= fclose(csv) != 0;
		csv = NULL;
		char final[4200];
		snprintf(final, sizeof final, "%s/requests.csv", s.opts->out_dir);
		if (bad || rename(csv_tmp, final) != 0) {
			snprintf(err, errlen, "%s: write failed", final);
			rc = 3;
			goto done;
		}
		csv_tmp[0] = 0;
		bad = ferror(s.ts);
		bad |= fclose(s.ts) != 0;
		s.ts = NULL;
		snprintf(final, sizeof final, "%s/timeseries.csv", s.opts->out_dir);
		if (bad || rename(ts_tmp, final) != 0) {
			snprintf(err, errlen, "%s: write failed", final);
			rc = 3;
			goto done;
		}
		ts_tmp[0] = 0;
		cJSON *j = res_summary_json(out);
		snprintf(final, sizeof final, "%s/summary.json", s.opts->out_dir);
		if (!j || res_write_json(final, j, err, errlen))
			rc = 3;
		cJSON_Delete(j);
	}
done:
	if (csv)
		fclose(csv);
	if (s.ts)
		fclose(s.ts);
	if (s.te)
		fclose(s.te);
	if (te_tmp[0])
		unlink(te_tmp);
	if (csv_tmp[0])
		unlink(csv_tmp);
	if (ts_tmp[0])
		unlink(ts_tmp);
	teardown(&s);
	if (rc)
		met_summary_free(out);
	return rc;
}

int sim_trace_gen(const struct scenario *sc, const char *path, uint64_t *written, char *err,
		  size_t errlen)
{
	struct sim s;
	memset(&s, 0, sizeof s);
	s.sc = sc;
	evq_init(&s.q);
	*written = 0;
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	FILE *f = NULL;
	int rc = build_modules(&s, err, errlen);
	if (rc)
		goto done;
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "%s: cannot create", tmp);
		rc = 3;
		goto done;
	}
	uint32_t B = (uint32_t)sc->cluster.engine.kv_block_tokens;
	int64_t end = (int64_t)llround(sc->duration_s * 1e9);
	int got;
	while ((got = s.wl->next(s.wl_st, &a)) == 1 && a.arrival_ns <= end) {
		trace_write_kvsim(f, &a, B, 0);
		(*written)++;
		/* The session's later turns, as if each answer came at time 0:
		 * their arrival is then the think time. */
		struct request *cur = &a, *nxt = &b;
		while (s.wl->follow_up && (got = s.wl->follow_up(s.wl_st, cur, 1, 0, nxt)) == 1) {
			trace_write_kvsim(f, nxt, B, nxt->arrival_ns);
			(*written)++;
			struct request *t = cur;
			cur = nxt;
			nxt = t;
		}
		if (got < 0)
			break;
	}
	if (got < 0) {
		const char *why = s.wl->error ? s.wl->error(s.wl_st) : NULL;
		snprintf(err, errlen, "%s", why ? why : "out of memory in the workload");
		rc = why ? 2 : 3;
		goto done;
	}
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	f = NULL;
	if (bad || rename(tmp, path) != 0) {
		snprintf(err, errlen, "%s: write failed", path);
		rc = 3;
	}
done:
	if (f)
		fclose(f);
	if (rc)
		unlink(tmp);
	free(a.hashes);
	free(b.hashes);
	teardown(&s);
	return rc;
}
