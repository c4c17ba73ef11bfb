/* pool: the run's request and session records, reused through free lists. */
#include "sim/pool.h"

#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

struct request *pool_req_get(struct sim *s)
{
	struct request *r = s->pool.free_reqs;
	if (r) {
		s->pool.free_reqs = r->pool_next;
	} else {
		void *p = NULL;
		if (posix_memalign(&p, 64, sizeof *r) != 0) {
			sim_fail(s, "out of memory");
			return NULL;
		}
		r = p;
		r->hashes = NULL;
		r->hashes_cap = 0;
	}
	/* Keep the hash buffer, clear the rest. */
	uint64_t *h = r->hashes;
	uint32_t hc = r->hashes_cap;
	memset(r, 0, sizeof *r);
	r->hashes = h;
	r->hashes_cap = hc;
	r->kv_tail = KV_NONE;
	r->open_from = REQ_TAIL_SHUT;
	r->kv_hint = KV_NONE;
	r->ever_run = CTREE_NONE;
	r->node = -1;
	r->prefill_node = -1;
	r->pd_src_tail = KV_NONE;
	r->sched_ns = -1;
	return r;
}

void pool_req_put(struct sim *s, struct request *r)
{
	r->pool_next = s->pool.free_reqs;
	s->pool.free_reqs = r;
}

struct session_rec *pool_session_get(struct sim *s, uint64_t id)
{
	uint64_t *v = hmap_get(&s->pool.sessions, id);
	if (v)
		return (struct session_rec *)(uintptr_t)*v;
	struct session_rec *rec = s->pool.free_sessions;
	if (rec) {
		s->pool.free_sessions = rec->free_next;
	} else {
		rec = calloc(1, sizeof *rec);
		if (!rec) {
			sim_fail(s, "out of memory");
			return NULL;
		}
	}
	rec->id = id;
	rec->live = 0;
	rec->last_node = -1;
	rec->hint_node = -1;
	rec->n_nodes = 0;
	rec->frontier_len = 0;
	rec->frontier_hash = 0;
	rec->idle_req = NULL;
	rec->idle_seq = 0;
	if (hmap_put(&s->pool.sessions, id, (uint64_t)(uintptr_t)rec) < 0) {
		sim_fail(s, "out of memory");
		return NULL;
	}
	return rec;
}

void pool_session_end(struct sim *s, struct session_rec *rec)
{
	hmap_del(&s->pool.sessions, rec->id);
	rec->id = 0; /* a request still carrying it finds it ended */
	rec->free_next = s->pool.free_sessions;
	s->pool.free_sessions = rec;
}

void pool_init(struct sim *s)
{
	hmap_init(&s->pool.sessions);
}

void pool_free(struct sim *s)
{
	while (s->pool.free_reqs) {
		struct request *r = s->pool.free_reqs;
		s->pool.free_reqs = r->pool_next;
		free(r->hashes);
		free(r);
	}
	for (size_t i = 0; i < s->pool.sessions.cap; i++) {
		if (s->pool.sessions.slots[i].key) {
			free((struct session_rec *)(uintptr_t)s->pool.sessions.slots[i].val);
		}
	}
	while (s->pool.free_sessions) {
		struct session_rec *rec = s->pool.free_sessions;
		s->pool.free_sessions = rec->free_next;
		free(rec);
	}
	hmap_free(&s->pool.sessions);
}
