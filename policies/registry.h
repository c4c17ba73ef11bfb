/* registry: the policies compiled into kvsim (see registry.c). */
#ifndef KVSIM_POLICY_REGISTRY_H
#define KVSIM_POLICY_REGISTRY_H

#include "policies/policy.h"

extern const struct pol_ops pol_round_robin;
extern const struct pol_ops pol_random;
extern const struct pol_ops pol_least_loaded;
extern const struct pol_ops pol_session_affinity;
extern const struct pol_ops pol_prefix_affinity;
extern const struct pol_ops pol_power_of_two;
extern const struct pol_ops pol_consistent_hash;
extern const struct pol_ops pol_cache_aware;
extern const struct pol_ops pol_kv_cost;
extern const struct pol_ops pol_weighted_scorer;
extern const struct pol_ops pol_precise_prefix;

#endif
