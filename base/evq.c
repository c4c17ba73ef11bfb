/* evq: a binary min-heap of events by (time, seq) and a winner tree of timers. */
/* Timers are keyed by (time, slot) and pop first at equal times. */
#include "base/evq.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

static int before(const struct event *a, const struct event *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

/* Timers at equal times: the lower slot (t_fix keeps the left child, whose
 * slots are lower, on a tie). */
static int t_before(const struct evq_key *a, const struct evq_key *b)
{
	return a->time_ns < b->time_ns;
}

void evq_init(struct evq *q)
{
	memset(q, 0, sizeof *q);
	q->next_seq = 1;
	q->fired = NIL;
}

void evq_free(struct evq *q)
{
	free(q->heap);
	free(q->tkey);
	free(q->tw);
	memset(q, 0, sizeof *q);
	q->fired = NIL;
}

/* --- timers ---------------------------------------------------------------- */

static inline uint32_t t_win(const struct evq *q, uint32_t i)
{
	return i >= q->tp ? i - q->tp : q->tw[i];
}

int evq_timers(struct evq *q, uint32_t n_slots, int kind)
{
	free(q->tkey);
	free(q->tw);
	uint32_t tp = 1;
	while (tp < n_slots)
		tp *= 2;
	q->tkey = malloc(tp * sizeof *q->tkey);
	q->tw = malloc(tp * sizeof *q->tw);
	q->tp = q->tn = q->n_slots = 0;
	q->fired = NIL;
	if (!q->tkey || !q->tw)
		return -1;
	for (uint32_t i = 0; i < tp; i++)
		q->tkey[i] = (struct evq_key){INT64_MAX, UINT64_MAX};
	q->tp = tp;
	/* all unset: each node's winner is the first slot under it (a slot
	 * from outside its subtree would never be fixed there) */
	for (uint32_t i = tp - 1; i >= 1; i--)
		q->tw[i] = t_win(q, 2 * i);
	q->n_slots = n_slots;
	q->tkind = kind;
	return 0;
}

/* Slot's key changed: the winners on its path to the root, O(log slots). */
static void t_fix(struct evq *q, uint32_t slot)
{
	for (uint32_t i = (q->tp + slot) / 2; i >= 1; i /= 2) {
		uint32_t l = t_win(q, 2 * i), r = t_win(q, 2 * i + 1);
		q->tw[i] = t_before(&q->tkey[r], &q->tkey[l]) ? r : l;
	}
}

static uint32_t t_top(const struct evq *q)
{
	return q->tp > 1 ? q->tw[1] : 0;
}

static void t_clear(struct evq *q, uint32_t slot)
{
	if (q->tkey[slot].seq == UINT64_MAX)
		return;
	q->tkey[slot] = (struct evq_key){INT64_MAX, UINT64_MAX};
	q->tn--;
	t_fix(q, slot);
}

/* A popped timer stays set until the next operation, so that setting it
 * again at once (a node's next step) is one pass up the tree. */
static void settle(struct evq *q)
{
	if (q->fired != NIL) {
		uint32_t slot = q->fired;
		q->fired = NIL;
		t_clear(q, slot);
	}
}

static void t_put(struct evq *q, uint32_t slot, int64_t time_ns, uint64_t seq)
{
	if (q->fired != slot)
		settle(q);
	q->fired = NIL;
	if (q->tkey[slot].seq == UINT64_MAX)
		q->tn++;
	q->tkey[slot] = (struct evq_key){time_ns, seq};
	t_fix(q, slot);
}

uint64_t evq_timer_set(struct evq *q, uint32_t slot, int64_t time_ns)
{
	if (slot >= q->n_slots)
		return 0;
	uint64_t seq = q->next_seq++;
	t_put(q, slot, time_ns, seq);
	return seq;
}

void evq_timer_cancel(struct evq *q, uint32_t slot)
{
	if (slot >= q->n_slots)
		return;
	if (q->fired != slot)
		settle(q);
	q->fired = NIL;
	t_clear(q, slot);
}

/* --- events ---------------------------------------------------------------- */

/* Puts ev in the hole at i, or above it where it belongs. */
static void sift_up(struct evq *q, size_t i, struct event ev)
{
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&ev, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = ev;
}

static int insert(struct evq *q, struct event ev)
{
	if (q->n == q->cap) {
		size_t ncap = q->cap ? q->cap * 2 : 256;
		struct event *nh = realloc(q->heap, ncap * sizeof *nh);
		if (!nh)
			return -1;
		q->heap = nh;
		q->cap = ncap;
	}
	sift_up(q, q->n++, ev);
	return 0;
}

uint64_t evq_push_tag(struct evq *q, int64_t time_ns, int kind, uint16_t tag, int32_t node,
		      void *ptr)
{
	struct event ev = {.time_ns = time_ns, .seq = q->next_seq, .kind = (uint16_t)kind,
			   .tag = tag, .node = node, .ptr = ptr};
	if (insert(q, ev))
		return 0;
	return q->next_seq++;
}

int evq_repush(struct evq *q, const struct event *ev, int64_t time_ns)
{
	if (q->n_slots && ev->kind == q->tkind && ev->node >= 0 && (uint32_t)ev->node < q->n_slots) {
		t_put(q, (uint32_t)ev->node, time_ns, ev->seq);
		q->popped--;
		return 0;
	}
	struct event e = *ev;
	e.time_ns = time_ns;
	if (insert(q, e))
		return -1;
	q->popped--;
	return 0;
}

/* The hole at the top goes down to a leaf along the earlier child, then
 * the last event comes up from there: it came from the bottom and mostly
 * belongs near it, so this takes one comparison a level, not two. */
static void pop_top(struct evq *q, struct event *out)
{
	*out = q->heap[0];
	struct event last = q->heap[--q->n];
	if (q->n == 0)
		return;
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		q->heap[i] = q->heap[c];
		i = c;
	}
	sift_up(q, i, last);
}

int evq_pop(struct evq *q, struct event *out)
{
	settle(q);
	if (q->tn > 0) {
		uint32_t slot = t_top(q);
		const struct evq_key *t = &q->tkey[slot];
		if (q->n == 0 || t->time_ns <= q->heap[0].time_ns) {
			*out = (struct event){.time_ns = t->time_ns, .seq = t->seq,
					     .kind = (uint16_t)q->tkind, .node = (int32_t)slot};
			q->fired = slot;
			q->popped++;
			return 1;
		}
	}
	if (q->n == 0)
		return 0;
	pop_top(q, out);
	q->popped++;
	return 1;
}

size_t evq_size(const struct evq *q)
{
	return q->n + q->tn - (q->fired != NIL);
}
