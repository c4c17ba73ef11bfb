/* select: the router's node-selection helpers: where a mechanism sends a
 * request when the policy's node will not do (the rules in rules.c). */
#ifndef KVSIM_SELECT_H
#define KVSIM_SELECT_H

#include <stdint.h>

struct sim;
struct request;
struct pol_node_view;

/* The healthy node up with the fewest outstanding requests (ties: lowest
 * id), or -1. */
int32_t select_least_outstanding_healthy(const struct sim *s, const struct pol_node_view *v);
/* The up node with the fewest waiting requests under limit (open to new
 * sessions when need_open), healthy ones first when the health filter is
 * on; or -1. */
int32_t select_least_queued(struct sim *s, const struct pol_node_view *v, uint32_t limit,
			    int need_open);
/* r's predicted TTFT on node i: the prefill of the prompt tokens queued
 * there and of r's own, at the cost model's speed, the share of them
 * already cached (the run's prefix hit ratio so far) left out. A lower
 * bound: decode iterations between the chunks are not counted. */
double select_predicted_ttft_s(const struct sim *s, uint32_t i, const struct request *r);
/* The up node (open to new sessions when need_open; healthy when the
 * filter is on and one is) with the shortest predicted wait (the fewest
 * queued prompt tokens), or -1. */
int32_t select_least_predicted(struct sim *s, const struct pol_node_view *v, int need_open);

#endif
