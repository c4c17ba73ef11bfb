/* premig: preemptive migration: idle sessions' KV leaves a node past the KV watermark.
 *
 * With router.watermark_action "migrate", the router checks the nodes'
 * KV (blocks in use plus cached, the figure the "offload" action writes
 * down from) every check interval. A node above router.kv_watermark moves
 * the KV of its idle sessions (between turns, their turn before ended
 * there), the longest idle first, to nodes with room, until what will
 * leave brings it back under the mark. A move is a flow over the KV path
 * (links_kv_path), sharing the ports fairly with every other transfer.
 * When its data lands, the destination caches the blocks, the source
 * frees its copy (kv_drop: the session's own unlocked tail, not an
 * eviction) and the session's affinity follows: its record (last node,
 * the nodes that may hold its blocks) and the policy's map (pol_ops
 * .on_move). Its next turn then finds its KV cached on the new node.
 *
 * Races. The next turn arriving while the move is in flight is routed as
 * if nothing moved (the affinity changes only when the data lands), so
 * it finds its KV still on the source; the move, stale when it lands, is
 * dropped there (its bytes were spent). So is a move whose destination
 * crashed meanwhile; one whose source crashed still lands (a transfer's
 * copy is taken when it starts, as for migrations). A session that ends
 * has had its last turn arrive: its moves are stale. */
#include "sim/premig.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/engine.h"
#include "sim/links.h"
#include "sim/runlog.h"
#include "sim/views.h"

/* How often the router checks KV use when load reports are exact: the
 * Gateway API Inference Extension's endpoint picker (llm-d's scheduler)
 * refreshes its engines' metrics every 50 ms (DefaultRefreshMetricsInterval).
 * With periodic reports (router.load_report_interval_ms), at each report.
 * A fixed grid of times, so decode spans change no result. */
#define PREMIG_CHECK_NS 50000000LL

/* A session that went idle on a node: valid while its record keeps the
 * stamp (no turn of it arrived since) and still names that node. */
struct pm_idle {
	struct session_rec *rec;
	uint64_t seq;
};

/* A node's idle sessions in the order they went idle (the coldest at
 * head); stale entries are skipped when met and compacted when full. */
struct pm_ring {
	struct pm_idle *e;
	uint32_t head, n, cap;
};

/* A move in flight, in a slot (free ones linked through next_free). */
struct pm_move {
	struct session_rec *rec;
	uint64_t seq;
	uint32_t src, dst;
	uint32_t have, there; /* blocks [have, there) of the chain travel */
	uint32_t drop;        /* blocks the source was to free, as planned */
	uint32_t crash_src, crash_dst; /* the nodes' crash counts at the start */
	uint32_t next_free;
	int64_t start_ns; /* when the move began (migration.seconds) */
};

struct premig {
	struct pm_ring *rings; /* per node */
	/* per node: blocks moves in flight will free there, and take there */
	uint64_t *out, *in;
	struct pm_move *mv;
	uint32_t n_mv, cap_mv, free_mv;
	uint32_t *src, *dst; /* scratch: the tick's candidates */
	uint64_t seq, entries;
	int64_t tick_ns;
	int ticking; /* a check is scheduled */
	int ev_tick; /* its event kind */
};

int premig_init(struct sim *s)
{
	const struct scenario *sc = s->sc;
	if (s->rt.mech.watermark_action != WM_MIGRATE || sc->cluster.kv_transfer == KVX_NONE ||
	    !sc->cluster.engine.prefix_caching || s->n_nodes < 2 || sc->router.kv_watermark >= 1)
		return 0;
	struct premig *pm = calloc(1, sizeof *pm);
	if (!pm)
		return -1;
	s->pm = pm;
	pm->rings = calloc(s->n_nodes, sizeof *pm->rings);
	pm->out = calloc(s->n_nodes, sizeof *pm->out);
	pm->in = calloc(s->n_nodes, sizeof *pm->in);
	pm->src = malloc(s->n_nodes * sizeof *pm->src);
	pm->dst = malloc(s->n_nodes * sizeof *pm->dst);
	if (!pm->rings || !pm->out || !pm->in || !pm->src || !pm->dst)
		return -1;
	pm->free_mv = UINT32_MAX;
	pm->ev_tick = sim_add_event_kind(s, premig_ev_tick, NULL, 0);
	if (pm->ev_tick < 0)
		return -1;
	pm->tick_ns = s->vw.report_ns > 0 ? s->vw.report_ns : PREMIG_CHECK_NS;
	return 0;
}

void premig_free(struct sim *s)
{
	struct premig *pm = s->pm;
	if (!pm)
		return;
	for (uint32_t i = 0; pm->rings && i < s->n_nodes; i++)
		free(pm->rings[i].e);
	free(pm->rings);
	free(pm->out);
	free(pm->in);
	free(pm->mv);
	free(pm->src);
	free(pm->dst);
	free(pm);
	s->pm = NULL;
}

static int idle_valid(const struct pm_idle *e, uint32_t node)
{
	const struct session_rec *rec = e->rec;
	return rec->idle_seq == e->seq && rec->id != 0 && rec->live == 0 &&
	       rec->last_node == (int32_t)node;
}

/* Room at the ring's end: its entries moved to the front, stale ones
 * left out; twice the room when more than half are live. */
static int ring_room(struct premig *pm, struct pm_ring *q, uint32_t node)
{
	uint32_t k = 0;
	for (uint32_t j = 0; j < q->n; j++)
		if (idle_valid(&q->e[q->head + j], node))
			q->e[k++] = q->e[q->head + j];
	pm->entries -= q->n - k;
	q->head = 0;
	q->n = k;
	if (q->cap >= 16 && k <= q->cap / 2)
		return 0;
	uint32_t cap = q->cap ? 2 * q->cap : 16;
	struct pm_idle *e = realloc(q->e, cap * sizeof *e);
	if (!e)
		return -1;
	q->e = e;
	q->cap = cap;
	return 0;
}

/* The next check on the grid of check times after now. */
static void schedule_tick(struct sim *s)
{
	struct premig *pm = s->pm;
	int64_t at = (s->now / pm->tick_ns + 1) * pm->tick_ns;
	if (!evq_push(&s->q, at, pm->ev_tick, -1, NULL))
		sim_fail(s, "out of memory");
	pm->ticking = 1;
}

void premig_idle_(struct sim *s, struct session_rec *rec, struct request *next)
{
	struct premig *pm = s->pm;
	rec->idle_req = next;
	rec->idle_seq = ++pm->seq;
	if (rec->last_node < 0)
		return;
	struct pm_ring *q = &pm->rings[rec->last_node];
	if (q->head + q->n == q->cap && ring_room(pm, q, (uint32_t)rec->last_node)) {
		sim_fail(s, "out of memory");
		return;
	}
	q->e[q->head + q->n++] = (struct pm_idle){rec, rec->idle_seq};
	pm->entries++;
	if (!pm->ticking)
		schedule_tick(s);
}

static void ring_pop(struct premig *pm, struct pm_ring *q)
{
	q->head++;
	q->n--;
	pm->entries--;
}

/* Node i's KV held (blocks in use plus cached) lies in [*lo, *hi] now,
 * told without applying a decode span in progress: a span takes at most
 * a block per request per block_tokens iterations (and one more across a
 * boundary), and frees at most as many (a block filled twice at once is
 * kept once). Exact when nothing is due. */
static void held_bounds(const struct sim *s, uint32_t i, uint32_t *lo, uint32_t *hi)
{
	const struct node *n = &s->nodes[i];
	uint32_t held = n->kv.n_blocks - n->kv.n_free;
	*lo = *hi = held;
	if (s->now < n->sync_due_ns)
		return;
	uint64_t rest = n->span_len > n->span_started ? n->span_len - n->span_started : 0;
	uint64_t grow = (uint64_t)n->n_batch * (rest / n->block_tokens + 2);
	*lo = grow < held ? held - (uint32_t)grow : 0;
	*hi = held + grow < n->kv.n_blocks ? held + (uint32_t)grow : n->kv.n_blocks;
}

static double mark_of(const struct sim *s, uint32_t i)
{
	return views_watermark_blocks(s, s->nodes[i].kv.n_blocks);
}

static uint32_t held_of(const struct sim *s, uint32_t i)
{
	return s->nodes[i].kv.n_blocks - s->nodes[i].kv.n_free;
}

/* Among the candidates, the node that stays under the watermark with
 * `need` more blocks (what is on its way there counted), the one with the
 * most free blocks (ties: lowest id); -1 if none. */
static int32_t pick_dst(const struct sim *s, uint32_t n_dst, uint32_t need)
{
	const struct premig *pm = s->pm;
	int32_t best = -1;
	uint64_t best_free = 0;
	for (uint32_t k = 0; k < n_dst; k++) {
		uint32_t d = pm->dst[k];
		double after = (double)held_of(s, d) + (double)pm->in[d] + need;
		if (views_above_watermark(s, after, s->nodes[d].kv.n_blocks))
			continue;
		uint64_t free_ = s->nodes[d].kv.n_free > pm->in[d] ? s->nodes[d].kv.n_free - pm->in[d] : 0;
		if (best < 0 || free_ > best_free) {
			best = (int32_t)d;
			best_free = free_;
		}
	}
	return best;
}

static uint32_t move_slot(struct sim *s)
{
	struct premig *pm = s->pm;
	if (pm->free_mv != UINT32_MAX) {
		uint32_t k = pm->free_mv;
		pm->free_mv = pm->mv[k].next_free;
		return k;
	}
	if (pm->n_mv == pm->cap_mv) {
		uint32_t cap = pm->cap_mv ? 2 * pm->cap_mv : 64;
		struct pm_move *m = realloc(pm->mv, cap * sizeof *m);
		if (!m) {
			sim_fail(s, "out of memory");
			return UINT32_MAX;
		}
		pm->mv = m;
		pm->cap_mv = cap;
	}
	return pm->n_mv++;
}

/* The move in slot k has landed (or needed no bytes): the destination
 * caches the blocks, the source lets its copy go, the affinity follows,
 * unless the session went on or the destination crashed meanwhile. */
static void land(struct sim *s, uint32_t k)
{
	struct premig *pm = s->pm;
	struct pm_move mv = pm->mv[k];
	pm->mv[k].next_free = pm->free_mv;
	pm->free_mv = k;
	assert(pm->out[mv.src] >= mv.drop && pm->in[mv.dst] >= mv.there - mv.have);
	pm->out[mv.src] -= mv.drop;
	pm->in[mv.dst] -= mv.there - mv.have;
	s->rt.migration_s += (double)(s->now - mv.start_ns) * 1e-9; /* as a migration's, landed or not */
	struct session_rec *rec = mv.rec;
	if (rec->idle_seq != mv.seq || rec->id == 0 || rec->live != 0)
		return; /* its next turn came: it found its KV on the source */
	if (!s->alive[mv.dst] || s->flt.crashes[mv.dst] != mv.crash_dst)
		return; /* the copy went with the destination's HBM */
	const struct request *next = rec->idle_req;
	struct node *dn = &s->nodes[mv.dst], *sn = &s->nodes[mv.src];
	struct kv_match m;
	node_sync(dn, s->now);
	engine_cut_span(s, mv.dst);
	node_lookup(dn, next->hashes, mv.there, &m); /* commits held-back blocks it meets */
	uint32_t upto = kv_install(&dn->kv, next->hashes, mv.have, mv.there);
	if (upto > m.blocks)
		session_add_node(rec, (int32_t)mv.dst); /* its private blocks may be there now */
	engine_kick(s, mv.dst);
	if (upto < mv.there)
		return; /* no room for all of it after all: the session stays */
	if (s->flt.crashes[mv.src] == mv.crash_src) { /* (else its HBM went with the crash) */
		node_sync(sn, s->now);
		engine_cut_span(s, mv.src);
		node_lookup(sn, next->hashes, mv.there, &m);
		kv_drop(&sn->kv, next->hashes, 0, mv.there, 0); /* all of it is on dst now */
		engine_kick(s, mv.src);
	}
	rec->last_node = (int32_t)mv.dst;
	rec->hint_node = -1; /* its admission hint named a run on the source */
	for (uint32_t j = 0; s->rt.pol->on_move && j < s->rt.n_pol_st; j++)
		s->rt.pol->on_move(s->rt.pol_sts[j], next, (int32_t)mv.dst);
}

void premig_delivered(struct sim *s, uint32_t slot)
{
	land(s, slot);
}

/* Starts moving blocks [have, there) of rec's session from src to dst. */
static void start_move(struct sim *s, struct session_rec *rec, uint64_t seq, uint32_t src,
		       uint32_t dst, uint32_t have, uint32_t there, uint32_t drop)
{
	struct premig *pm = s->pm;
	uint32_t k = move_slot(s);
	if (k == UINT32_MAX)
		return;
	pm->mv[k] = (struct pm_move){rec, seq, src, dst, have, there, drop, s->flt.crashes[src],
				     s->flt.crashes[dst], UINT32_MAX, s->now};
	pm->out[src] += drop;
	pm->in[dst] += there - have;
	double bytes = (double)(there - have) * s->block_bytes;
	s->rt.migrations++;
	s->rt.mig_why[MR_WATERMARK]++;
	s->rt.migration_bytes += bytes;
	if (there == have) {
		land(s, k); /* the destination holds it all already */
		return;
	}
	uint32_t ports[4], n_ports;
	double latency_s;
	const struct cat_link *link = links_kv_path(s, src, dst, ports, &n_ports, &latency_s);
	if (s->log.te) {
		char args[160];
		snprintf(args, sizeof args,
			 "\"session\":%llu,\"from\":%u,\"to\":%u,\"bytes\":%.0f,\"link\":\"%s\"",
			 (unsigned long long)rec->id, src, dst, bytes, link->name);
		int64_t t_ns = (int64_t)llround(links_estimate_s(s, ports, n_ports, bytes, latency_s) * 1e9);
		runlog_trace_event(s, "kv move", 'X', 2, (int)dst, s->now, t_ns > 0 ? t_ns : 1, args);
	}
	links_start_flow(s, FLOW_PREMIG, NULL, (int32_t)k, ports, n_ports, bytes, latency_s);
}

/* Node i is above the watermark: its idle sessions' KV moves, the
 * longest idle first, while what will leave leaves it above. The first
 * one no candidate has room for stops it (the order is kept). */
static void relieve(struct sim *s, uint32_t i, uint32_t n_dst)
{
	struct premig *pm = s->pm;
	struct pm_ring *q = &pm->rings[i];
	struct node *n = &s->nodes[i];
	double mark = mark_of(s, i);
	while (q->n && !s->error && (double)held_of(s, i) - (double)pm->out[i] > mark) {
		struct pm_idle e = q->e[q->head];
		if (!idle_valid(&e, i)) {
			ring_pop(pm, q);
			continue;
		}
		const struct request *next = e.rec->idle_req;
		uint32_t full = node_full_blocks(n, next->prompt_tokens);
		if (full > next->n_hashes)
			full = next->n_hashes;
		struct kv_match m;
		node_lookup(n, next->hashes, full, &m);
		uint32_t there = m.blocks;
		uint32_t drop = kv_drop(&n->kv, next->hashes, 0, there, 1);
		if (drop == 0) {
			ring_pop(pm, q); /* nothing of it is its own here: moving frees nothing */
			continue;
		}
		int32_t d = pick_dst(s, n_dst, there);
		if (d < 0)
			break;
		node_lookup(&s->nodes[d], next->hashes, there, &m);
		ring_pop(pm, q);
		start_move(s, e.rec, e.seq, i, (uint32_t)d, m.blocks, there, drop);
	}
}

void premig_ev_tick(struct sim *s, const struct event *ev)
{
	(void)ev;
	struct premig *pm = s->pm;
	pm->ticking = 0;
	if (pm->entries == 0)
		return; /* no idle session anywhere: the next one to go idle restarts it */
	schedule_tick(s);
	/* Candidates from bounds read without applying anything; those are
	 * then brought up to now, and decide on exact figures. */
	uint32_t n_src = 0, n_dst = 0;
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		if (!s->vw.views[0][i].up)
			continue;
		uint32_t lo, hi;
		held_bounds(s, i, &lo, &hi);
		double mark = mark_of(s, i);
		/* a node may be both until its figures are exact: then at most
		 * one holds (a source is above the mark, a destination stays
		 * under it with what it takes) */
		if (pm->rings[i].n && (double)hi - (double)pm->out[i] > mark)
			pm->src[n_src++] = i;
		if ((double)lo + (double)pm->in[i] + 1 <= mark)
			pm->dst[n_dst++] = i;
	}
	if (n_src == 0 || n_dst == 0)
		return;
	for (uint32_t k = 0; k < n_src; k++)
		node_sync(&s->nodes[pm->src[k]], s->now);
	uint32_t kept = 0;
	for (uint32_t k = 0; k < n_dst; k++) {
		uint32_t d = pm->dst[k];
		node_sync(&s->nodes[d], s->now);
		if (s->rt.mech.health) {
			struct pol_node_view v = s->vw.views[0][d];
			if (s->vw.report_ns == 0) /* exact reports: its KV figure now */
				v.kv_util = (double)s->nodes[d].kv.n_used / s->nodes[d].kv.n_blocks;
			if (views_unhealthy(s, &v, 0))
				continue;
		}
		pm->dst[kept++] = d;
	}
	for (uint32_t k = 0; k < n_src && kept && !s->error; k++)
		relieve(s, pm->src[k], kept);
}
