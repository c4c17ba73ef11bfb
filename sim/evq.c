/* evq: binary min-heap of events keyed by (time, seq). */
#include "sim/evq.h"

#include <stdlib.h>
#include <string.h>

static int before(const struct event *a, const struct event *b)
{
	return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

void evq_init(struct evq *q)
{
	memset(q, 0, sizeof *q);
	q->next_seq = 1;
}

void evq_free(struct evq *q)
{
	free(q->heap);
	memset(q, 0, sizeof *q);
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
	struct event e = *ev;
	e.time_ns = time_ns;
	if (insert(q, e))
		return -1;
	q->popped--;
	return 0;
}

static void pop_top(struct evq *q, struct event *out)
{
	*out = q->heap[0];
	struct event last = q->heap[--q->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (q->n > 0)
		q->heap[i] = last;
}

int evq_pop(struct evq *q, struct event *out)
{
	if (q->n == 0)
		return 0;
	pop_top(q, out);
	q->popped++;
	return 1;
}

size_t evq_size(const struct evq *q)
{
	return q->n;
}
