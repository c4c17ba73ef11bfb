/* mix: several workloads at once, their streams merged by arrival time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "sim/request.h"
#include "base/rng.h"
#include "workloads/common.h"
#include "workloads/registry.h"

#define MIX_MAX_PARTS 16

/* Each part runs its own generator with its own seed; `weight` scales its
 * arrival rate. Session ids are interleaved (part p's session s becomes
 * (s - 1) * n + p + 1) so that follow-ups find their part. */
struct mix {
	uint32_t n;
	const struct wl_ops *ops[MIX_MAX_PARTS];
	void *st[MIX_MAX_PARTS];
	struct request pend[MIX_MAX_PARTS]; /* each part's next arrival */
	int has[MIX_MAX_PARTS], done[MIX_MAX_PARTS];
	int failed; /* part whose call returned -1, or -1 */
};

static void mix_destroy(void *p)
{
	struct mix *m = p;
	if (!m)
		return;
	for (uint32_t i = 0; i < m->n; i++) {
		if (m->st[i])
			m->ops[i]->destroy(m->st[i]);
		free(m->pend[i].hashes);
	}
	free(m);
}

static void *mix_create(const cJSON *json, const char *path, const struct wl_env *env, char *err,
			size_t errlen)
{
	static const char *const keys[] = {"kind", "parts", "rate_schedule", NULL};
	static const char *const part_keys[] = {"weight", "workload", NULL};
	char p[256], pp[300];
	if (cfg_check_keys(json, path, keys, err, errlen))
		return NULL;
	const cJSON *parts = cJSON_GetObjectItemCaseSensitive(json, "parts");
	cfg_join(p, sizeof p, path, "parts");
	int n = parts ? cJSON_GetArraySize(parts) : 0;
	if (!cJSON_IsArray(parts) || n < 1 || n > MIX_MAX_PARTS) {
		snprintf(err, errlen, "%s: expected an array of 1 to %d parts "
				      "[{\"weight\": W, \"workload\": {...}}]", p, MIX_MAX_PARTS);
		return NULL;
	}
	/* The mix's rate_schedule is the schedule of every part whose workload
	 * gives none of its own. */
	struct wl_schedule top;
	if (wl_schedule_parse(&top, json, path, env->schedule, err, errlen))
		return NULL;
	struct mix *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		wl_schedule_free(&top);
		return NULL;
	}
	m->failed = -1;
	const cJSON *part = parts->child;
	for (int i = 0; i < n; i++, part = part->next) {
		snprintf(pp, sizeof pp, "%s[%d]", p, i);
		double weight = 1;
		if (cfg_check_keys(part, pp, part_keys, err, errlen) ||
		    cfg_number(part, pp, "weight", 1e-6, 1e6, &weight, err, errlen))
			goto fail;
		const cJSON *wj = cJSON_GetObjectItemCaseSensitive(part, "workload");
		char wp[340];
		snprintf(wp, sizeof wp, "%s.workload", pp);
		if (!cJSON_IsObject(wj)) {
			snprintf(err, errlen, "%s: expected a workload object", wp);
			goto fail;
		}
		char kind[32] = "chat";
		if (cfg_string(wj, wp, "kind", kind, sizeof kind, err, errlen))
			goto fail;
		m->ops[i] = wl_find(kind);
		if (!m->ops[i] || m->ops[i] == &wl_mix) {
			snprintf(err, errlen, "%s.kind: expected a workload other than mix, got \"%s\"",
				 wp, kind);
			goto fail;
		}
		struct wl_env e = *env;
		e.seed = rng_mix64(env->seed ^ (0x6d6978ULL + (uint64_t)i * 0x9E3779B97F4A7C15ULL));
		e.rate_scale = weight * (env->rate_scale > 0 ? env->rate_scale : 1);
		e.schedule = top.kind != WL_SCHED_NONE ? &top : NULL;
		m->st[i] = m->ops[i]->create(wj, wp, &e, err, errlen);
		if (!m->st[i])
			goto fail;
		m->n = (uint32_t)i + 1;
	}
	wl_schedule_free(&top);
	return m;
fail:
	m->n = (uint32_t)n;
	mix_destroy(m);
	wl_schedule_free(&top);
	return NULL;
}

/* wl_take, with part's session numbered apart from the other parts'. */
static void take(struct request *dst, struct request *src, uint32_t n, uint32_t part)
{
	wl_take(dst, src);
	dst->session = (src->session - 1) * n + part + 1;
}

static int mix_next(void *p, struct request *r)
{
	struct mix *m = p;
	int best = -1;
	for (uint32_t i = 0; i < m->n; i++) {
		if (!m->has[i] && !m->done[i]) {
			int got = m->ops[i]->next(m->st[i], &m->pend[i]);
			if (got < 0) {
				m->failed = (int)i;
				return -1;
			}
			m->has[i] = got == 1;
			m->done[i] = got == 0;
		}
		if (m->has[i] && (best < 0 || m->pend[i].arrival_ns < m->pend[best].arrival_ns))
			best = (int)i;
	}
	if (best < 0)
		return 0;
	take(r, &m->pend[best], m->n, (uint32_t)best);
	m->has[best] = 0;
	return 1;
}

static int mix_follow_up(void *p, const struct request *done, int completed, int64_t now_ns,
			 struct request *out)
{
	struct mix *m = p;
	uint32_t part = (uint32_t)((done->session - 1) % m->n);
	if (!m->ops[part]->follow_up)
		return 0;
	struct request orig = *done;
	orig.session = (done->session - 1) / m->n + 1;
	int got = m->ops[part]->follow_up(m->st[part], &orig, completed, now_ns, out);
	if (got < 0)
		m->failed = (int)part;
	if (got == 1)
		out->session = (out->session - 1) * m->n + part + 1;
	return got;
}

static const char *mix_error(void *p)
{
	struct mix *m = p;
	if (m->failed < 0 || !m->ops[m->failed]->error)
		return NULL;
	return m->ops[m->failed]->error(m->st[m->failed]);
}

static uint64_t mix_skipped(void *p, char *first, size_t firstlen)
{
	struct mix *m = p;
	uint64_t n = 0;
	char later[512]; /* the first error is the first part's that has one */
	for (uint32_t i = 0; i < m->n; i++)
		if (m->ops[i]->skipped)
			n += m->ops[i]->skipped(m->st[i], n ? later : first, n ? sizeof later : firstlen);
	return n;
}

const struct wl_ops wl_mix = {
    .name = "mix",
    .description = "several workloads at once (parts: [{weight, workload}]), each with its "
		   "own seed, weight scaling its arrival rate",
    .create = mix_create,
    .next = mix_next,
    .follow_up = mix_follow_up,
    .destroy = mix_destroy,
    .error = mix_error,
    .skipped = mix_skipped,
    .rate_key = NULL, /* each part has its own rate */
};
