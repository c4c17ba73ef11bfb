/* replay: the `trace` workload: requests streamed from a trace file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "base/hmap.h"
#include "sim/request.h"
#include "base/rng.h"
#include "workloads/common.h"
#include "workloads/registry.h"
#include "workloads/trace.h"

/* A kvsim-format record read ahead: a later turn waiting for its previous
 * turn to finish, or a first turn waiting to be served by next(). */
struct held {
	struct trace_rec rec;
	struct held *next;
};

struct replay {
	struct wl_env env;
	struct trace_reader tr;
	double time_scale;
	int64_t max_requests, made;
	int eof;
	/* repeat: the trace is read again, repeat times in all; pass p's
	 * arrivals come after pass p-1's last one (plus one second) and its
	 * content (block ids, sessions) is renamed, so passes share nothing. */
	int64_t repeat, pass;
	int64_t shift_ns, last_ns; /* this pass's time shift; the latest arrival read */
	/* start_s, end_s: the window of the trace's time replayed (window 0:
	 * the whole trace); kept: first turns kept in this pass; dropped: the
	 * kvsim sessions whose first turn fell outside, until their last turn
	 * (their later turns go too) */
	int window;
	int64_t start_ns, end_ns;
	double start_s, end_s;
	uint64_t kept;
	struct hmap dropped;
	struct wl_schedule sched; /* maps the arrivals' times (schedule.h) */
	char path[256];           /* the workload's JSON path */
	enum trace_format format;
	int skip_bad;
	char full[4200];
	/* lines skipped (skip_bad) by the passes before this one, and the
	 * first one's error */
	uint64_t skipped_before;
	char first_bad[512];
	struct trace_rec cur;
	struct held *open_head, *open_tail; /* first turns read ahead */
	struct hmap later;                  /* session -> struct held * (its later turns, in order) */
	/* Mooncake and Azure records are read AHEAD at a time and their block
	 * hashes chained together (wl_hash_chain: chains side by side run
	 * about twice as fast as one after another). ahead[at..n) are ready;
	 * after them next() returns ahead_end (0: the end; -1: the error in
	 * err, met while reading ahead). kvsim records carry their hashes and
	 * are read one at a time. */
	struct request *ahead;
	uint32_t ahead_at, ahead_n;
	int ahead_end;
	char err[1024];
};

enum { AHEAD = 64 };

static void free_chain(struct held *h)
{
	while (h) {
		struct held *n = h->next;
		trace_rec_free(&h->rec);
		free(h);
		h = n;
	}
}

static void replay_destroy(void *st)
{
	struct replay *w = st;
	if (!w)
		return;
	trace_close(&w->tr);
	trace_rec_free(&w->cur);
	free_chain(w->open_head);
	for (size_t i = 0; i < w->later.cap; i++)
		if (w->later.slots[i].key)
			free_chain((struct held *)(uintptr_t)w->later.slots[i].val);
	hmap_free(&w->later);
	hmap_free(&w->dropped);
	wl_schedule_free(&w->sched);
	if (w->ahead)
		for (uint32_t i = 0; i < AHEAD; i++)
			free(w->ahead[i].hashes);
	free(w->ahead);
	free(w);
}

static void *replay_create(const cJSON *json, const char *path, const struct wl_env *env, char *err,
			   size_t errlen)
{
	static const char *const keys[] = {"kind",   "format",	 "path",    "time_scale",
					   "max_requests", "skip_bad", "repeat", "start_s",
					   "end_s",  "rate_schedule", NULL};
	static const char *const formats[] = {"mooncake", "azure", "kvsim", NULL};
	struct replay *w = calloc(1, sizeof *w);
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	w->env = *env;
	w->env.schedule = NULL; /* copied by wl_schedule_parse; not kept */
	w->time_scale = 1.0;
	w->max_requests = INT64_MAX;
	hmap_init(&w->later);
	hmap_init(&w->dropped);
	snprintf(w->path, sizeof w->path, "%s", path);
	int format = -1, skip = 0;
	char file[2048] = "", p[256];
	if (cfg_check_keys(json, path, keys, err, errlen) ||
	    cfg_enum(json, path, "format", formats, &format, err, errlen) ||
	    cfg_string(json, path, "path", file, sizeof file, err, errlen) ||
	    cfg_number(json, path, "time_scale", 1e-9, 1e9, &w->time_scale, err, errlen) ||
	    cfg_int(json, path, "max_requests", 1, CFG_INT_MAX, &w->max_requests, err, errlen) ||
	    cfg_bool(json, path, "skip_bad", &skip, err, errlen))
		goto fail;
	w->repeat = 1;
	w->end_s = INFINITY;
	if (cfg_int(json, path, "repeat", 1, 1000000, &w->repeat, err, errlen) ||
	    cfg_number(json, path, "start_s", 0, 4e9, &w->start_s, err, errlen) ||
	    cfg_number(json, path, "end_s", 0, 4e9, &w->end_s, err, errlen) ||
	    wl_schedule_parse(&w->sched, json, path, env->schedule, err, errlen))
		goto fail;
	if (w->end_s <= w->start_s) {
		snprintf(err, errlen, "%s: expected more than start_s (%g), got %g",
			 cfg_join(p, sizeof p, path, "end_s"), w->start_s, w->end_s);
		goto fail;
	}
	w->window = w->start_s > 0 || isfinite(w->end_s);
	w->start_ns = cfg_time_ns_clamp(w->start_s, 1e9);
	w->end_ns = isfinite(w->end_s) ? cfg_time_ns_clamp(w->end_s, 1e9) : INT64_MAX;
	if (format < 0 || !file[0]) {
		snprintf(err, errlen, "%s: a trace workload needs \"format\" (mooncake, azure, kvsim) "
				      "and \"path\"",
			 cfg_join(p, sizeof p, path, format < 0 ? "format" : "path"));
		goto fail;
	}
	char *full = w->full;
	if (file[0] == '/' || !env->base_dir || !env->base_dir[0])
		snprintf(full, sizeof w->full, "%s", file);
	else
		snprintf(full, sizeof w->full, "%s/%s", env->base_dir, file);
	w->format = (enum trace_format)format;
	w->skip_bad = skip;
	char inner[1024];
	if (trace_open(&w->tr, full, (enum trace_format)format, skip, inner, sizeof inner)) {
		snprintf(err, errlen, "%s: %s", cfg_join(p, sizeof p, path, "path"), inner);
		goto fail;
	}
	return w;
fail:
	replay_destroy(w);
	return NULL;
}

/* Segment ids of trace content, apart from the generators' ids. */
static uint64_t trace_id(uint64_t kind, uint64_t x)
{
	return rng_mix64(rng_mix64(kind * 0x7472616365ULL) ^ x) & ~(1ULL << 63);
}

/* Fills r from a record: the prompt's blocks from the trace's block ids (at
 * the KV page size), the answer as fresh tokens. Mooncake and Azure
 * requests are left unchained (wl_hash_unchained): next() chains a batch
 * of them at once. */
static int fill(struct replay *w, const struct trace_rec *rec, struct request *r, char *err,
		size_t errlen)
{
	uint32_t B = w->env.block_tokens;
	r->turn = rec->turn;
	r->last_turn = rec->last_turn;
	r->prompt_tokens = rec->input;
	r->output_tokens = rec->output;
	r->epoch = rec->pass; /* passes share nothing (see wl_ops.epochs) */
	if (w->tr.format == TRACE_KVSIM) {
		if (rec->block_tokens != B) {
			snprintf(err, errlen,
				 "%.900s:%llu: block_tokens %u differs from cluster.engine.kv_block_tokens "
				 "%u (the hashes name blocks of that size)",
				 w->tr.path, (unsigned long long)rec->line, rec->block_tokens, B);
			return -1;
		}
		if (r->hashes_cap < rec->n_ids) {
			uint64_t *nh = realloc(r->hashes, rec->n_ids * sizeof *nh);
			if (!nh)
				goto oom;
			r->hashes = nh;
			r->hashes_cap = rec->n_ids;
		}
		memcpy(r->hashes, rec->ids, rec->n_ids * sizeof *r->hashes);
		r->n_hashes = rec->n_ids;
		r->n_shared = rec->shared_blocks;
		r->session = rec->session;
		return 0;
	}
	r->session = (uint64_t)w->made;
	uint32_t nseg = rec->n_ids + 1;
	struct wl_seg stack[64], *segs = nseg <= 64 ? stack : malloc(nseg * sizeof *segs);
	if (!segs)
		goto oom;
	for (uint32_t i = 0; i < rec->n_ids; i++) {
		uint32_t left = rec->input - i * rec->block_tokens;
		segs[i].id = trace_id(1, rec->ids[i]);
		segs[i].len = left < rec->block_tokens ? left : rec->block_tokens;
	}
	/* Azure has no prefix information: each prompt is its own. The answer
	 * continues the prompt's last segment as new content. */
	uint32_t n = rec->n_ids;
	if (n == 0)
		segs[n++] = (struct wl_seg){trace_id(2, (uint64_t)w->made), rec->input};
	segs[n++] = (struct wl_seg){trace_id(3, (uint64_t)w->made), rec->output};
	int rc = wl_hash_unchained(r, segs, n, B);
	if (segs != stack)
		free(segs);
	if (rc)
		goto oom;
	r->n_shared = w->tr.format == TRACE_MOONCAKE ? rec->input / B : 0;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* The window on w->cur, just read: 1 keeps it (a first turn's arrival
 * then counts from start_s), 0 leaves it out, 2 is past end_s where a
 * Mooncake or Azure pass ends (their arrivals come in order and they have
 * no sessions; a kvsim trace is read on for the later turns of the
 * sessions kept), -1: out of memory. A kvsim session goes or stays whole,
 * with its first turn. */
static int in_window(struct replay *w)
{
	struct trace_rec *c = &w->cur;
	if (c->arrival_ns < 0) { /* a kvsim later turn */
		if (!hmap_get(&w->dropped, c->session))
			return 1;
		if (c->last_turn)
			hmap_del(&w->dropped, c->session);
		return 0;
	}
	if (c->arrival_ns >= w->start_ns && c->arrival_ns < w->end_ns) {
		c->arrival_ns -= w->start_ns;
		w->kept++;
		return 1;
	}
	if (w->format != TRACE_KVSIM)
		return c->arrival_ns >= w->end_ns ? 2 : 0;
	if (!c->last_turn && hmap_put(&w->dropped, c->session, 1) < 0) {
		snprintf(w->err, sizeof w->err, "out of memory");
		return -1;
	}
	return 0;
}

/* Reads the next record, holding kvsim later turns by session. Returns 1
 * with w->cur a first turn, 0 at the end, -1 on error. */
static int read_first_turn(struct replay *w)
{
	for (;;) {
		if (w->eof)
			return 0;
		int got = trace_next(&w->tr, &w->cur, w->err, sizeof w->err);
		if (got == 1 && w->window) {
			int in = in_window(w);
			if (in < 0)
				return -1;
			if (in == 0)
				continue;
			if (in == 2)
				got = 0;
		}
		if (got == 0 && trace_check_nonempty(&w->tr, w->err, sizeof w->err))
			return -1;
		if (got == 0 && w->window && !w->kept) {
			char end[40] = "its end";
			if (isfinite(w->end_s))
				snprintf(end, sizeof end, "%g s", w->end_s);
			snprintf(w->err, sizeof w->err,
				 "%.500s: no request arrives in the window [%g s, %s) that %.200s.start_s "
				 "and end_s cut from the trace (times %s)",
				 w->tr.path, w->start_s, end, w->path,
				 w->format == TRACE_KVSIM ? "as arrival_s gives them"
							   : "from the trace's first arrival");
			return -1;
		}
		if (got == 0 && w->pass + 1 < w->repeat) {
			/* The next pass, after this one's last arrival. */
			if (!w->skipped_before && w->tr.skipped)
				snprintf(w->first_bad, sizeof w->first_bad, "%s", w->tr.first_bad);
			w->skipped_before += w->tr.skipped;
			trace_close(&w->tr);
			if (trace_open(&w->tr, w->full, w->format, w->skip_bad, w->err, sizeof w->err))
				return -1;
			w->pass++;
			w->shift_ns = cfg_time_add(w->last_ns, 1000000000LL);
			w->kept = 0;
			hmap_free(&w->dropped);
			hmap_init(&w->dropped);
			continue;
		}
		if (got <= 0) {
			w->eof = got == 0;
			return got;
		}
		w->cur.pass = (uint32_t)w->pass;
		if (w->pass > 0) {
			uint64_t salt = rng_mix64((uint64_t)w->pass * 0x9e3779b97f4a7c15ULL);
			for (uint32_t i = 0; i < w->cur.n_ids; i++)
				w->cur.ids[i] = rng_mix64(w->cur.ids[i] ^ salt) | 1;
			if (w->cur.session)
				w->cur.session = rng_mix64(w->cur.session ^ salt) | 1;
		}
		if (w->cur.arrival_ns >= 0) {
			w->cur.arrival_ns = cfg_time_add(w->cur.arrival_ns, w->shift_ns);
			if (w->cur.arrival_ns > w->last_ns)
				w->last_ns = w->cur.arrival_ns;
		}
		if (w->cur.turn == 1)
			return 1;
		/* A later turn: append it to its session's chain. */
		struct held *h = calloc(1, sizeof *h);
		if (!h) {
			snprintf(w->err, sizeof w->err, "out of memory");
			return -1;
		}
		h->rec = w->cur;
		memset(&w->cur, 0, sizeof w->cur);
		uint64_t *v = hmap_get(&w->later, h->rec.session);
		if (!v) {
			if (hmap_put(&w->later, h->rec.session, (uint64_t)(uintptr_t)h) < 0) {
				free(h);
				snprintf(w->err, sizeof w->err, "out of memory");
				return -1;
			}
		} else {
			struct held *t = (struct held *)(uintptr_t)*v;
			while (t->next)
				t = t->next;
			t->next = h;
		}
	}
}

/* Reads up to AHEAD Mooncake or Azure requests (no further than
 * max_requests) into w->ahead and hashes them. */
static void read_ahead(struct replay *w)
{
	struct request *batch[AHEAD];
	uint32_t n = 0;
	w->ahead_end = 0;
	while (n < AHEAD && w->made + (int64_t)n < w->max_requests) {
		int got = read_first_turn(w);
		if (got <= 0) {
			w->ahead_end = got;
			break;
		}
		struct request *r = &w->ahead[n];
		r->arrival_ns = wl_schedule_map(
		    &w->sched, cfg_time_ns_clamp((double)w->cur.arrival_ns, w->time_scale));
		/* fill names the request by its number, counted from 1 */
		w->made += n + 1;
		int rc = fill(w, &w->cur, r, w->err, sizeof w->err);
		w->made -= n + 1;
		if (rc) {
			w->ahead_end = -1;
			break;
		}
		batch[n++] = r;
	}
	wl_hash_chain(batch, n);
	w->ahead_at = 0;
	w->ahead_n = n;
}

static int replay_next(void *st, struct request *r)
{
	struct replay *w = st;
	if (w->tr.format != TRACE_KVSIM) {
		if (!w->ahead && !(w->ahead = calloc(AHEAD, sizeof *w->ahead))) {
			snprintf(w->err, sizeof w->err, "out of memory");
			return -1;
		}
		if (w->ahead_at == w->ahead_n) {
			if (w->ahead_n && w->ahead_n < AHEAD && w->made < w->max_requests)
				return w->ahead_end; /* the batch stopped short: why */
			if (w->made >= w->max_requests)
				return 0;
			read_ahead(w);
			if (!w->ahead_n)
				return w->ahead_end;
		}
		/* r takes the request; the slot keeps r's old hash buffer */
		wl_take(r, &w->ahead[w->ahead_at++]);
		w->made++;
		return 1;
	}
	if (w->made >= w->max_requests)
		return 0;
	struct trace_rec *rec;
	struct held *h = w->open_head;
	if (h) {
		w->open_head = h->next;
		if (!w->open_head)
			w->open_tail = NULL;
		rec = &h->rec;
	} else {
		int got = read_first_turn(w);
		if (got <= 0)
			return got;
		rec = &w->cur;
	}
	w->made++;
	r->arrival_ns =
	    wl_schedule_map(&w->sched, cfg_time_ns_clamp((double)rec->arrival_ns, w->time_scale));
	int rc = fill(w, rec, r, w->err, sizeof w->err);
	if (h) {
		trace_rec_free(&h->rec);
		free(h);
	}
	return rc ? -1 : 1;
}

static void drop_session(struct replay *w, uint64_t session)
{
	uint64_t *v = hmap_get(&w->later, session);
	if (!v)
		return;
	free_chain((struct held *)(uintptr_t)*v);
	hmap_del(&w->later, session);
}

static int replay_follow_up(void *st, const struct request *done, int completed, int64_t now_ns,
			    struct request *out)
{
	struct replay *w = st;
	if (w->tr.format != TRACE_KVSIM)
		return 0;
	if (!completed || done->last_turn || w->made >= w->max_requests) {
		drop_session(w, done->session);
		return 0;
	}
	uint64_t *v = hmap_get(&w->later, done->session);
	while (!v && !w->eof) {
		/* Not read yet: read ahead, holding first turns for next(). */
		int got = read_first_turn(w);
		if (got < 0)
			return -1;
		if (got == 1) {
			struct held *h = calloc(1, sizeof *h);
			if (!h)
				return -1;
			h->rec = w->cur;
			memset(&w->cur, 0, sizeof w->cur);
			if (w->open_tail)
				w->open_tail->next = h;
			else
				w->open_head = h;
			w->open_tail = h;
		}
		v = hmap_get(&w->later, done->session);
	}
	if (!v)
		return 0;
	struct held *h = (struct held *)(uintptr_t)*v;
	if (h->rec.turn != done->turn + 1) {
		snprintf(w->err, sizeof w->err, "%.900s:%llu: session %llu turn %u follows turn %u",
			 w->tr.path, (unsigned long long)h->rec.line,
			 (unsigned long long)done->session, h->rec.turn, done->turn);
		return -1;
	}
	if (h->next)
		*v = (uint64_t)(uintptr_t)h->next;
	else
		hmap_del(&w->later, done->session);
	w->made++;
	out->arrival_ns = cfg_time_add(now_ns, cfg_time_ns_clamp((double)h->rec.after_ns, w->time_scale));
	int rc = fill(w, &h->rec, out, w->err, sizeof w->err);
	trace_rec_free(&h->rec);
	free(h);
	return rc ? -1 : 1;
}

static const char *replay_error(void *st)
{
	struct replay *w = st;
	return w->err[0] ? w->err : NULL;
}

static uint64_t replay_skipped(void *st, char *first, size_t firstlen)
{
	struct replay *w = st;
	uint64_t n = w->skipped_before + w->tr.skipped;
	if (n)
		snprintf(first, firstlen, "%s", w->skipped_before ? w->first_bad : w->tr.first_bad);
	return n;
}

const struct wl_ops wl_trace = {
    .name = "trace",
    .description = "replay of a trace file: mooncake JSONL, azure CSV or kvsim JSONL "
		   "(closed-loop sessions included), with time_scale, max_requests and repeat",
    .create = replay_create,
    .next = replay_next,
    .follow_up = replay_follow_up,
    .destroy = replay_destroy,
    .error = replay_error,
    .skipped = replay_skipped,
    .epochs = 1,
    .rate_key = NULL, /* the trace's own arrival times (time_scale stretches them) */
};
