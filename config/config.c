/* config: scenario JSON -> validated struct scenario: reading the file,
 * --set, the top-level keys, router, faults, slo and output (the cluster's
 * keys: pools_cfg.c and cluster_cfg.c). */
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "base/embedded.h"
#include "config/pools_cfg.h"

int cfg_read_json(const char *file, cJSON **out, char *err, size_t errlen)
{
	char *text = NULL;
	const char *src = kv_embedded_default_scenario;
	const char *label = "(embedded default scenario)";
	size_t len = strlen(src);
	if (file) {
		text = cfg_slurp(file, &len, err, errlen);
		if (!text)
			return -1;
		src = text;
		label = file;
	}
	if (strlen(src) != len) {
		snprintf(err, errlen, "%s: contains a NUL byte; expected a JSON text", label);
		free(text);
		return -1;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(src, &end, 1);
	if (!root) {
		const char *at = end ? end : cJSON_GetErrorPtr();
		int line = 1, col = 1;
		for (const char *p = src; at && p < at && *p; p++) {
			if (*p == '\n')
				line++, col = 1;
			else
				col++;
		}
		if (len == 0 || strspn(src, " \t\r\n") == len)
			snprintf(err, errlen, "%s: empty file; expected a JSON object", label);
		else
			snprintf(err, errlen, "%s:%d:%d: invalid JSON; expected a JSON object", label,
				 line, col);
		free(text);
		return -1;
	}
	free(text);
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s: expected a JSON object at the top level", label);
		cJSON_Delete(root);
		return -1;
	}
	char inner[768];
	if (cfg_check_unique_keys(root, "", inner, sizeof inner)) {
		snprintf(err, errlen, "%s: %s", label, inner);
		cJSON_Delete(root);
		return -1;
	}
	*out = root;
	return 0;
}

/* Splits a --set path step "name" or "name[i][j]..." at its first '[':
 * *idx gets where the indexes start (NULL: none). -1 when the brackets
 * are not whole numbers in [..]. */
static int set_step(char *tok, char **idx)
{
	char *b = strchr(tok, '[');
	*idx = b;
	if (!b)
		return 0;
	if (b == tok)
		return -1;
	for (char *p = b; *p;) {
		if (*p != '[' || !(p[1] >= '0' && p[1] <= '9'))
			return -1;
		p += 2;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p != ']')
			return -1;
		p++;
	}
	return 0;
}

/* The next index of a step at *idx ("[3]..."), *idx moved past it. */
static long set_index(char **idx)
{
	char *end;
	long i = strtol(*idx + 1, &end, 10);
	*idx = end + 1;
	return i;
}

int cfg_apply_set(cJSON *root, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment) {
		snprintf(err, errlen, "--set %s: expected PATH=VALUE, e.g. cluster.nodes=16",
			 assignment);
		return -1;
	}
	char path[256];
	size_t plen = (size_t)(eq - assignment);
	if (plen >= sizeof path) {
		snprintf(err, errlen, "--set: path too long");
		return -1;
	}
	memcpy(path, assignment, plen);
	path[plen] = 0;
	/* JSON only when the whole value is JSON: "10m" and "4x" are the
	 * strings they read as (and rejected as such, as in a file), never the
	 * number cJSON would read from their start. */
	cJSON *val = cJSON_ParseWithOpts(eq + 1, NULL, 1);
	if (!val)
		val = cJSON_CreateString(eq + 1);
	if (!val) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char inner[768];
	if (cfg_check_unique_keys(val, path, inner, sizeof inner)) {
		snprintf(err, errlen, "--set %s: %s", assignment, inner);
		cJSON_Delete(val);
		return -1;
	}
	/* where: the path walked so far, for messages ("cluster.pools[1]") */
	char where[256] = "";
	cJSON *obj = root;
	char *save = NULL, *tok = strtok_r(path, ".", &save);
	while (tok) {
		char *next = strtok_r(NULL, ".", &save), *idx;
		if (set_step(tok, &idx)) {
			snprintf(err, errlen, "--set %s: %s: expected a key, or a key and list "
					      "indexes such as pools[0]", assignment, tok);
			cJSON_Delete(val);
			return -1;
		}
		if (idx)
			*idx = 0; /* tok is the key; the indexes follow it */
		size_t wl = strlen(where);
		snprintf(where + wl, sizeof where - wl, "%s%s", wl ? "." : "", tok);
		if (!next && !idx) {
			if (cJSON_GetObjectItemCaseSensitive(obj, tok))
				cJSON_ReplaceItemInObjectCaseSensitive(obj, tok, val);
			else
				cJSON_AddItemToObject(obj, tok, val);
			return 0;
		}
		cJSON *child = cJSON_GetObjectItemCaseSensitive(obj, tok);
		if (idx) {
			/* A list is indexed, never made: an index names an item
			 * that exists. */
			*idx = '[';
			while (*idx) {
				long i = set_index(&idx);
				int n = cJSON_IsArray(child) ? cJSON_GetArraySize(child) : 0;
				if (!cJSON_IsArray(child) || i >= n) {
					if (!cJSON_IsArray(child))
						snprintf(err, errlen, "--set %s: %s: %s", assignment, where,
							 child ? "not a list" : "missing (an index names an item "
										"of a list that exists)");
					else
						snprintf(err, errlen, "--set %s: %s[%ld]: no such item (the list "
								      "has %d)", assignment, where, i, n);
					cJSON_Delete(val);
					return -1;
				}
				wl = strlen(where);
				snprintf(where + wl, sizeof where - wl, "[%ld]", i);
				if (!next && !*idx) {
					cJSON_ReplaceItemInArray(child, (int)i, val);
					return 0;
				}
				child = cJSON_GetArrayItem(child, (int)i);
			}
		} else if (!child) {
			child = cJSON_AddObjectToObject(obj, tok);
		}
		if (!cJSON_IsObject(child)) {
			const char *step = strrchr(where, '.'); /* this step: "nodes", "pools[1]" */
			snprintf(err, errlen, "--set %s: %s is not an object", assignment,
				 step ? step + 1 : where);
			cJSON_Delete(val);
			return -1;
		}
		obj = child;
		tok = next;
	}
	cJSON_Delete(val);
	snprintf(err, errlen, "--set %s: empty path", assignment);
	return -1;
}

static const cJSON *sub(const cJSON *obj, const char *key)
{
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* cluster: its pools (pools_cfg.c); scenario.cluster is pool 0's with the
 * nodes of all. */
static int load_cluster(struct scenario *s, const cJSON *c, char *err, size_t errlen)
{
	/* One idle power for the thermal model and the energy figures: the
	 * GPU's, from the catalog. */
	if (sub(sub(c, "thermal"), "idle_power_frac")) {
		snprintf(err, errlen,
			 "cluster.thermal.idle_power_frac: the idle power is the GPU's catalog "
			 "figure, which the energy figures use too (kvsim list gpus); remove "
			 "this key, or set catalog.gpus.<GPU>.power.idle_w (W per GPU) instead");
		return -1;
	}
	if (cfg_pools_load(&s->cat, s->base_dir, c, &s->pools, &s->n_pools, &s->disaggregated, err,
			   errlen))
		return -1;
	/* Pool 0's keys stand for the cluster's; its owned cost tables are
	 * shared, not copied (cfg_scenario_free frees them as pool 0's). */
	const struct pool_cfg *last = &s->pools[s->n_pools - 1];
	s->cluster = s->pools[0].cl;
	s->cluster.nodes = last->first_node + last->cl.nodes;
	s->kv_blocks_per_node = s->pools[0].kv_blocks_per_node;
	s->weight_bytes = s->pools[0].weight_bytes;
	return 0;
}

/* router.policy_params kept (the simulator checks every entry against its
 * policy), and the entry of the policy in use applied: its keys over
 * router.params, so that neither is ignored. 0, or -1 (no memory). */
static int own_policy_params(struct router_cfg *rc, const cJSON *pp, char *err, size_t errlen)
{
	snprintf(rc->params_path, sizeof rc->params_path, "router.params");
	if (!pp)
		return 0;
	rc->policy_params = cJSON_Duplicate(pp, 1);
	if (!rc->policy_params)
		goto oom;
	const cJSON *mine = cJSON_GetObjectItemCaseSensitive(pp, rc->policy);
	if (!mine)
		return 0;
	if (!rc->params) {
		snprintf(rc->params_path, sizeof rc->params_path, "router.policy_params.%s",
			 rc->policy);
		if (!(rc->params = cJSON_CreateObject()))
			goto oom;
	}
	for (const cJSON *c = mine->child; c; c = c->next) {
		cJSON *v = cJSON_Duplicate(c, 1);
		if (!v)
			goto oom;
		/* router.health-like objects merge field by field, as router.<key>
		 * and policy_params do: the policy's entry wins where both give one */
		cJSON *had = cJSON_GetObjectItemCaseSensitive(rc->params, c->string);
		if (mech_is_key(c->string) && cJSON_IsObject(had) && cJSON_IsObject(v)) {
			for (cJSON *f = had->child; f; f = f->next)
				if (!cJSON_GetObjectItemCaseSensitive(v, f->string)) {
					cJSON *fv = cJSON_Duplicate(f, 1);
					if (!fv || !cJSON_AddItemToObject(v, f->string, fv)) {
						cJSON_Delete(fv);
						cJSON_Delete(v);
						goto oom;
					}
				}
		}
		cJSON_DeleteItemFromObjectCaseSensitive(rc->params, c->string);
		if (!cJSON_AddItemToObject(rc->params, c->string, v)) {
			cJSON_Delete(v);
			goto oom;
		}
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* A disaggregated request's decode node: router.decode_policy (default
 * least_loaded, by KV in use: docs/design.md's "least-loaded by KV blocks"; KV
 * utilisation, used blocks over capacity, compares pools of different
 * GPUs fairly) with router.policy_params.<decode_policy> (its mechanism
 * keys already stripped) as its params; and router.disagg. The policy's
 * name and params are checked by the simulator, against the registry. */
static int load_decode(struct router_cfg *rc, const cJSON *r, char *err, size_t errlen)
{
	static const char *const disagg_keys[] = {"min_prefill_tokens", NULL};
	snprintf(rc->decode_policy, sizeof rc->decode_policy, "least_loaded");
	if (cfg_string(r, "router", "decode_policy", rc->decode_policy, sizeof rc->decode_policy,
		       err, errlen))
		return -1;
	const cJSON *mine = sub(rc->policy_params, rc->decode_policy);
	snprintf(rc->decode_params_path, sizeof rc->decode_params_path, "router.decode_policy");
	if (mine)
		snprintf(rc->decode_params_path, sizeof rc->decode_params_path,
			 "router.policy_params.%s", rc->decode_policy);
	if (mine && !(rc->decode_params = cJSON_Duplicate(mine, 1)))
		goto oom;
	/* least_loaded measures KV blocks (docs/design.md, section 9: "least-loaded by KV
	 * blocks") unless its entry says otherwise: the prompt blocks the
	 * router sent each node and has not seen finish, over its capacity.
	 * The router's own count, as Dynamo's router keeps active blocks,
	 * needs no engine report; over capacity, GPUs of different memory
	 * compare fairly. */
	if (!strcmp(rc->decode_policy, "least_loaded") && !sub(rc->decode_params, "metric")) {
		if (!rc->decode_params && !(rc->decode_params = cJSON_CreateObject()))
			goto oom;
		if (!cJSON_AddStringToObject(rc->decode_params, "metric", "kv_blocks"))
			goto oom;
	}
	/* llm-d's P/D threshold (pd-profile-handler's threshold, 0 in its P/D
	 * guide): a request with fewer prompt tokens to prefill is prefilled
	 * where it decodes; 0 disaggregates every request a prefill node is
	 * picked for */
	const cJSON *d = sub(r, "disagg");
	int64_t v = 0;
	if (cfg_check_keys(d, "router.disagg", disagg_keys, err, errlen) ||
	    cfg_int(d, "router.disagg", "min_prefill_tokens", 0, 100000000, &v, err, errlen))
		return -1;
	rc->min_prefill_tokens = (int)v;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int load_router(struct scenario *s, const cJSON *r, char *err, size_t errlen)
{
	/* the router's own keys, then the mechanisms' */
	static const char *const own[] = {"policy", "params", "kv_watermark", "max_queue_per_node",
					  "store", "replicas", "max_retries", "policy_params",
					  "new_session_queue_frac", "store_read_ms", "store_write_ms",
					  "hash_ns_per_token", "decode_policy", "disagg"};
	enum { N_OWN = sizeof own / sizeof own[0], N_MAX = N_OWN + MECH_MAX_KEYS };
	const char *keys[N_MAX + 1];
	memcpy(keys, own, sizeof own);
	size_t n = N_OWN + mech_key_names(keys + N_OWN, N_MAX - N_OWN);
	keys[n < N_MAX ? n : N_MAX] = NULL;
	struct router_cfg *rc = &s->router;
	if (cfg_check_keys(r, "router", keys, err, errlen))
		return -1;
	snprintf(rc->policy, sizeof rc->policy, "session_affinity");
	int64_t q = 512;
	if (cfg_string(r, "router", "policy", rc->policy, sizeof rc->policy, err, errlen) ||
	    mech_parse((cJSON *)r, "router", 0, &rc->mech_all, err, errlen) ||
	    cfg_int(r, "router", "max_queue_per_node", 1, 100000000, &q, err, errlen))
		return -1;
	rc->max_queue_per_node = (int)q;
	const cJSON *params = sub(r, "params");
	if (cfg_expect_object(params, "router.params", err, errlen))
		return -1;
	if (params) {
		rc->params = cJSON_Duplicate(params, 1);
		if (!rc->params) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	const cJSON *pp = sub(r, "policy_params");
	if (cfg_expect_object(pp, "router.policy_params", err, errlen))
		return -1;
	for (const cJSON *c = pp ? pp->child : NULL; c; c = c->next) {
		char p[256];
		snprintf(p, sizeof p, "router.policy_params.%s", c->string);
		if (cfg_expect_object(c, p, err, errlen))
			return -1;
	}
	if (own_policy_params(rc, pp, err, errlen))
		return -1;
	/* Mechanism keys among a policy's parameters are the router's: each
	 * entry's are checked, the policy in use's kept, and none reaches a
	 * policy. */
	for (cJSON *c = rc->policy_params ? rc->policy_params->child : NULL; c; c = c->next) {
		char p[256];
		struct mech_set unused;
		snprintf(p, sizeof p, "router.policy_params.%s", c->string);
		if (mech_parse(c, p, 1, &unused, err, errlen))
			return -1;
	}
	if (mech_parse(rc->params, rc->params_path, 1, &rc->mech_own, err, errlen) ||
	    load_decode(rc, r, err, errlen))
		return -1;
	static const char *const stores[] = {"local", "redis", "etcd", NULL};
	/* Typical figures: a Redis GET/SET in the same data centre ~0.2 ms;
	 * an etcd linearizable read ~1 ms, a write (raft commit) ~2 ms. */
	static const double store_read_ms[] = {0, 0.2, 1.0}, store_write_ms[] = {0, 0.2, 2.0};
	int store = STORE_LOCAL;
	int64_t replicas = 1, retries = 3;
	double hash_ns = 5;
	rc->kv_watermark = 0.85;
	rc->new_session_queue_frac = 0.75;
	if (cfg_number(r, "router", "kv_watermark", 0.01, 1, &rc->kv_watermark, err, errlen) ||
	    cfg_number(r, "router", "new_session_queue_frac", 0, 1, &rc->new_session_queue_frac,
		       err, errlen) ||
	    cfg_enum(r, "router", "store", stores, &store, err, errlen) ||
	    cfg_int(r, "router", "replicas", 1, 1024, &replicas, err, errlen) ||
	    cfg_int(r, "router", "max_retries", 0, 1000, &retries, err, errlen) ||
	    cfg_number(r, "router", "hash_ns_per_token", 0, 1e9, &hash_ns, err, errlen))
		return -1;
	double rd = store_read_ms[store], wr = store_write_ms[store];
	if (cfg_number(r, "router", "store_read_ms", 0, 1e9, &rd, err, errlen) ||
	    cfg_number(r, "router", "store_write_ms", 0, 1e9, &wr, err, errlen))
		return -1;
	rc->store = (enum store_kind)store;
	rc->store_read_s = rd * 1e-3;
	rc->store_write_s = wr * 1e-3;
	rc->hash_s_per_token = hash_ns * 1e-9;
	rc->replicas = (int)replicas;
	rc->max_retries = (int)retries;
	return 0;
}

/* faults: [{kind, node|server, at_s, ...}], checked against the cluster. */
static int load_faults(struct scenario *s, const cJSON *f, char *err, size_t errlen)
{
	static const char *const kinds[] = {"crash", "slow", "link", "cooling", NULL};
	static const char *const crash_keys[] = {"kind", "node", "at_s", "recover_after_s", NULL};
	static const char *const slow_keys[] = {"kind", "node", "at_s", "duration_s", "factor", NULL};
	static const char *const link_keys[] = {"kind", "server", "at_s", "duration_s", "factor",
						NULL};
	static const char *const cool_keys[] = {"kind", "server", "at_s", "duration_s", "ambient_c",
						NULL};
	static const char *const *const keys[] = {crash_keys, slow_keys, link_keys, cool_keys};
	if (!f)
		return 0;
	if (!cJSON_IsArray(f)) {
		snprintf(err, errlen, "faults: expected an array of fault objects");
		return -1;
	}
	int n = cJSON_GetArraySize(f);
	s->faults = calloc(n > 0 ? (size_t)n : 1, sizeof *s->faults);
	if (!s->faults) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* servers are numbered pool by pool, as nodes are */
	const struct pool_cfg *last = &s->pools[s->n_pools - 1];
	int servers = last->first_server + last->n_servers;
	int k = 0;
	for (const cJSON *e = f->child; e; e = e->next, k++) {
		char p[64];
		snprintf(p, sizeof p, "faults[%d]", k);
		struct fault_cfg *fc = &s->faults[k];
		int kind = -1;
		if (cfg_expect_object(e, p, err, errlen))
			return -1;
		if (!cJSON_GetObjectItemCaseSensitive(e, "kind")) {
			snprintf(err, errlen, "%s.kind: missing (expected crash, slow, link or cooling)", p);
			return -1;
		}
		if (cfg_enum(e, p, "kind", kinds, &kind, err, errlen) ||
		    cfg_check_keys(e, p, keys[kind], err, errlen))
			return -1;
		fc->kind = (enum fault_kind)kind;
		const char *tkey = kind <= FAULT_SLOW ? "node" : "server";
		int64_t hi = kind <= FAULT_SLOW ? s->cluster.nodes - 1 : servers - 1, target = -1;
		if (!cJSON_GetObjectItemCaseSensitive(e, tkey) ||
		    !cJSON_GetObjectItemCaseSensitive(e, "at_s")) {
			snprintf(err, errlen, "%s: a %s fault needs \"%s\" and \"at_s\"", p,
				 kinds[kind], tkey);
			return -1;
		}
		fc->duration_s = -1;
		fc->factor = 1;
		fc->ambient_c = s->cluster.thermal.ambient_c;
		if (cfg_int(e, p, tkey, 0, hi, &target, err, errlen) ||
		    cfg_number(e, p, "at_s", 0, 1e9, &fc->at_s, err, errlen) ||
		    cfg_number(e, p, kind == FAULT_CRASH ? "recover_after_s" : "duration_s", 0, 1e9,
			       &fc->duration_s, err, errlen) ||
		    cfg_number(e, p, "factor", 1e-6, 1, &fc->factor, err, errlen) ||
		    cfg_number(e, p, "ambient_c", -50, 200, &fc->ambient_c, err, errlen))
			return -1;
		fc->target = (int)target;
		if (kind != FAULT_CRASH && fc->duration_s < 0) {
			snprintf(err, errlen, "%s.duration_s: missing (a %s fault needs how long it lasts)",
				 p, kinds[kind]);
			return -1;
		}
		if (kind == FAULT_COOLING && !s->cluster.thermal.enabled) {
			snprintf(err, errlen, "%s: a cooling fault acts through the thermal model; set "
					      "cluster.thermal.enabled to true",
				 p);
			return -1;
		}
	}
	s->n_faults = n;
	return 0;
}

int cfg_scenario_load(struct scenario *s, const cJSON *root, const char *catalog_file, char *err,
		      size_t errlen)
{
	return cfg_scenario_load_from(s, root, catalog_file, NULL, err, errlen);
}

/* The client block (docs/model.md, "The client's view"); its defaults and
 * their sources are listed there. */
static int load_client(struct client_cfg *c, const cJSON *o, char *err, size_t errlen)
{
	static const char *const keys[] = {"api_server_ms", "tokenize_us_per_token",
					   "first_chunk_ms", "messages_per_token", NULL};
	*c = (struct client_cfg){0, 1.0, 10.0, 0.5, 1.0};
	if (!o)
		return 0;
	c->on = 1;
	return cfg_expect_object(o, "client", err, errlen) ||
			       cfg_check_keys(o, "client", keys, err, errlen) ||
			       cfg_number(o, "client", "api_server_ms", 0, 1e6, &c->api_server_ms, err,
					  errlen) ||
			       cfg_number(o, "client", "tokenize_us_per_token", 0, 1e6,
					  &c->tokenize_us_per_token, err, errlen) ||
			       cfg_number(o, "client", "first_chunk_ms", 0, 1e6, &c->first_chunk_ms,
					  err, errlen) ||
			       cfg_number(o, "client", "messages_per_token", 0.01, 1e3,
					  &c->messages_per_token, err, errlen)
		       ? -1
		       : 0;
}

int cfg_scenario_load_from(struct scenario *s, const cJSON *root, const char *catalog_file,
			   const char *source, char *err, size_t errlen)
{
	static const char *const keys[] = {"name",   "seed",   "duration_s", "cluster",
					   "router", "workload", "faults",   "slo",
					   "output", "catalog",  "client",   NULL};
	memset(s, 0, sizeof *s);
	cfg_scenario_set_source(s, source);
	if (cfg_check_keys(root, "", keys, err, errlen) || cfg_check_utf8(root, "", err, errlen))
		return -1;
	if (catalog_load_builtin(&s->cat, err, errlen))
		return -1;
	if (catalog_file) {
		cJSON *cj = NULL;
		char inner[768];
		if (cfg_read_json(catalog_file, &cj, err, errlen))
			goto fail;
		int rc = cfg_check_utf8(cj, "", inner, sizeof inner) ||
			 catalog_merge(&s->cat, cj, "", inner, sizeof inner);
		cJSON_Delete(cj);
		if (rc) {
			snprintf(err, errlen, "%s: %s", catalog_file, inner);
			goto fail;
		}
	}
	if (catalog_merge(&s->cat, sub(root, "catalog"), "catalog", err, errlen))
		goto fail;

	snprintf(s->name, sizeof s->name, "default");
	int64_t seed = 1;
	s->duration_s = 600;
	if (cfg_string(root, "", "name", s->name, sizeof s->name, err, errlen) ||
	    cfg_int(root, "", "seed", 0, (int64_t)1 << 53, &seed, err, errlen) ||
	    cfg_number(root, "", "duration_s", 1e-6, 1e9, &s->duration_s, err, errlen))
		goto fail;
	s->seed = (uint64_t)seed;
	if (load_cluster(s, sub(root, "cluster"), err, errlen) ||
	    load_router(s, sub(root, "router"), err, errlen))
		goto fail;

	const cJSON *w = sub(root, "workload");
	if (cfg_expect_object(w, "workload", err, errlen))
		goto fail;
	s->workload = w ? cJSON_Duplicate(w, 1) : cJSON_CreateObject();
	if (!s->workload) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}

	if (load_faults(s, sub(root, "faults"), err, errlen) ||
	    load_client(&s->client, sub(root, "client"), err, errlen))
		goto fail;
	static const char *const slo_keys[] = {"ttft_p99_s", "tpot_p99_s", NULL};
	static const char *const out_keys[] = {"timeseries_interval_s", NULL};
	const cJSON *slo = sub(root, "slo"), *out = sub(root, "output");
	s->slo_ttft_p99_s = 2.0;
	s->slo_tpot_p99_s = 0.1;
	s->timeseries_interval_s = 1.0;
	if (cfg_check_keys(slo, "slo", slo_keys, err, errlen) ||
	    cfg_number(slo, "slo", "ttft_p99_s", 1e-9, 1e9, &s->slo_ttft_p99_s, err, errlen) ||
	    cfg_number(slo, "slo", "tpot_p99_s", 1e-9, 1e9, &s->slo_tpot_p99_s, err, errlen) ||
	    cfg_check_keys(out, "output", out_keys, err, errlen) ||
	    cfg_number(out, "output", "timeseries_interval_s", 1e-3, 1e9,
		       &s->timeseries_interval_s, err, errlen))
		goto fail;
	return 0;
fail:
	cfg_scenario_free(s);
	return -1;
}

void cfg_scenario_free(struct scenario *s)
{
	/* scenario.cluster shares pool 0's tables: each pool's are freed once */
	if (s->pools) {
		for (int i = 0; i < s->n_pools; i++)
			cfg_cost_free(&s->pools[i].cl.cost);
		s->cluster.cost.profile = NULL;
		s->cluster.cost.attn_table = s->cluster.cost.attn_table_tp = NULL;
	}
	cfg_cost_free(&s->cluster.cost);
	free(s->pools);
	s->pools = NULL;
	s->n_pools = 0;
	catalog_free(&s->cat);
	cJSON_Delete(s->router.params);
	cJSON_Delete(s->router.policy_params);
	cJSON_Delete(s->router.decode_params);
	s->router.policy_params = NULL;
	s->router.decode_params = NULL;
	cJSON_Delete(s->workload);
	free(s->faults);
	s->faults = NULL;
	s->router.params = NULL;
	s->workload = NULL;
}

void cfg_scenario_set_source(struct scenario *s, const char *file)
{
	s->base_dir[0] = 0;
	if (!file)
		return;
	const char *slash = strrchr(file, '/');
	if (!slash)
		snprintf(s->base_dir, sizeof s->base_dir, ".");
	else if (slash == file)
		snprintf(s->base_dir, sizeof s->base_dir, "/");
	else
		snprintf(s->base_dir, sizeof s->base_dir, "%.*s", (int)(slash - file), file);
}
