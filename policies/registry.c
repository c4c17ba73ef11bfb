/* registry: name -> policy table behind router.policy and `kvsim list policies`. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policies/registry.h"

static const struct pol_ops *const all[] = {
    &pol_round_robin,	  &pol_random,	    &pol_least_loaded, &pol_power_of_two,
    &pol_session_affinity, &pol_prefix_affinity, &pol_consistent_hash, &pol_cache_aware,
    &pol_kv_cost,	  &pol_weighted_scorer, &pol_precise_prefix,
};

const struct pol_ops *pol_find(const char *name)
{
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

const struct pol_ops *pol_find_at(const char *name, const char *path, char *err, size_t errlen)
{
	const struct pol_ops *ops = pol_find(name);
	if (!ops) {
		char names[512];
		pol_names(names, sizeof names);
		snprintf(err, errlen, "%s: unknown policy \"%s\" (known: %s)", path, name, names);
	}
	return ops;
}

const struct pol_ops *const *pol_all(size_t *n)
{
	*n = sizeof all / sizeof *all;
	return all;
}

void pol_names(char *out, size_t outlen)
{
	out[0] = 0;
	for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
		size_t len = strlen(out);
		snprintf(out + len, outlen - len, "%s%s", i ? ", " : "", all[i]->name);
	}
}

const char *pol_session_fallback(const char *name, const cJSON *params)
{
	if (!strcmp(name, "session_affinity"))
		return "as least_loaded would (its fallback for a session it has not seen)";
	if (strcmp(name, "consistent_hash"))
		return NULL;
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(params, "key");
	if (cJSON_IsString(key) && strcmp(key->valuestring, "session"))
		return NULL;
	return "by a hash of each request's own session: a random spread under the load bound";
}

int pol_check_params(const struct cJSON *policy_params, const struct pol_env *env, char *err,
		     size_t errlen)
{
	for (const cJSON *c = policy_params ? policy_params->child : NULL; c; c = c->next) {
		char path[256];
		snprintf(path, sizeof path, "router.policy_params.%s", c->string);
		const struct pol_ops *ops = pol_find(c->string);
		if (!ops) {
			char names[512];
			pol_names(names, sizeof names);
			snprintf(err, errlen, "%s: unknown policy \"%s\" (known: %s)", path,
				 c->string, names);
			return -1;
		}
		void *st = ops->create(c, path, env, err, errlen);
		if (!st)
			return -1;
		if (ops->destroy)
			ops->destroy(st);
	}
	return 0;
}
