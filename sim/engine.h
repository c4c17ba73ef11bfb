/* engine: putting work on nodes: queues and kicks, pinned KV, swap and reloads from the host tiers. */
#ifndef KVSIM_ENGINE_H
#define KVSIM_ENGINE_H

#include <stdint.h>

struct sim;
struct request;
struct kv_match;

/* The engines' swap queues (s->eng): 0, or -1 when memory runs out.
 * engine_free hands back the requests still swapped out (after an
 * error) and frees. */
int engine_init(struct sim *s);
void engine_free(struct sim *s);
/* Starts node i's next step if it is idle, and what follows a change in
 * its queue (offload, views, swap-ins). */
void engine_kick(struct sim *s, uint32_t i);
/* Enqueues r on node i (at the head for a swapped-in request). */
void engine_enqueue(struct sim *s, uint32_t i, struct request *r);
/* Node i's decode span ends now, its step end moved earlier. */
void engine_cut_span(struct sim *s, uint32_t i);
/* r holds match m's blocks on node i; engine_unpin lets them go (-1 if
 * the node crashed meanwhile: the pin went with its cache). */
void engine_pin(struct sim *s, struct request *r, uint32_t i, const struct kv_match *m);
int engine_unpin(struct sim *s, struct request *r, uint32_t i);
/* Prefix blocks the tiers hold come back before prefill; 1 if started. */
int engine_maybe_reload(struct sim *s, struct request *r, uint32_t dst);
/* node_hooks.on_swap_out */
void engine_on_swap_out(void *ctx, struct request *r, int64_t now_ns);
/* Swapped-out requests of node i come back while it has room. */
void engine_try_swap_in(struct sim *s, uint32_t i);

#endif
