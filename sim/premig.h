/* premig: preemptive migration (router.watermark_action "migrate"): a node past the KV
 * watermark moves its idle sessions' KV, coldest first, to nodes with room. */
#ifndef KVSIM_PREMIG_H
#define KVSIM_PREMIG_H

#include <stdint.h>

#include "sim/sim_int.h"

/* Sets the mechanism up when the column runs it and the cluster can (a KV
 * transfer path, prefix caching, two nodes, a watermark below 1); s->pm
 * stays NULL otherwise. 0, or -1 when memory runs out. */
int premig_init(struct sim *s);
void premig_free(struct sim *s);
/* rec's session is between turns (no request of it in the system), next
 * its pending turn; its KV is where rec->last_node says. */
void premig_idle_(struct sim *s, struct session_rec *rec, struct request *next);
static inline void premig_idle(struct sim *s, struct session_rec *rec, struct request *next)
{
	if (s->pm)
		premig_idle_(s, rec, next);
}
/* EV_WATERMARK: the router's periodic check of the nodes' KV. */
void premig_ev_tick(struct sim *s, const struct event *ev);
/* A move's data has arrived (EV_DELIVER of a FLOW_PREMIG flow): slot is
 * the event's node field. */
void premig_delivered(struct sim *s, uint32_t slot);

#endif
