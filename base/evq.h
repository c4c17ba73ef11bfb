/* evq: the future event set: a heap ordered by (time, seq), and per-slot timers. */
/* Timers (a node's step end) pop in the same order as pushed events. */
#ifndef KVSIM_EVQ_H
#define KVSIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

/* seq only grows, so pushed events with equal times pop in insertion order
 * and a run is deterministic whatever the heap's internal layout. Timers
 * (below) of a time pop before pushed events of that time, in slot order. */
struct event {
	int64_t time_ns;
	uint64_t seq;
	uint16_t kind; /* the owner's event type (the index of its handler) */
	uint16_t tag;  /* a detail its kind names (a flow's purpose, a fault's phase), or 0 */
	union {        /* what the event is about, named as its kind says */
		int32_t node; /* a node (a timer's event: its slot), or -1 */
		uint32_t id;  /* another index: a flow, a fault */
	};
	void *ptr; /* the owner's payload (a request, say), or NULL */
};
/* The heap moves events by value: 32 bytes, two to a cache line. */
_Static_assert(sizeof(struct event) == 32, "struct event grew past 32 bytes");

/* A timer: a slot's one pending event (a node's step end), kept in a
 * winner tree beside the event heap. Setting it again replaces the event in
 * place, where a pushed event would stay in the heap until it popped stale.
 * Timers of one time pop in slot order, before pushed events of that time:
 * not by when they were set, which differs between a decode span and one
 * event per iteration (README, What is modelled). */
struct evq_key {
	int64_t time_ns;
	uint64_t seq; /* UINT64_MAX (time INT64_MAX): not set */
};

struct evq {
	struct event *heap;
	size_t n, cap;
	uint64_t next_seq;
	uint64_t popped; /* events delivered, for perf figures */
	/* timers (evq_timers): tkey[slot] for tp slots (n_slots rounded up
	 * to a power of two), tn of them set; tw[i] for 1 <= i < tp is the
	 * earliest slot under node i of a complete binary tree whose leaf
	 * tp + s is slot s (tw[1]: the earliest of all) */
	struct evq_key *tkey;
	uint32_t *tw;
	uint32_t tp, tn, n_slots;
	uint32_t fired; /* the timer just popped, still set, or UINT32_MAX */
	int tkind;
};

/* The earliest event in the heap (timers aside), or NULL: a hint of what
 * comes soon, for prefetching its payload. */
static inline const struct event *evq_heap_top(const struct evq *q)
{
	return q->n ? &q->heap[0] : NULL;
}
void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* Schedules an event (kind, tag, node as in struct event); returns its
 * seq, or 0 when memory runs out. The seq
 * is the owner's handle: an owner that schedules a replacement keeps the
 * new seq and skips the old event when it pops. O(log n). */
uint64_t evq_push_tag(struct evq *q, int64_t time_ns, int kind, uint16_t tag, int32_t node,
		      void *ptr);
/* evq_push_tag with tag 0. */
static inline uint64_t evq_push(struct evq *q, int64_t time_ns, int kind, int32_t node, void *ptr)
{
	return evq_push_tag(q, time_ns, kind, 0, node, ptr);
}
/* Schedules a popped event again at time_ns under its own seq (so it keeps
 * its place among events of equal time); it is not counted as delivered.
 * A popped timer's event is set again as that timer. */
int evq_repush(struct evq *q, const struct event *ev, int64_t time_ns);
/* Gives q n_slots timers whose events pop as kind, with node = the slot
 * (evq_repush takes an event of that kind for its slot's timer: push no
 * other events of it). Returns -1 when memory runs out. */
int evq_timers(struct evq *q, uint32_t n_slots, int kind);
/* Sets slot's timer to time_ns under a new seq (the owner's handle),
 * replacing any pending one. Returns the seq, or 0 when the slot is out of
 * range. O(log slots). */
uint64_t evq_timer_set(struct evq *q, uint32_t slot, int64_t time_ns);
/* Clears slot's timer, if set. */
void evq_timer_cancel(struct evq *q, uint32_t slot);
/* Pops the earliest event into *out; returns 0 when the queue is empty.
 * O(log n). */
int evq_pop(struct evq *q, struct event *out);
/* Number of events scheduled (superseded pushed ones included), timers set
 * included. */
size_t evq_size(const struct evq *q);

#endif
