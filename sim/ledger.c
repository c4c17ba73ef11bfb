/* ledger: the computed-before record (docs/design.md, section 6), per epoch and per session frontier. */
#include "sim/ledger.h"

#include <stdlib.h>
#include <string.h>

#include "sim/audit.h"
#include "sim/sim_int.h"

/* The computed-before tree of one epoch (a content namespace,
 * wl_ops.epochs), and its requests in the system. */
struct ever_epoch {
	struct ctree tree;
	uint32_t epoch;
	uint64_t live;
};

/* The shared block hashes computed somewhere before. While every block
 * recorded had its chain parent recorded first (ever_closed), they are a
 * tree of chains, kept as such (ever_tree: adds are appends, not random
 * inserts), and "computed before" falls from true to false once along a
 * prompt, at the end of its longest prefix in the tree (cached here for
 * the request being admitted: bs_*). The first block recorded without its
 * parent moves them into the flat set `ever`, which --audit also keeps all
 * along, to check the tree's answers. With wl_ops.epochs, one tree per
 * epoch (eps, oldest first), each forgotten once a later epoch has come
 * from the source and its own last request has ended (nothing can ask it
 * again); else one. */
struct ledger {
	struct ever_epoch *eps;
	uint32_t n_eps, eps_cap;
	int per_epoch;      /* one tree per epoch (wl_ops.epochs, and not opts->keep_epochs) */
	uint32_t src_epoch; /* the latest epoch the source delivered */
	uint64_t eps_forgotten;
	size_t ever_blocks, ever_peak; /* blocks in the trees, and the most at once */
	struct hset ever;
	int ever_closed;
	const struct request *bs_req;
	uint64_t bs_id;
	size_t bs_count;
	uint32_t bs_lo, bs_hi, bs_first_not;
};

int ledger_init(struct sim *s)
{
	s->led = calloc(1, sizeof *s->led);
	if (!s->led)
		return -1;
	s->led->per_epoch = s->wl->epochs && !s->opts->keep_epochs;
	hset_init(&s->led->ever);
	s->led->eps = malloc(4 * sizeof *s->led->eps);
	if (!s->led->eps)
		return -1;
	s->led->eps_cap = 4;
	s->led->n_eps = 1;
	ctree_init(&s->led->eps[0].tree);
	s->led->eps[0].epoch = 0;
	s->led->eps[0].live = 0;
	s->led->ever_closed = 1;
	return 0;
}

void ledger_free(struct sim *s)
{
	if (!s->led)
		return;
	hset_free(&s->led->ever);
	for (uint32_t i = 0; i < s->led->n_eps; i++)
		ctree_free(&s->led->eps[i].tree);
	free(s->led->eps);
	free(s->led);
	s->led = NULL;
}

void ledger_stats(const struct sim *s, uint64_t *epochs_forgotten, size_t *blocks_peak)
{
	*epochs_forgotten = s->led->eps_forgotten;
	*blocks_peak = s->led->ever_peak;
}

/* Epoch e's entry (newest first: the likely one), or UINT32_MAX. */
static uint32_t ever_epoch_find(const struct sim *s, uint32_t e)
{
	for (uint32_t i = s->led->n_eps; i-- > 0;)
		if (s->led->eps[i].epoch == e)
			return i;
	return UINT32_MAX;
}

/* The tree of r's epoch (there is one while r is in the system), or the
 * only tree when epochs are not in use. */
static struct ctree *ever_tree(struct sim *s, const struct request *r)
{
	return &s->led->eps[s->led->per_epoch ? ever_epoch_find(s, r->epoch) : 0].tree;
}

static void ever_epoch_forget(struct sim *s, uint32_t i)
{
	s->led->ever_blocks -= s->led->eps[i].tree.count;
	ctree_free(&s->led->eps[i].tree);
	memmove(&s->led->eps[i], &s->led->eps[i + 1], (s->led->n_eps - i - 1) * sizeof *s->led->eps);
	s->led->n_eps--;
	s->led->eps_forgotten++;
}

/* r enters the system, from the source (from_source) or as a follow-up. */
void ledger_arrive(struct sim *s, const struct request *r, int from_source)
{
	if (!s->led->per_epoch)
		return;
	uint32_t e = r->epoch;
	if (from_source && e != s->led->src_epoch) {
		if (e < s->led->src_epoch) {
			sim_fail(s, "internal error: the workload's epochs went back");
			return;
		}
		s->led->src_epoch = e;
		/* no more of the earlier ones will come from the source */
		for (uint32_t i = s->led->n_eps; i-- > 0;)
			if (s->led->eps[i].live == 0 && s->led->eps[i].epoch < e)
				ever_epoch_forget(s, i);
	}
	uint32_t i = ever_epoch_find(s, e);
	if (i != UINT32_MAX) {
		s->led->eps[i].live++;
		return;
	}
	if (s->led->n_eps == s->led->eps_cap) {
		uint32_t cap = 2 * s->led->eps_cap;
		struct ever_epoch *ne = realloc(s->led->eps, cap * sizeof *ne);
		if (!ne) {
			sim_fail(s, "out of memory");
			return;
		}
		s->led->eps = ne;
		s->led->eps_cap = cap;
	}
	struct ever_epoch *ep = &s->led->eps[s->led->n_eps++];
	ctree_init(&ep->tree);
	ep->epoch = e;
	ep->live = 1;
}

/* r has left the system: its epoch is forgotten if r was its last
 * request and the source has moved past it. */
void ledger_leave(struct sim *s, const struct request *r)
{
	if (!s->led->per_epoch)
		return;
	uint32_t i = ever_epoch_find(s, r->epoch);
	if (i != UINT32_MAX && --s->led->eps[i].live == 0 && r->epoch < s->led->src_epoch)
		ever_epoch_forget(s, i);
}

/* Whether block idx of r was computed somewhere before. */
static int block_before(void *ctx, const struct request *r, uint32_t idx)
{
	struct sim *s = ctx;
	if (idx >= r->n_shared)
		return session_computed_before(r->session_rec, r, idx);
	if (!s->led->ever_closed)
		return hset_has(&s->led->ever, r->hashes[idx]);
	/* The same request, the same set (its epoch's; it only grows: the
	 * same count is the same contents), inside the searched range: the
	 * cached answer. */
	const struct ctree *t = ever_tree(s, r);
	if (s->led->bs_req != r || s->led->bs_id != r->id || s->led->bs_count != t->count || idx < s->led->bs_lo ||
	    idx >= s->led->bs_hi) {
		uint32_t hi = r->n_shared < r->n_hashes ? r->n_shared : r->n_hashes;
		struct ctree_pos end;
		uint32_t p = ctree_prefix(t, r->hashes, hi, &end);
		s->led->bs_req = r;
		s->led->bs_id = r->id;
		s->led->bs_count = t->count;
		s->led->bs_lo = idx;
		s->led->bs_hi = hi;
		s->led->bs_first_not = idx > p ? idx : p; /* the first block from idx not in it */
	}
	int before = idx < s->led->bs_first_not;
	if (s->opts->audit && before != hset_has(&s->led->ever, r->hashes[idx]))
		audit_fail(s, "computed-before search disagrees with the set at block %u of request %llu",
			   idx, (unsigned long long)r->id);
	return before;
}

/* computed_before: blocks idx.. of r computed before, up to end. Shared
 * blocks from one search while the set is prefix-closed (one by one
 * after); private ones at once: the session's frontier covers a prefix of
 * them. --audit checks the count block by block. */
uint32_t ledger_computed_before(void *ctx, const struct request *r, uint32_t idx, uint32_t end)
{
	struct sim *s = ctx;
	uint32_t k = idx, lim = end < r->n_shared ? end : r->n_shared;
	if (s->led->ever_closed) {
		/* one search answers the whole shared part: blocks before its
		 * first block not in the set are in it, the rest are not */
		if (k < lim && block_before(ctx, r, k))
			k = s->led->bs_first_not < lim ? s->led->bs_first_not : lim;
	} else {
		while (k < lim && block_before(ctx, r, k))
			k++;
	}
	if (k < end && k >= r->n_shared && session_computed_before(r->session_rec, r, k)) {
		const struct session_rec *rec = r->session_rec;
		k = rec->frontier_len < end ? rec->frontier_len : end;
	}
	if (s->opts->audit) {
		for (uint32_t b = idx; b < k; b++)
			if (!block_before(ctx, r, b))
				audit_fail(s, "block %u of request %llu counted computed before, but is not",
					   b, (unsigned long long)r->id);
		if (k < end && block_before(ctx, r, k))
			audit_fail(s, "block %u of request %llu computed before, but not counted", k,
				   (unsigned long long)r->id);
	}
	return k - idx;
}

/* Blocks idx.. of r that no node computed before, up to end: shared ones
 * from one search while the set is prefix-closed (one by one after); a
 * private block behind no frontier has every later one behind none either
 * (session_computed_before's chain test does not depend on the block, and the
 * frontier is a prefix). --audit checks the count block by block. */
uint32_t ledger_computed_never(void *ctx, const struct request *r, uint32_t idx, uint32_t end)
{
	struct sim *s = ctx;
	uint32_t k = idx, lim = end < r->n_shared ? end : r->n_shared;
	if (s->led->ever_closed) {
		if (k < lim && !block_before(ctx, r, k))
			k = lim; /* at or past the search's first block not in the set */
	} else {
		while (k < lim && !block_before(ctx, r, k))
			k++;
	}
	if (k < end && k >= r->n_shared && !session_computed_before(r->session_rec, r, k))
		k = end;
	if (s->opts->audit) {
		for (uint32_t b = idx; b < k; b++)
			if (block_before(ctx, r, b))
				audit_fail(s, "block %u of request %llu counted never computed, but was",
					   b, (unsigned long long)r->id);
		if (k < end && !block_before(ctx, r, k))
			audit_fail(s, "block %u of request %llu never computed, but not counted", k,
				   (unsigned long long)r->id);
	}
	return k - idx;
}

static int ever_flat_add(void *ctx, uint64_t h)
{
	return hset_add(ctx, h) < 0;
}

/* While the set is a tree: records shared blocks idx..end-1 of r; block
 * idx's parent is where r recorded its last block, or is found along r's
 * chain. Returns 1 when done; 0 when the parent is not recorded: the set
 * then moves to the flat one, for good, and the caller adds the blocks
 * there. */
static int ever_tree_add(struct sim *s, struct request *r, uint32_t idx, uint32_t end)
{
	struct ctree *t = ever_tree(s, r);
	struct ctree_pos at = {r->ever_run, r->ever_off};
	if (idx == 0) {
		at.run = CTREE_NONE;
	} else if (r->ever_next != idx || r->ever_run == CTREE_NONE) {
		if (ctree_prefix(t, r->hashes, idx, &at) < idx) {
			/* its parent is not recorded: not a tree any more (every
			 * epoch's blocks go to the flat set, kept from then on) */
			s->led->ever_closed = 0;
			for (uint32_t i = 0; i < s->led->n_eps; i++) {
				if (!s->opts->audit &&
				    ctree_each(&s->led->eps[i].tree, ever_flat_add, &s->led->ever))
					sim_fail(s, "out of memory");
				ctree_free(&s->led->eps[i].tree);
			}
			s->led->per_epoch = 0;
			s->led->n_eps = 1;
			s->led->ever_blocks = 0;
			return 0;
		}
	}
	/* the request's shared blocks from idx on are expected to follow */
	int added = ctree_add_chain(t, &at, r->hashes + idx, end - idx, r->n_shared - idx);
	if (added < 0)
		sim_fail(s, "out of memory");
	else if ((s->led->ever_blocks += (size_t)added) > s->led->ever_peak)
		s->led->ever_peak = s->led->ever_blocks;
	for (uint32_t b = idx; s->opts->audit && b < end; b++)
		if (hset_add(&s->led->ever, r->hashes[b]) < 0)
			sim_fail(s, "out of memory");
	r->ever_run = at.run;
	r->ever_off = at.off;
	r->ever_next = end;
	return 1;
}

void ledger_on_blocks_computed(void *ctx, struct request *r, uint32_t from, uint32_t to)
{
	struct sim *s = ctx;
	uint32_t idx = from;
	for (; idx < to && idx < r->n_shared; idx++) {
		if (idx >= r->before_lo && idx < r->before_hi) {
			/* in the set since its admission at least: the whole
			 * rest of that range, at once */
			uint32_t stop = r->before_hi < to ? r->before_hi : to;
			if (stop > r->n_shared)
				stop = r->n_shared;
			idx = stop - 1;
			r->ever_next = stop;
			r->ever_run = CTREE_NONE; /* its place in the tree not looked up */
			continue;
		}
		if (s->led->ever_closed) {
			/* up to the range's end or the before range, at once */
			uint32_t end = to < r->n_shared ? to : r->n_shared;
			if (idx < r->before_lo && r->before_lo < end)
				end = r->before_lo;
			if (ever_tree_add(s, r, idx, end)) {
				idx = end - 1;
				continue;
			}
		}
		if (hset_add(&s->led->ever, r->hashes[idx]) < 0)
			sim_fail(s, "out of memory");
		r->ever_next = idx + 1;
	}
	if (idx == to)
		return;
	/* Private blocks: block by block, the frontier would move to each
	 * block not behind it, and once it moves it moves with every later
	 * one; so it ends at the last block unless that one is behind it. */
	struct session_rec *rec = r->session_rec;
	if (s->opts->audit) {
		struct session_rec was = *rec;
		if (!session_computed_before(rec, r, to - 1)) {
			rec->frontier_len = to;
			rec->frontier_hash = r->hashes[to - 1];
		}
		audit_frontier(s, r, was, idx, to);
	} else if (!session_computed_before(rec, r, to - 1)) {
		rec->frontier_len = to;
		rec->frontier_hash = r->hashes[to - 1];
	}
}
