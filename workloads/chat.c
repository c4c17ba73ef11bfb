/* chat: multi-turn conversations, closed loop: each turn carries the history. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cfg.h"
#include "sim/hmap.h"
#include "sim/request.h"
#include "workloads/common.h"
#include "workloads/registry.h"

/* One live conversation. segs: system prompt, then user/answer pairs; the
 * last answer is the one being generated (its length is the request's
 * output). Freed when the session ends, so memory follows live sessions. */
struct chat_session {
	uint64_t id;
	uint32_t turns, turn;
	uint32_t n_segs, cap_segs;
	struct wl_seg *segs;
	struct chat_session *free_next;
};

struct chat_wl {
	struct wl_env env;
	struct wl_arrivals arr;
	int64_t max_sessions, started;
	struct dist turns, user, output, think;
	struct wl_sysprompts sys;
	gsl_rng *r_arr, *r_len;
	/* Follow-up turns come in completion order, which depends on the
	 * policy; their draws come from this generator re-seeded per (session,
	 * turn), so every policy sees the same conversations. */
	gsl_rng *r_turn;
	struct hmap live; /* session id -> struct chat_session * */
	struct chat_session *free_list;
	uint64_t truncated; /* turns whose history was cut to fit the context */
};

static void chat_destroy(void *st)
{
	struct chat_wl *w = st;
	if (!w)
		return;
	for (size_t i = 0; i < w->live.cap; i++) {
		if (w->live.slots[i].key) {
			struct chat_session *s = (struct chat_session *)(uintptr_t)w->live.slots[i].val;
			free(s->segs);
			free(s);
		}
	}
	while (w->free_list) {
		struct chat_session *s = w->free_list;
		w->free_list = s->free_next;
		free(s->segs);
		free(s);
	}
	hmap_free(&w->live);
	dist_free(&w->turns);
	dist_free(&w->user);
	dist_free(&w->output);
	dist_free(&w->think);
	wl_sysprompts_free(&w->sys);
	if (w->r_arr)
		gsl_rng_free(w->r_arr);
	if (w->r_len)
		gsl_rng_free(w->r_len);
	if (w->r_turn)
		gsl_rng_free(w->r_turn);
	free(w);
}

static void *chat_create(const struct cJSON *json, const char *path, const struct wl_env *env,
			 char *err, size_t errlen)
{
	static const char *const keys[] = {"kind",       "sessions_per_s", "arrival",
					   "cv",         "max_sessions",   "turns",
					   "user_tokens", "output_tokens", "think_time_s",
					   "system_prompts", NULL};
	struct chat_wl *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->env = *env;
	w->max_sessions = 5000;
	hmap_init(&w->live);
	dist_make(&w->turns, DIST_GEOMETRIC, 4, 0);
	dist_make(&w->user, DIST_LOGNORMAL, 120, 0.8);
	dist_make(&w->output, DIST_LOGNORMAL, 250, 0.6);
	dist_make(&w->think, DIST_EXPONENTIAL, 20, 0);
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    wl_arrivals_parse(&w->arr, json, path, "sessions_per_s", 4, err, errlen) ||
	    cfg_int(json, path, "max_sessions", 1, (int64_t)1 << 40, &w->max_sessions, err,
		    errlen) ||
	    cfg_dist(json, path, "turns", 1, &w->turns, err, errlen) ||
	    cfg_dist(json, path, "user_tokens", 1, &w->user, err, errlen) ||
	    cfg_dist(json, path, "output_tokens", 1, &w->output, err, errlen) ||
	    cfg_dist(json, path, "think_time_s", 0, &w->think, err, errlen) ||
	    wl_sysprompts_parse(&w->sys, json, path, 16, env->seed, err, errlen))
		goto fail;
	if (env->rate_scale > 0)
		w->arr.rate_per_s *= env->rate_scale;
	w->r_arr = rng_stream(env->seed, WL_STREAM_ARRIVALS);
	w->r_len = rng_stream(env->seed, WL_STREAM_LENGTHS);
	w->r_turn = gsl_rng_alloc(gsl_rng_taus2);
	if (!w->r_arr || !w->r_len || !w->r_turn) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return w;
fail:
	chat_destroy(w);
	return NULL;
}

static int push_seg(struct chat_session *s, uint64_t id, uint32_t len)
{
	if (s->n_segs == s->cap_segs) {
		uint32_t cap = s->cap_segs ? s->cap_segs * 2 : 8;
		struct wl_seg *ns = realloc(s->segs, cap * sizeof *ns);
		if (!ns)
			return -1;
		s->segs = ns;
		s->cap_segs = cap;
	}
	s->segs[s->n_segs++] = (struct wl_seg){id, len};
	return 0;
}

static uint64_t content_id(const struct chat_session *s, uint32_t part)
{
	return rng_mix64(s->id * 0x10000ULL + part) & ~(1ULL << 63);
}

/* Fits system + history + new message + answer into the context: oldest
 * user/answer pairs go first (after the system prompt, which breaks the
 * cached prefix as real servers do), then the new message and answer are
 * cut. Returns 1 if anything was cut. */
static int truncate_to_context(struct chat_session *s, uint32_t max_context)
{
	uint64_t total = 0;
	int cut = 0;
	for (uint32_t i = 0; i < s->n_segs; i++)
		total += s->segs[i].len;
	while (total > max_context && s->n_segs > 3) {
		total -= s->segs[1].len + s->segs[2].len;
		memmove(&s->segs[1], &s->segs[3], (s->n_segs - 3) * sizeof *s->segs);
		s->n_segs -= 2;
		cut = 1;
	}
	if (total > max_context) {
		/* segs: system, user, answer. Cut the answer to half the context at
		 * most, then the message, then the system prompt. */
		struct wl_seg *sys = &s->segs[0], *user = &s->segs[1], *ans = &s->segs[2];
		if (ans->len > max_context / 2)
			ans->len = max_context / 2 ? max_context / 2 : 1;
		uint32_t room = max_context - ans->len;
		if (user->len > room)
			user->len = room;
		if (sys->len + user->len > room)
			sys->len = room - user->len;
		if (sys->len + user->len == 0)
			user->len = 1, ans->len = max_context - 1;
		cut = 1;
	}
	return cut;
}

static int fill_request(struct chat_wl *w, struct chat_session *s, struct request *r,
			int64_t arrival_ns)
{
	if (truncate_to_context(s, w->env.max_context))
		w->truncated++;
	uint32_t prompt = 0;
	for (uint32_t i = 0; i + 1 < s->n_segs; i++)
		prompt += s->segs[i].len;
	r->session = s->id;
	r->turn = s->turn;
	r->last_turn = s->turn >= s->turns;
	r->arrival_ns = arrival_ns;
	r->prompt_tokens = prompt;
	r->output_tokens = s->segs[s->n_segs - 1].len;
	r->n_shared = s->segs[0].len / w->env.block_tokens;
	return wl_hash_blocks(r, s->segs, s->n_segs, w->env.block_tokens) == 0 ? 1 : -1;
}

static struct chat_session *session_new(struct chat_wl *w)
{
	struct chat_session *s = w->free_list;
	if (s) {
		w->free_list = s->free_next;
	} else {
		s = calloc(1, sizeof *s);
		if (!s)
			return NULL;
	}
	s->n_segs = 0;
	return s;
}

static void session_end(struct chat_wl *w, struct chat_session *s)
{
	hmap_del(&w->live, s->id);
	s->free_next = w->free_list;
	w->free_list = s;
}

static int chat_next(void *st, struct request *r)
{
	struct chat_wl *w = st;
	if (w->started >= w->max_sessions)
		return 0;
	struct chat_session *s = session_new(w);
	if (!s)
		return -1;
	s->id = (uint64_t)++w->started;
	s->turns = dist_sample_tokens(&w->turns, w->r_len);
	s->turn = 1;
	struct wl_seg sys;
	wl_sysprompts_draw(&w->sys, w->r_len, &sys);
	uint32_t user = dist_sample_tokens(&w->user, w->r_len);
	uint32_t out = dist_sample_tokens(&w->output, w->r_len);
	if (push_seg(s, sys.id, sys.len) || push_seg(s, content_id(s, 1), user) ||
	    push_seg(s, content_id(s, 2), out) ||
	    hmap_put(&w->live, s->id, (uint64_t)(uintptr_t)s) < 0) {
		s->free_next = w->free_list;
		w->free_list = s;
		return -1;
	}
	return fill_request(w, s, r, wl_arrivals_next(&w->arr, w->r_arr));
}

static int chat_follow_up(void *st, const struct request *done, int completed, int64_t now_ns,
			  struct request *out)
{
	struct chat_wl *w = st;
	uint64_t *v = hmap_get(&w->live, done->session);
	if (!v)
		return 0;
	struct chat_session *s = (struct chat_session *)(uintptr_t)*v;
	if (!completed || s->turn >= s->turns) {
		session_end(w, s);
		return 0;
	}
	s->turn++;
	uint64_t key = rng_mix64(rng_mix64(w->env.seed ^ 0x7475726eULL) ^ s->id) ^ s->turn;
	gsl_rng_set(w->r_turn, (unsigned long)(rng_mix64(key) >> 33) | 1UL);
	uint32_t user = dist_sample_tokens(&w->user, w->r_turn);
	uint32_t ans = dist_sample_tokens(&w->output, w->r_turn);
	double think = dist_sample(&w->think, w->r_turn);
	if (think < 0)
		think = 0;
	if (push_seg(s, content_id(s, 2 * s->turn - 1), user) ||
	    push_seg(s, content_id(s, 2 * s->turn), ans)) {
		session_end(w, s);
		return -1;
	}
	return fill_request(w, s, out, now_ns + (int64_t)llround(think * 1e9));
}

const struct wl_ops wl_chat = {
    .name = "chat",
    .description = "multi-turn chat sessions (closed loop: the next turn follows a think "
		   "time after the answer), Zipf-popular shared system prompts",
    .create = chat_create,
    .next = chat_next,
    .follow_up = chat_follow_up,
    .destroy = chat_destroy,
};
