/* registry: workload.kind -> generator. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "workloads/registry.h"

static const struct wl_ops *const all[] = {&wl_open, &wl_chat, &wl_rag, &wl_agent, &wl_mix, &wl_trace,
					  &wl_inference_perf, &wl_vllm_bench};

const struct wl_ops *wl_find(const char *kind)
{
	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		if (!strcmp(all[i]->name, kind))
			return all[i];
	return NULL;
}

const struct wl_ops *const *wl_all(size_t *n)
{
	*n = sizeof all / sizeof *all;
	return all;
}

void wl_names(char *out, size_t outlen)
{
	out[0] = 0;
	for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
		size_t len = strlen(out);
		snprintf(out + len, outlen - len, "%s%s", i ? ", " : "", all[i]->name);
	}
}

void *wl_create(const cJSON *json, const struct wl_env *env, const struct wl_ops **ops, char *err,
		size_t errlen)
{
	char kind[32] = "chat", names[256];
	if (cfg_string(json, "workload", "kind", kind, sizeof kind, err, errlen))
		return NULL;
	*ops = wl_find(kind);
	if (!*ops) {
		wl_names(names, sizeof names);
		snprintf(err, errlen, "workload.kind: unknown workload \"%s\" (known: %s)", kind,
			 names);
		return NULL;
	}
	return (*ops)->create(json, "workload", env, err, errlen);
}
