/* autoscale: the pools' autoscalers: nodes requested, started, drained and released. */
#ifndef KVSIM_AUTOSCALE_H
#define KVSIM_AUTOSCALE_H

#include <stdint.h>

struct sim;
struct event;

enum { AS_EV_TICK, AS_EV_READY };

/* Sets up the autoscalers of the scenario's pools (s->as stays NULL when
 * none has one): the slots past each pool's starting nodes are off, and
 * the first ticks are scheduled. 0, or -1 (no memory). */
int autoscale_init(struct sim *s);
void autoscale_free(struct sim *s);
void autoscale_ev(struct sim *s, const struct event *ev);
int autoscale_ev_stale(const struct sim *s, const struct event *ev);
/* A draining node i is released once it holds nothing: no request
 * queued, running, swapped out or handed over from it, no KV it holds
 * for another node. */
void autoscale_check_drained(struct sim *s, uint32_t i);
/* Releases the draining nodes that hold nothing any more, whichever way
 * their last request left (a step's end, a hand-over's KV sent, a retry):
 * the loop calls it after every event while some node drains. */
void autoscale_after_event(struct sim *s);

#endif
