/* conversation: chat, RAG and agent sessions: closed loops where each turn carries the history. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "base/hmap.h"
#include "sim/request.h"
#include "workloads/common.h"
#include "workloads/registry.h"

/* The three generators share one session machine; they differ in what
 * heads the prompt and what the user side adds each turn:
 *   chat:  system prompt | user message, answer | ...
 *   rag:   system prompt, k documents (in rank order) | question, answer | ...
 *   agent: tool definitions, task | answer, tool result | ... */
enum convo_kind { CONVO_CHAT, CONVO_RAG, CONVO_AGENT };

/* One live session. segs: the head (n_head segments, never dropped; the
 * first n_shared_segs of them shareable across sessions), then the turns;
 * the last segment is the answer being generated (the request's output).
 * Freed when the session ends, so memory follows live sessions. */
struct chat_session {
	uint64_t id;
	uint32_t turns, turn;
	uint32_t n_head, n_shared_segs;
	uint32_t n_segs, cap_segs;
	struct wl_seg *segs;
	/* tokens over segs, and over the first n_shared_segs of them: kept,
	 * so that a follow-up turn reads only the segments it adds (the
	 * history's lie in memory untouched since the turn before) */
	uint64_t total, shared;
	struct wl_hash_state hs; /* where the last request's hash chain stopped */
	uint32_t head_item;      /* the pool item that heads it (UINT32_MAX: none) */
	struct chat_session *free_next;
};

/* A head pool item's full blocks hashed on their own: the first blocks of
 * every prompt it heads (block hashes chain from the start, and these blocks
 * hold nothing else), so a session's first request resumes after them. */
struct head_hashes {
	int done;
	uint64_t *hashes;
	struct wl_hash_state st;
};

struct chat_wl {
	enum convo_kind kind;
	struct wl_env env;
	struct wl_arrivals arr;
	int64_t max_sessions, started;
	struct dist turns, first_user, user, output, think;
	struct wl_pool sys;  /* system prompts (chat, rag) or tool definitions (agent) */
	struct wl_pool docs; /* rag */
	uint32_t docs_per_request;
	double follow_up_prob;
	gsl_rng *r_arr, *r_len;
	/* Follow-up turns come in completion order, which depends on the
	 * policy; their draws come from this generator re-seeded per (session,
	 * turn), so every policy sees the same conversations. */
	gsl_rng *r_turn;
	struct head_hashes *heads; /* per item of sys */
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
	for (uint32_t i = 0; w->heads && i < w->sys.count; i++)
		free(w->heads[i].hashes);
	free(w->heads);
	dist_free(&w->turns);
	dist_free(&w->first_user);
	dist_free(&w->user);
	wl_pool_free(&w->docs);
	dist_free(&w->output);
	dist_free(&w->think);
	wl_pool_free(&w->sys);
	wl_arrivals_free(&w->arr);
	if (w->r_arr)
		gsl_rng_free(w->r_arr);
	if (w->r_len)
		gsl_rng_free(w->r_len);
	if (w->r_turn)
		gsl_rng_free(w->r_turn);
	free(w);
}

static struct chat_wl *convo_alloc(enum convo_kind kind, const struct wl_env *env, char *err,
				   size_t errlen)
{
	struct chat_wl *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->kind = kind;
	w->env = *env;
	w->env.schedule = NULL; /* copied by wl_schedule_parse; not kept */
	hmap_init(&w->live);
	return w;
}

/* Streams and rate scaling, once the parameters are read. */
static void *convo_ready(struct chat_wl *w, char *err, size_t errlen)
{
	if (w->env.rate_scale > 0)
		w->arr.rate_per_s *= w->env.rate_scale;
	w->r_arr = rng_stream(w->env.seed, WL_STREAM_ARRIVALS);
	w->r_len = rng_stream(w->env.seed, WL_STREAM_LENGTHS);
	w->r_turn = gsl_rng_alloc(gsl_rng_taus2);
	if (w->sys.count)
		w->heads = calloc(w->sys.count, sizeof *w->heads);
	if (!w->r_arr || !w->r_len || !w->r_turn || (w->sys.count && !w->heads)) {
		snprintf(err, errlen, "out of memory");
		chat_destroy(w);
		return NULL;
	}
	return w;
}

static void *chat_create(const struct cJSON *json, const char *path, const struct wl_env *env,
			 char *err, size_t errlen)
{
	static const char *const keys[] = {"kind",       "sessions_per_s", "arrival",
					   "cv",         "max_sessions",   "turns",
					   "user_tokens", "output_tokens", "think_time_s",
					   "system_prompts", "rate_schedule", NULL};
	struct chat_wl *w = convo_alloc(CONVO_CHAT, env, err, errlen);
	if (!w)
		return NULL;
	w->max_sessions = 5000;
	dist_make(&w->turns, DIST_GEOMETRIC, 4, 0);
	dist_make(&w->user, DIST_LOGNORMAL, 120, 0.8);
	dist_make(&w->output, DIST_LOGNORMAL, 250, 0.6);
	dist_make(&w->think, DIST_EXPONENTIAL, 20, 0);
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    wl_arrivals_parse(&w->arr, json, path, wl_chat.rate_key, wl_chat.rate_default, env,
			      err, errlen) ||
	    cfg_int(json, path, "max_sessions", 1, (int64_t)1 << 40, &w->max_sessions, err,
		    errlen) ||
	    cfg_dist(json, path, "turns", 1, &w->turns, err, errlen) ||
	    cfg_dist(json, path, "user_tokens", 1, &w->user, err, errlen) ||
	    cfg_dist(json, path, "output_tokens", 1, &w->output, err, errlen) ||
	    cfg_dist(json, path, "think_time_s", 0, &w->think, err, errlen) ||
	    wl_pool_sysprompts(&w->sys, json, path, 16, env->seed, err, errlen) ||
	    dist_copy(&w->first_user, &w->user)) {
		chat_destroy(w);
		return NULL;
	}
	return convo_ready(w, err, errlen);
}

static void *rag_create(const struct cJSON *json, const char *path, const struct wl_env *env,
			char *err, size_t errlen)
{
	static const char *const keys[] = {
	    "kind",           "rate_per_s",      "arrival",       "cv",
	    "max_requests",   "documents",       "docs_per_request", "question_tokens",
	    "output_tokens",  "follow_up_prob",  "think_time_s",  "system_prompts",
	    "rate_schedule",  NULL};
	struct chat_wl *w = convo_alloc(CONVO_RAG, env, err, errlen);
	if (!w)
		return NULL;
	w->max_sessions = 10000;
	w->follow_up_prob = 0.3;
	int64_t k = 4;
	struct dist doc_len;
	dist_make(&doc_len, DIST_LOGNORMAL, 600, 0.5);
	dist_make(&w->user, DIST_LOGNORMAL, 60, 0.5);
	dist_make(&w->output, DIST_LOGNORMAL, 200, 0.6);
	dist_make(&w->think, DIST_EXPONENTIAL, 15, 0);
	char p[256];
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    wl_arrivals_parse(&w->arr, json, path, wl_rag.rate_key, wl_rag.rate_default, env,
			      err, errlen) ||
	    cfg_int(json, path, "max_requests", 1, (int64_t)1 << 40, &w->max_sessions, err,
		    errlen) ||
	    wl_pool_parse(&w->docs, json, path, "documents", 1000, &doc_len, env->seed,
			  WL_STREAM_DOCUMENTS, err, errlen) ||
	    cfg_int(json, path, "docs_per_request", 0, 1024, &k, err, errlen) ||
	    cfg_dist(json, path, "question_tokens", 1, &w->user, err, errlen) ||
	    cfg_dist(json, path, "output_tokens", 1, &w->output, err, errlen) ||
	    cfg_number(json, path, "follow_up_prob", 0, 0.99, &w->follow_up_prob, err, errlen) ||
	    cfg_dist(json, path, "think_time_s", 0, &w->think, err, errlen) ||
	    wl_pool_sysprompts(&w->sys, json, path, 4, env->seed, err, errlen) ||
	    dist_copy(&w->first_user, &w->user)) {
		chat_destroy(w);
		return NULL;
	}
	if ((uint64_t)k > w->docs.count) {
		snprintf(err, errlen, "%s: expected at most documents.count (%u), got %lld",
			 cfg_join(p, sizeof p, path, "docs_per_request"), w->docs.count,
			 (long long)k);
		chat_destroy(w);
		return NULL;
	}
	w->docs_per_request = (uint32_t)k;
	return convo_ready(w, err, errlen);
}

static void *agent_create(const struct cJSON *json, const char *path, const struct wl_env *env,
			  char *err, size_t errlen)
{
	static const char *const keys[] = {"kind",        "rate_per_s",         "arrival",
					   "cv",          "max_chains",         "steps",
					   "task_tokens", "tool_result_tokens", "output_tokens",
					   "tool_latency_s", "tools",           "rate_schedule",
					   NULL};
	struct chat_wl *w = convo_alloc(CONVO_AGENT, env, err, errlen);
	if (!w)
		return NULL;
	w->max_sessions = 2000;
	struct dist tools_len;
	dist_make(&tools_len, DIST_UNIFORM, 2000, 6000);
	dist_make(&w->turns, DIST_GEOMETRIC, 6, 0);
	dist_make(&w->first_user, DIST_LOGNORMAL, 200, 0.6);
	dist_make(&w->user, DIST_LOGNORMAL, 300, 0.8);
	dist_make(&w->output, DIST_LOGNORMAL, 60, 0.5);
	dist_make(&w->think, DIST_EXPONENTIAL, 1.0, 0);
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    wl_arrivals_parse(&w->arr, json, path, wl_agent.rate_key, wl_agent.rate_default, env,
			      err, errlen) ||
	    cfg_int(json, path, "max_chains", 1, (int64_t)1 << 40, &w->max_sessions, err,
		    errlen) ||
	    cfg_dist(json, path, "steps", 1, &w->turns, err, errlen) ||
	    cfg_dist(json, path, "task_tokens", 1, &w->first_user, err, errlen) ||
	    cfg_dist(json, path, "tool_result_tokens", 1, &w->user, err, errlen) ||
	    cfg_dist(json, path, "output_tokens", 1, &w->output, err, errlen) ||
	    cfg_dist(json, path, "tool_latency_s", 0, &w->think, err, errlen) ||
	    wl_pool_parse(&w->sys, json, path, "tools", 4, &tools_len, env->seed, WL_STREAM_TOOLS,
			  err, errlen)) {
		chat_destroy(w);
		return NULL;
	}
	return convo_ready(w, err, errlen);
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
	s->total += len;
	return 0;
}

static uint64_t content_id(const struct chat_session *s, uint32_t part)
{
	return rng_mix64(s->id * 0x10000ULL + part) & ~(1ULL << 63);
}

/* Fits head + history + new message + answer into the context: the oldest
 * turns after the head go first (which breaks the cached prefix after the
 * head, as in real servers), then the answer is cut to half the context,
 * then the message, then the head from its end. Returns 1 if anything was
 * cut. */
static int cut_to_context(struct chat_session *s, uint32_t max_context)
{
	uint64_t total = s->total;
	int cut = 0;
	uint32_t h = s->n_head;
	while (total > max_context && s->n_segs > h + 2) {
		total -= s->segs[h].len + s->segs[h + 1].len;
		memmove(&s->segs[h], &s->segs[h + 2], (s->n_segs - h - 2) * sizeof *s->segs);
		s->n_segs -= 2;
		cut = 1;
	}
	if (total <= max_context)
		return cut;
	struct wl_seg *ans = &s->segs[s->n_segs - 1];
	if (ans->len > max_context / 2)
		total -= ans->len - max_context / 2, ans->len = max_context / 2;
	for (uint32_t i = s->n_segs - 1; i-- > 0 && total > max_context;) {
		uint64_t over = total - max_context;
		uint32_t keep = s->segs[i].len > over ? (uint32_t)(s->segs[i].len - over) : 0;
		total -= s->segs[i].len - keep;
		s->segs[i].len = keep;
	}
	if (total == ans->len) { /* nothing left before the answer */
		s->segs[s->n_segs - 2].len = 1;
		ans->len = max_context - 1;
	}
	return 1;
}

static int truncate_to_context(struct chat_session *s, uint32_t max_context)
{
	if (s->total <= max_context)
		return 0; /* (the segments not read) */
	int cut = cut_to_context(s, max_context);
	if (cut) {
		s->total = s->shared = 0;
		for (uint32_t i = 0; i < s->n_segs; i++) {
			s->total += s->segs[i].len;
			if (i < s->n_shared_segs)
				s->shared += s->segs[i].len;
		}
	}
	return cut;
}

/* prev: the session's previous request (its hashes chain the history this
 * one repeats), or NULL. */
int wl_head_hashes_off; /* tests: 1 hashes every head from scratch */

/* Starts s's hash chain after its head's full blocks (s->hs from scratch);
 * returns their hashes, or NULL to hash from the start (no head, a head
 * cut short to fit the context, or out of memory). */
static const uint64_t *head_start(struct chat_wl *w, struct chat_session *s)
{
	if (s->head_item == UINT32_MAX || !w->heads || wl_head_hashes_off)
		return NULL;
	struct head_hashes *hh = &w->heads[s->head_item];
	struct wl_seg seg;
	wl_pool_item(&w->sys, s->head_item, &seg);
	if (s->n_segs == 0 || s->segs[0].id != seg.id || s->segs[0].len != seg.len)
		return NULL;
	if (!hh->done) {
		struct request t;
		memset(&t, 0, sizeof t);
		if (wl_hash_blocks_resume(&t, &seg, 1, w->env.block_tokens, &hh->st, NULL)) {
			free(t.hashes);
			memset(&hh->st, 0, sizeof hh->st);
			return NULL;
		}
		hh->hashes = t.hashes;
		hh->done = 1;
	}
	if (hh->st.blocks == 0)
		return NULL;
	s->hs = hh->st;
	return hh->hashes;
}

static int fill_request(struct chat_wl *w, struct chat_session *s, struct request *r,
			int64_t arrival_ns, const struct request *prev)
{
	if (truncate_to_context(s, w->env.max_context)) {
		w->truncated++;
		prev = NULL; /* the history changed: hash it again */
	}
	if (!prev || prev->n_hashes != s->hs.blocks)
		memset(&s->hs, 0, sizeof s->hs);
	const uint64_t *prefix = s->hs.blocks ? prev->hashes : head_start(w, s);
	uint32_t prompt = (uint32_t)(s->total - s->segs[s->n_segs - 1].len);
	r->session = s->id;
	r->wl_session = s;
	r->turn = s->turn;
	r->last_turn = s->turn >= s->turns;
	r->arrival_ns = arrival_ns;
	r->prompt_tokens = prompt;
	r->output_tokens = s->segs[s->n_segs - 1].len;
	/* (the head's segments come before the new message and answer) */
	assert(s->n_shared_segs < s->n_segs - 1);
	r->n_shared = (uint32_t)(s->shared / w->env.block_tokens);
	return wl_hash_blocks_resume_n(r, s->segs, s->n_segs, s->total, w->env.block_tokens,
				       &s->hs, prefix) == 0
		   ? 1
		   : -1;
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
	s->total = s->shared = 0;
	return s;
}

static void session_end(struct chat_wl *w, struct chat_session *s)
{
	hmap_del(&w->live, s->id);
	s->id = 0; /* a request still naming it finds it ended */
	s->free_next = w->free_list;
	w->free_list = s;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The session's head: system prompt (chat, rag) or tool definitions
 * (agent), then rag's documents: k distinct by popularity, in rank order. */
static int build_head(struct chat_wl *w, struct chat_session *s)
{
	struct wl_seg seg = {0, 0};
	s->head_item = UINT32_MAX;
	if (w->sys.count) { /* as wl_pool_draw, keeping the item */
		s->head_item = zipf_draw(&w->sys.pop, w->r_len);
		wl_pool_item(&w->sys, s->head_item, &seg);
	}
	if (push_seg(s, seg.id, seg.len))
		return -1;
	s->n_head = s->n_shared_segs = 1;
	s->shared = s->total;
	if (w->kind != CONVO_RAG)
		return 0;
	uint32_t k = w->docs_per_request, picked[1024], n = 0;
	while (n < k) {
		uint32_t d = zipf_draw(&w->docs.pop, w->r_len), dup = 0;
		for (uint32_t i = 0; i < n; i++)
			dup |= picked[i] == d;
		if (!dup)
			picked[n++] = d;
	}
	qsort(picked, n, sizeof *picked, cmp_u32);
	for (uint32_t i = 0; i < n; i++) {
		wl_pool_item(&w->docs, picked[i], &seg);
		if (push_seg(s, seg.id, seg.len))
			return -1;
	}
	s->n_head = s->n_shared_segs = 1 + n;
	s->shared = s->total;
	return 0;
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
	if (w->kind == CONVO_RAG) {
		s->turns = 1;
		while (s->turns < 1000 && gsl_rng_uniform(w->r_len) < w->follow_up_prob)
			s->turns++;
	} else {
		s->turns = dist_sample_tokens(&w->turns, w->r_len);
	}
	s->turn = 1;
	int bad = build_head(w, s);
	uint32_t user = dist_sample_tokens(&w->first_user, w->r_len);
	uint32_t out = dist_sample_tokens(&w->output, w->r_len);
	if (!bad && w->kind == CONVO_AGENT) {
		/* The task stays with the tool definitions; it is not shared. */
		bad = push_seg(s, content_id(s, 1), user);
		s->n_head = 2;
	} else if (!bad) {
		bad = push_seg(s, content_id(s, 1), user);
	}
	if (bad || push_seg(s, content_id(s, 2), out) ||
	    hmap_put(&w->live, s->id, (uint64_t)(uintptr_t)s) < 0) {
		s->free_next = w->free_list;
		w->free_list = s;
		return -1;
	}
	memset(&s->hs, 0, sizeof s->hs);
	return fill_request(w, s, r, wl_arrivals_next(&w->arr, w->r_arr), NULL);
}

static int chat_follow_up(void *st, const struct request *done, int completed, int64_t now_ns,
			  struct request *out)
{
	struct chat_wl *w = st;
	/* the session the request names (its turns run one at a time, so it
	 * is live), else by id (a request built elsewhere names none) */
	struct chat_session *s = done->wl_session;
	if (!s || s->id != done->session) {
		uint64_t *v = hmap_get(&w->live, done->session);
		if (!v)
			return 0;
		s = (struct chat_session *)(uintptr_t)*v;
	}
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
	return fill_request(w, s, out, cfg_time_add(now_ns, cfg_time_ns_clamp(think, 1e9)), done);
}

const struct wl_ops wl_chat = {
    .name = "chat",
    .description = "multi-turn chat sessions (closed loop: the next turn follows a think "
		   "time after the answer), Zipf-popular shared system prompts",
    .create = chat_create,
    .next = chat_next,
    .follow_up = chat_follow_up,
    .destroy = chat_destroy,
    .private_own = 1,
    .rate_key = "sessions_per_s",
    .rate_default = 4,
};

const struct wl_ops wl_rag = {
    .name = "rag",
    .description = "retrieval-augmented questions: system prompt + k Zipf-popular documents "
		   "in rank order + question; follow-up questions with probability p",
    .create = rag_create,
    .next = chat_next,
    .follow_up = chat_follow_up,
    .destroy = chat_destroy,
    .private_own = 1,
    .rate_key = "rate_per_s",
    .rate_default = 10,
};

const struct wl_ops wl_agent = {
    .name = "agent",
    .description = "agent chains: a long shared tool-definition prefix and a task, then "
		   "steps that each append a tool result and produce a short output",
    .create = agent_create,
    .next = chat_next,
    .follow_up = chat_follow_up,
    .destroy = chat_destroy,
    .private_own = 1,
    .rate_key = "rate_per_s",
    .rate_default = 2,
};
