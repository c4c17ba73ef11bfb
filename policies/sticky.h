/* sticky: the key -> node affinity rule shared by session and prefix affinity. */
#ifndef KVSIM_STICKY_H
#define KVSIM_STICKY_H

#include <stddef.h>
#include <stdint.h>

#include "base/hmap.h"

struct cJSON;
struct pol_view;
struct pol_decision;
struct pol_env;

/* The seed article's rule: keep key -> node; stay while the node's load
 * (outstanding requests) is below threshold; else move to the least-loaded
 * node under threshold (ties: lowest id; the decision's reason then says
 * "threshold"); if none is under threshold, take the least-loaded node
 * anyway (when_full "least_loaded", the default: the router's admission
 * control decides what to shed) or shed with reason "capacity" (when_full
 * "shed").
 *
 * The map keeps at most max_keys keys in two generations (current and
 * previous): a hit in the previous generation is promoted, and when the
 * current one fills up the previous is dropped: approximately LRU, O(1). */
struct sticky {
	uint32_t threshold;
	int shed_when_full;
	size_t max_keys;
	struct hmap cur, prev; /* key -> node + 1 */
};

/* Reads threshold (default: the engine's max_num_seqs, from env),
 * when_full and max_keys from params (errors name path); extra lists
 * further keys the caller reads itself (NULL-terminated). */
int sticky_init(struct sticky *s, const struct cJSON *params, const char *path,
		const char *const *extra, const struct pol_env *env, char *err, size_t errlen);
void sticky_free(struct sticky *s);
/* Decides for key; does not change the map. */
void sticky_route(struct sticky *s, const struct pol_view *v, uint64_t key, struct pol_decision *d);
/* Prefetches key's slot in the map (sticky_route's first probe). */
void sticky_prefetch(const struct sticky *s, uint64_t key);
/* Records key -> node. */
void sticky_set(struct sticky *s, uint64_t key, int32_t node);
void sticky_forget(struct sticky *s, uint64_t key);

#endif
