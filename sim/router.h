/* router: the request's way: arrival -> route -> retry -> dispatch -> migration -> finish. */
#ifndef KVSIM_ROUTER_H
#define KVSIM_ROUTER_H

#include <stdint.h>

#include "sim/sim_int.h"

/* The routers' state (s->rt): the policy and its states, the column's
 * mechanisms, the routing stream. 0, or 2 with err naming the JSON path
 * (3: out of memory); router_free frees what was made. */
int router_init(struct sim *s, char *err, size_t errlen);
void router_free(struct sim *s);
/* Pulls the source's next open-loop arrival, unless past the horizon. */
void router_pull_source(struct sim *s);
void router_ev_arrival(struct sim *s, const struct event *ev);
void router_ev_dispatch(struct sim *s, const struct event *ev);
void router_prefetch_request(struct sim *s, const struct request *r);

/* Before each event: starts the misses of the next arrival while it is
 * the heap's earliest event, in two stages over two events (prefetches
 * only; router_prefetch_request). Inline: most events have nothing to do. */
static inline void router_prefetch_arrival(struct sim *s)
{
	const struct event *nx = evq_heap_top(&s->q);
	if (nx && nx->kind == EV_ARRIVAL && nx->ptr &&
	    (nx->ptr != s->rt.pf_arrival || nx->ptr != s->rt.pf_second))
		router_prefetch_request(s, nx->ptr);
}
/* r's node failed: route it again from scratch, or fail it. */
void router_retry(struct sim *s, struct request *r);
/* A transfer r waited for has arrived at dst. */
void router_transfer_done(struct sim *s, struct request *r, uint32_t dst);
/* node_hooks.on_done */
void router_on_done(void *ctx, struct request *r, int64_t now_ns);
/* A flow's data arrived: a migration or reload is done, a swap-out is
 * stored, a write-down is in its tier. */
void router_ev_deliver(struct sim *s, const struct event *ev);
/* The workload returned -1: bad input (exit 2) or no memory (3). */
void router_workload_failed(struct sim *s);

/* Empties node i as a crash does: its HBM contents are lost (pins on it
 * break), its requests (queued, running, swapped out, hand-overs waiting
 * for room) are routed again, and it leaves the routers' views. */
void router_empty_node(struct sim *s, uint32_t i);

#endif
