/* evq: binary min-heap of events keyed by (time, seq), and an indexed
 * min-heap of timers under the same key. */
#include "sim/evq.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

static int before(const struct event *a, const struct event *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

static int t_before(const struct evq_timer *a, const struct evq_timer *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
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
	free(q->th);
	free(q->tpos);
	memset(q, 0, sizeof *q);
	q->fired = NIL;
}

/* --- timers ---------------------------------------------------------------- */

int evq_timers(struct evq *q, uint32_t n_slots, int kind)
{
	free(q->th);
	free(q->tpos);
	q->th = malloc((n_slots ? n_slots : 1) * sizeof *q->th);
	q->tpos = malloc((n_slots ? n_slots : 1) * sizeof *q->tpos);
	q->tn = q->n_slots = 0;
	q->fired = NIL;
	if (!q->th || !q->tpos)
		return -1;
	for (uint32_t i = 0; i < n_slots; i++)
		q->tpos[i] = NIL;
	q->n_slots = n_slots;
	q->tkind = kind;
	return 0;
}

static void t_place(struct evq *q, uint32_t i, const struct evq_timer *t)
{
	q->th[i] = *t;
	q->tpos[t->slot] = i;
}

/* Moves t up from the hole at i to its place. */
static void t_up(struct evq *q, uint32_t i, struct evq_timer t)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!t_before(&t, &q->th[p]))
			break;
		t_place(q, i, &q->th[p]);
		i = p;
	}
	t_place(q, i, &t);
}

/* Moves t down from the hole at i to its place. */
static void t_down(struct evq *q, uint32_t i, struct evq_timer t)
{
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= q->tn)
			break;
		if (c + 1 < q->tn && t_before(&q->th[c + 1], &q->th[c]))
			c++;
		if (!t_before(&q->th[c], &t))
			break;
		t_place(q, i, &q->th[c]);
		i = c;
	}
	t_place(q, i, &t);
}

static void t_remove(struct evq *q, uint32_t slot)
{
	uint32_t i = q->tpos[slot];
	q->tpos[slot] = NIL;
	struct evq_timer last = q->th[--q->tn];
	if (i < q->tn) {
		if (i > 0 && t_before(&last, &q->th[(i - 1) / 2]))
			t_up(q, i, last);
		else
			t_down(q, i, last);
	}
}

/* A popped timer stays at th[0] until the next operation, so that setting
 * it again at once (a node's next step) is one sift from the top. */
static void settle(struct evq *q)
{
	if (q->fired != NIL) {
		uint32_t slot = q->fired;
		q->fired = NIL;
		t_remove(q, slot);
	}
}

static void t_put(struct evq *q, uint32_t slot, int64_t time_ns, uint64_t seq)
{
	if (q->fired != slot)
		settle(q);
	q->fired = NIL;
	struct evq_timer t = {time_ns, seq, slot};
	uint32_t i = q->tpos[slot];
	if (i == NIL)
		t_up(q, q->tn++, t);
	else if (t_before(&t, &q->th[i]))
		t_up(q, i, t);
	else
		t_down(q, i, t);
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
	if (q->tpos[slot] != NIL)
		t_remove(q, slot);
}

/* --- events ---------------------------------------------------------------- */

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
	size_t i = q->n++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&ev, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = ev;
	return 0;
}

uint64_t evq_push(struct evq *q, int64_t time_ns, int kind, int32_t node, void *ptr)
{
	struct event ev = {time_ns, q->next_seq, kind, node, ptr};
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
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(&last, &q->heap[p]))
			break;
		q->heap[i] = q->heap[p];
		i = p;
	}
	q->heap[i] = last;
}

int evq_pop(struct evq *q, struct event *out)
{
	settle(q);
	if (q->tn > 0) {
		const struct evq_timer *t = &q->th[0];
		if (q->n == 0 || t->time_ns < q->heap[0].time_ns ||
		    (t->time_ns == q->heap[0].time_ns && t->seq < q->heap[0].seq)) {
			*out = (struct event){t->time_ns, t->seq, q->tkind, (int32_t)t->slot, NULL};
			q->fired = t->slot;
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
