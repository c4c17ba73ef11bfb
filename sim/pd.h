/* pd: disaggregated prefill/decode: the decode node's choice, its reserved
 * KV, the hand-over flow, fail-over. */
#ifndef KVSIM_PD_H
#define KVSIM_PD_H

#include <stddef.h>
#include <stdint.h>

struct sim;
struct request;

/* The disaggregation state (s->pd): per node, the blocks held for
 * hand-overs; when the cluster has a prefill pool, the decode policy
 * (router.decode_policy) and the queues of hand-overs waiting for room.
 * 0, or 2 with err naming the JSON path, 3 out of memory. pd_free hands
 * back the waiting requests (after an error) and frees. */
int pd_init(struct sim *s, char *err, size_t errlen);
void pd_free(struct sim *s);

/* The router chose node dst for r (after its checks). Returns the node r
 * goes to: dst, with r made a PD_PREFILL request when dst is in a prefill
 * pool; or, under router.disagg.min_prefill_tokens, a decode-capable node
 * that prefills it itself; -1 when no decode-capable node could take it
 * (r is to be failed: "exceeds_kv_capacity"). */
int32_t pd_route(struct sim *s, struct request *r, uint32_t dst);

/* r's prefill ended on its prefill node (PD_PREFILL, from the node's
 * on_done): it becomes PD_DECODE and goes to a decode node, its KV sent
 * when room for it is reserved there. Returns 0, or -1 when it cannot go
 * on (no decode node up): the caller routes it again (router_retry). */
int pd_handoff(struct sim *s, struct request *r);

/* r's KV flow has arrived at decode node d: r joins d's queue. Returns 0,
 * or -1 when its KV was lost on the way (both ends failed): the caller
 * routes it again. */
int pd_delivered(struct sim *s, struct request *r, uint32_t d);

/* A decode node's step ended: hand-overs waiting for room on it may go. */
void pd_try_waiting(struct sim *s, uint32_t i);

/* Node i crashed (after its views went down): hand-overs waiting for room
 * on it choose another decode node; what it held for others is gone
 * (their owners find out by its crash count). Returns how many could not
 * go on, left in s->pd.fail for the caller to route again. */
uint32_t pd_node_down(struct sim *s, uint32_t i);

/* r is routed again from scratch (its node failed): KV it held as a
 * hand-over is let go and it is a plain request again. */
void pd_drop(struct sim *s, struct request *r);

/* A completed request's TTFT split (sim.ttft_split). */
void pd_record(struct sim *s, const struct request *r);

#endif
