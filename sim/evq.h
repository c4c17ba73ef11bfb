/* evq: the future event set, a binary heap ordered by (time, seq). */
#ifndef KVSIM_EVQ_H
#define KVSIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

/* seq only grows, so events with equal times pop in insertion order and a
 * run is deterministic whatever the heap's internal layout. */
struct event {
	int64_t time_ns;
	uint64_t seq;
	int kind;     /* the owner's event type */
	int32_t node; /* a node index, or -1 */
	void *ptr;    /* the owner's payload (a request, say), or NULL */
};

struct evq {
	struct event *heap;
	size_t n, cap;
	uint64_t next_seq;
	uint64_t popped; /* events delivered, for perf figures */
};

void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* Schedules an event; returns its seq, or 0 when memory runs out. The seq
 * is the owner's handle: an owner that schedules a replacement keeps the
 * new seq and skips the old event when it pops. O(log n). */
uint64_t evq_push(struct evq *q, int64_t time_ns, int kind, int32_t node, void *ptr);
/* Schedules a popped event again at time_ns under its own seq (so it keeps
 * its place among events of equal time); it is not counted as delivered. */
int evq_repush(struct evq *q, const struct event *ev, int64_t time_ns);
/* Pops the earliest event into *out; returns 0 when the queue is empty.
 * O(log n). */
int evq_pop(struct evq *q, struct event *out);
/* Number of events scheduled, superseded ones included. */
size_t evq_size(const struct evq *q);

#endif
