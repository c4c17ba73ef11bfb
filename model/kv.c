/* kv: run tree of cached blocks, lazy LRU heap of evictable leaves. */
#include "model/kv.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctree.h"

/* Array capacities come in quarter steps between powers of two: class
 * 4 c + s holds (8 << c) (4 + s) / 4 hashes (c < 27, s < 4: 8, 10, 12, 14,
 * 16, 20, ...), so an array is at most a quarter larger than a run asked
 * for (a run is given room for its request's whole chain at once, so it
 * seldom grows a step at a time). */
static uint32_t class_cap(unsigned k)
{
	uint32_t p = UINT32_C(8) << (k / 4);
	return p + (k % 4) * (p / 4);
}

/* The smallest class that holds want hashes (want <= 8 << 26); for a
 * class_cap value, its class. */
static unsigned class_for(uint32_t want)
{
	if (want <= 8)
		return 0;
	unsigned c = (unsigned)(31 - __builtin_clz(want)) - 3; /* 8 << c <= want */
	uint32_t p = UINT32_C(8) << c, q = p / 4;
	unsigned s = (want - p + q - 1) / q; /* 0..4 */
	return 4 * c + s; /* s = 4 is the next power's first class */
}

void kv_spares_free(struct kv_spares *s)
{
	for (unsigned c = 0; c < sizeof s->list / sizeof s->list[0]; c++) {
		while (s->list[c]) {
			uint64_t *a = s->list[c];
			memcpy(&s->list[c], a, sizeof s->list[c]);
			free(a);
			s->bytes -= (size_t)class_cap(c) * sizeof *a;
		}
		s->n_spare[c] = 0;
	}
}

int kv_init(struct kv_pool *p, uint32_t n)
{
	memset(p, 0, sizeof *p);
	p->n_blocks = n;
	p->n_free = n;
	p->free_run = KV_NONE;
	hmap_init(&p->first);
	return 0;
}

void kv_free(struct kv_pool *p)
{
	for (uint32_t i = 0; i < p->n_runs; i++)
		if (p->runs[i].hashes) { /* then p->spares is set */
			unsigned c = class_for(p->runs[i].cap);
			p->spares->in_use[c]--;
			p->spares->bytes -= p->runs[i].cap * sizeof *p->runs[i].hashes;
			free(p->runs[i].hashes);
		}
	if (p->spares_own) {
		kv_spares_free(p->spares);
		free(p->spares);
	}
	free(p->runs);
	free(p->ring);
	free(p->heap);
	hmap_free(&p->first);
	memset(p, 0, sizeof *p);
}

/* --- evictable runs, least seq first, entries validated when taken ---
 *
 * A run becomes evictable when released (a fresh seq, the largest yet) or,
 * already released, when its last child goes (its own, older seq). The
 * first kind, nearly every entry, goes to a FIFO ring, which stays in seq
 * order; the second to a min-heap beside it. The least seq is the first
 * of either. Two entries with one seq name one run: a seq is given at a
 * release, and the lower part of a split, which copies its run's, is
 * locked at once (kv_acquire, adopt) and gets a seq of its own when
 * released. So the order taken is the one min-heap's order, and so are
 * ties. The ring is read from its front, in order, where the heap's pops
 * walked a path of cold lines per entry. */

static int evictable(const struct kv_pool *p, const struct kv_evictable *e);

static void sift_down(struct kv_pool *p, uint32_t i)
{
	struct kv_evictable e = p->heap[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= p->heap_n)
			break;
		if (c + 1 < p->heap_n && p->heap[c + 1].seq < p->heap[c].seq)
			c++;
		if (p->heap[c].seq >= e.seq)
			break;
		p->heap[i] = p->heap[c];
		i = c;
	}
	p->heap[i] = e;
}

static inline struct kv_evictable *ring_at(const struct kv_pool *p, uint32_t k)
{
	return &p->ring[(p->ring_head + k) & (p->ring_cap - 1)];
}

/* Drops stale entries (the ring's in order) and re-heapifies. O(entries). */
static void ev_rebuild(struct kv_pool *p)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < p->ring_n; i++)
		if (evictable(p, ring_at(p, i)))
			*ring_at(p, k++) = *ring_at(p, i);
	p->ring_n = k;
	k = 0;
	for (uint32_t i = 0; i < p->heap_n; i++)
		if (evictable(p, &p->heap[i]))
			p->heap[k++] = p->heap[i];
	p->heap_n = k;
	for (uint32_t i = k / 2; i-- > 0;)
		sift_down(p, i);
}

/* The ring twice as large (a power of two), its entries from index 0. */
static int ring_grow(struct kv_pool *p)
{
	uint32_t cap = p->ring_cap ? p->ring_cap * 2 : 256;
	struct kv_evictable *nr = malloc(cap * sizeof *nr);
	if (!nr)
		return -1;
	for (uint32_t i = 0; i < p->ring_n; i++)
		nr[i] = *ring_at(p, i);
	free(p->ring);
	p->ring = nr;
	p->ring_cap = cap;
	p->ring_head = 0;
	return 0;
}

static void ev_push(struct kv_pool *p, uint32_t run)
{
	if (p->ring_n + p->heap_n >= 2 * p->n_alive + 256)
		ev_rebuild(p);
	struct kv_evictable e = {p->runs[run].release_seq, run};
	if (p->ring_n == 0 || ring_at(p, p->ring_n - 1)->seq <= e.seq) {
		if (p->ring_n == p->ring_cap && ring_grow(p)) {
			p->oom = 1; /* the run is simply not evictable */
			return;
		}
		*ring_at(p, p->ring_n++) = e;
		return;
	}
	if (p->heap_n == p->heap_cap) {
		uint32_t cap = p->heap_cap ? p->heap_cap * 2 : 64;
		struct kv_evictable *nh = realloc(p->heap, cap * sizeof *nh);
		if (!nh) {
			p->oom = 1;
			return;
		}
		p->heap = nh;
		p->heap_cap = cap;
	}
	uint32_t i = p->heap_n++;
	while (i > 0) {
		uint32_t up = (i - 1) / 2;
		if (p->heap[up].seq <= e.seq)
			break;
		p->heap[i] = p->heap[up];
		i = up;
	}
	p->heap[i] = e;
}

/* The entry with the least seq (the ring's at a tie: the same run), or
 * NULL when there is none. */
static inline const struct kv_evictable *ev_first(const struct kv_pool *p)
{
	const struct kv_evictable *r = p->ring_n ? &p->ring[p->ring_head] : NULL;
	if (p->heap_n && (!r || p->heap[0].seq < r->seq))
		return &p->heap[0];
	return r;
}

/* Drops e, which ev_first gave. */
static void ev_pop(struct kv_pool *p, const struct kv_evictable *e)
{
	if (p->heap_n && e == p->heap) {
		p->heap[0] = p->heap[--p->heap_n];
		if (p->heap_n)
			sift_down(p, 0);
		return;
	}
	p->ring_head = (p->ring_head + 1) & (p->ring_cap - 1);
	/* the next one's run, which the next eviction checks */
	if (--p->ring_n)
		__builtin_prefetch(&p->runs[p->ring[p->ring_head].run]);
}

static int evictable(const struct kv_pool *p, const struct kv_evictable *e)
{
	const struct kv_run *r = &p->runs[e->run];
	return r->alive && r->lock == 0 && r->n_children == 0 && r->len > 0 &&
	       r->release_seq == e->seq;
}

/* --- runs --- */

/* A fresh run slot, or KV_NONE (p->oom set) when memory runs out. */
static uint32_t run_new(struct kv_pool *p)
{
	uint32_t id = p->free_run;
	if (id != KV_NONE) {
		p->free_run = p->runs[id].next_free;
	} else {
		/* At most one run per cached block plus one per split; the run
		 * array grows with what is cached, never past 2 * n_blocks. */
		if ((p->n_runs & (p->n_runs - 1)) == 0) {
			uint32_t cap = p->n_runs ? p->n_runs * 2 : 64;
			struct kv_run *nr = realloc(p->runs, cap * sizeof *nr);
			if (!nr) {
				p->oom = 1;
				return KV_NONE;
			}
			p->runs = nr;
		}
		id = p->n_runs++;
		p->runs[id].hashes = NULL;
		p->runs[id].cap = 0;
	}
	struct kv_run *r = &p->runs[id];
	r->len = 0;
	r->depth = 0;
	r->parent = KV_NONE;
	r->n_children = 0;
	r->lock = 0;
	r->release_seq = 0;
	r->next_free = KV_NONE;
	r->alive = 1;
	r->open = 0;
	p->n_alive++;
	return id;
}

/* A run's hash array of capacity cap is no longer used: kept for the next
 * run of its class, or freed when the class has spares enough. */
static void spare_put(struct kv_pool *p, uint64_t *a, uint32_t cap)
{
	struct kv_spares *s = p->spares;
	unsigned c = class_for(cap);
	s->in_use[c]--;
	if (s->n_spare[c] >= s->in_use[c] / 8 + 16) {
		free(a);
		s->bytes -= cap * sizeof *a;
		return;
	}
	memcpy(a, &s->list[c], sizeof s->list[c]);
	s->list[c] = a;
	s->n_spare[c]++;
}

/* Room for want hashes in r, keeping its first len: an array of the
 * smallest class that holds them (class_for) from the spare ones, else
 * from malloc; r's old array becomes a spare. 0, or -1 (p->oom set) when
 * memory runs out. */
static int run_reserve(struct kv_pool *p, struct kv_run *r, uint32_t want)
{
	if (want <= r->cap)
		return 0;
	if (want > (UINT32_C(8) << 26)) {
		p->oom = 1;
		return -1;
	}
	unsigned c = class_for(want);
	uint32_t cap = class_cap(c);
	if (!p->spares) {
		p->spares = calloc(1, sizeof *p->spares);
		if (!p->spares) {
			p->oom = 1;
			return -1;
		}
		p->spares_own = 1;
	}
	struct kv_spares *s = p->spares;
	uint64_t *nh = s->list[c];
	if (nh) {
		memcpy(&s->list[c], nh, sizeof s->list[c]);
		s->n_spare[c]--;
	} else {
		nh = malloc(cap * sizeof *nh);
		if (!nh) {
			p->oom = 1;
			return -1;
		}
		s->bytes += cap * sizeof *nh;
	}
	s->in_use[c]++;
	if (r->hashes) {
		memcpy(nh, r->hashes, r->len * sizeof *nh);
		spare_put(p, r->hashes, r->cap);
	}
	r->hashes = nh;
	r->cap = cap;
	return 0;
}


static void run_delete(struct kv_pool *p, uint32_t id)
{
	struct kv_run *r = &p->runs[id];
	r->alive = 0;
	p->n_alive--;
	r->next_free = p->free_run;
	p->free_run = id;
	if (r->hashes) {
		spare_put(p, r->hashes, r->cap);
		r->hashes = NULL;
		r->cap = 0;
	}
}

/* Splits run id after its first m blocks (0 < m < len): a new run takes the
 * upper part and id keeps the lower part, so requests whose tail is id stay
 * valid. Returns the upper run. O(len). */
static uint32_t split(struct kv_pool *p, uint32_t id, uint32_t m)
{
	uint32_t up = run_new(p);
	if (up == KV_NONE)
		return KV_NONE;
	struct kv_run *u = &p->runs[up], *r = &p->runs[id];
	assert(m > 0 && m < r->len);
	if (run_reserve(p, u, m) ||
	    hmap_put(&p->first, r->hashes[m], id) < 0) {
		p->oom = 1;
		run_delete(p, up);
		return KV_NONE;
	}
	memcpy(u->hashes, r->hashes, m * sizeof *u->hashes);
	u->len = m;
	u->depth = r->depth;
	u->parent = r->parent;
	u->n_children = 1;
	u->lock = r->lock;
	u->release_seq = r->release_seq;
	memmove(r->hashes, r->hashes + m, (r->len - m) * sizeof *r->hashes);
	r->len -= m;
	r->depth += m;
	r->parent = up;
	hmap_put(&p->first, u->hashes[0], up); /* overwrites: cannot fail */
	return up;
}

/* --- lookups --- */

void kv_lookup_prefix(const struct kv_pool *p, const uint64_t *hashes, uint32_t n,
		      struct kv_match *m)
{
	m->blocks = m->unlocked = m->run_used = m->open = 0;
	m->run = KV_NONE;
	uint32_t i = 0;
	while (i < n) {
		const uint64_t *v = hmap_get(&p->first, hashes[i]);
		if (!v)
			break;
		uint32_t id = (uint32_t)*v;
		const struct kv_run *r = &p->runs[id];
		uint32_t lim = r->len < n - i ? r->len : n - i;
		uint32_t used = chain_match(hashes + i, r->hashes, lim);
		m->run = id;
		m->run_used = used;
		if (r->lock == 0)
			m->unlocked += used;
		i += used;
		/* A run that goes on after r begins with r's last block's
		 * successor, so it is r's child: with none, no probe finds one. */
		if (used < r->len || r->n_children == 0) {
			m->open = r->open && used == r->len && i < n;
			break;
		}
	}
	m->blocks = i;
}

static void lock_path(struct kv_pool *p, uint32_t id)
{
	for (; id != KV_NONE; id = p->runs[id].parent) {
		struct kv_run *r = &p->runs[id];
		if (r->lock++ == 0) {
			p->n_cached -= r->len;
			p->n_used += r->len;
		}
	}
}

uint32_t kv_acquire(struct kv_pool *p, const struct kv_match *m)
{
	if (m->run == KV_NONE)
		return KV_NONE;
	uint32_t tail = m->run;
	if (m->run_used < p->runs[tail].len) {
		uint32_t up = split(p, tail, m->run_used);
		/* Out of memory: lock the whole run (p->oom tells the owner to stop). */
		tail = up == KV_NONE ? tail : up;
	}
	lock_path(p, tail);
	return tail;
}

/* Evicts up to want (> 0) blocks, all from the least recently released
 * evictable run, tail first: what evicting one block at a time that often
 * does (the run stays the heap's first while it has blocks). Returns how
 * many, 0 when nothing is evictable. */
static uint32_t evict_some(struct kv_pool *p, uint32_t want)
{
	const struct kv_evictable *e;
	while ((e = ev_first(p)) != NULL) {
		if (!evictable(p, e)) {
			ev_pop(p, e);
			continue;
		}
		uint32_t id = e->run;
		struct kv_run *r = &p->runs[id];
		uint32_t k = want < r->len ? want : r->len;
		if (!p->on_evict) {
			r->len -= k;
		} else {
			for (uint32_t i = 0; i < k; i++) {
				r->len--;
				p->on_evict(p->evict_ctx, r->hashes[r->len]);
			}
		}
		p->n_cached -= k;
		p->n_free += k;
		p->evictions += k;
		if (r->len == 0) {
			ev_pop(p, e);
			hmap_del(&p->first, r->hashes[0]);
			uint32_t parent = r->parent;
			run_delete(p, id);
			if (parent != KV_NONE) {
				struct kv_run *pr = &p->runs[parent];
				if (--pr->n_children == 0 && pr->lock == 0)
					ev_push(p, parent);
			}
		}
		return k;
	}
	return 0;
}

int kv_evict_spares(const struct kv_pool *p, uint32_t e, const struct kv_match *m)
{
	const struct kv_evictable *first = ev_first(p);
	if (!first || !evictable(p, first))
		return 0;
	uint32_t v = first->run;
	const struct kv_run *r = &p->runs[v];
	if (r->len < e)
		return 0; /* the next victims too: not told at once */
	return v != m->run || r->len - e >= m->run_used;
}

uint32_t kv_evict(struct kv_pool *p, uint32_t n)
{
	uint32_t k = 0;
	while (k < n && p->n_cached > 0) {
		uint32_t e = evict_some(p, n - k);
		if (e == 0)
			break;
		k += e;
	}
	return k;
}

uint32_t kv_drop(struct kv_pool *p, const uint64_t *hashes, uint32_t lo, uint32_t n, int dry)
{
	struct kv_match m;
	kv_lookup_prefix(p, hashes, n, &m);
	assert(!m.open); /* the owner commits held-back blocks first */
	uint32_t id = m.run, went = 0;
	/* a match that ends inside a run: the run goes on with other blocks,
	 * so the chain's part of it is their prefix, not the chain's own */
	if (id == KV_NONE || m.run_used < p->runs[id].len)
		return 0;
	/* children: those the run keeps (a dry run counts the one that would
	 * have gone as gone) */
	uint32_t gone = 0;
	while (id != KV_NONE) {
		struct kv_run *r = &p->runs[id];
		if (r->lock || r->n_children != gone || r->depth + r->len <= lo)
			break;
		uint32_t from = r->depth > lo ? r->depth : lo, k = r->depth + r->len - from;
		uint32_t parent = r->parent;
		went += k;
		if (dry) {
			if (from > r->depth)
				break;
			gone = 1;
			id = parent;
			continue;
		}
		r->len -= k;
		p->n_cached -= k;
		p->n_free += k;
		if (r->len > 0)
			break; /* still a leaf, its place in the eviction order kept */
		hmap_del(&p->first, r->hashes[0]);
		run_delete(p, id);
		if (parent != KV_NONE) {
			struct kv_run *pr = &p->runs[parent];
			if (--pr->n_children == 0 && pr->lock == 0)
				ev_push(p, parent);
		}
		id = parent;
	}
	return went;
}

int kv_take(struct kv_pool *p, uint32_t n)
{
	if (n > kv_available(p))
		return -1;
	while (p->n_free < n) {
		if (evict_some(p, n - p->n_free) == 0) {
			p->oom = 1; /* cached blocks not reachable: only after an OOM */
			return -1;
		}
	}
	p->n_free -= n;
	p->n_used += n;
	return 0;
}

/* A cached run starting with h would hang under our tail (hashes chain),
 * so a tail without children rules it out with no lookup. */
static const uint64_t *cached_after(const struct kv_pool *p, uint32_t tail, uint64_t h)
{
	return tail != KV_NONE && p->runs[tail].n_children == 0 ? NULL : hmap_get(&p->first, h);
}

/* The request's next m blocks are the first m of cached run c (computed at
 * the same time by another request): it adopts them and frees its copies.
 * Hashes chain, so c starts right after the request's path. 0, or -1 when
 * memory ran out (p->oom set). */
static int adopt(struct kv_pool *p, uint32_t *tail, uint32_t c, uint32_t m)
{
	if (p->runs[c].len > m && (c = split(p, c, m)) == KV_NONE)
		return -1;
	/* The lock below covers c alone: its ancestors are our path. */
	struct kv_run *r = &p->runs[c];
	if (r->lock++ == 0) {
		p->n_cached -= r->len;
		p->n_used += r->len;
	}
	p->n_used -= m; /* our copies */
	p->n_free += m;
	*tail = c;
	return 0;
}

static int commit_new(struct kv_pool *p, uint32_t *tail, uint32_t idx, uint64_t h,
		      uint32_t room);

/* Commits block idx (hash h[0]) as kv_commit_block does; when it is cached
 * already, adopts as many of the cached run's blocks as match h[0..n) at
 * once: one run, not one per block (the same blocks, locks and release
 * order; the run tree is only shallower). A new run gets room for `room`
 * blocks. Returns the blocks committed (at least 1), or 0 when memory ran
 * out. */
static uint32_t commit_at(struct kv_pool *p, uint32_t *tail, uint32_t idx, const uint64_t *h,
			  uint32_t n, uint32_t room)
{
	const uint64_t *v = cached_after(p, *tail, h[0]);
	if (!v)
		return commit_new(p, tail, idx, h[0], room) ? 0 : 1;
	uint32_t c = (uint32_t)*v, m = 1;
	const struct kv_run *cr = &p->runs[c];
	while (m < cr->len && m < n && cr->hashes[m] == h[m])
		m++;
	if (cr->open && m == cr->len && m < n) {
		p->open_hit = 1; /* its owner's held-back blocks may match on */
		return 0;
	}
	return adopt(p, tail, c, m) ? 0 : m;
}

int kv_commit_block(struct kv_pool *p, uint32_t *tail, uint32_t idx, uint64_t h)
{
	return commit_at(p, tail, idx, &h, 1, 1) ? 0 : -1;
}

/* Block idx (hash h, not cached after the request's path) becomes cached:
 * appended to the tail run if the request holds it alone with nothing
 * under it, else a new run, with room for `room` blocks (the rest of the
 * request's chain, which it will append). */
static int commit_new(struct kv_pool *p, uint32_t *tail, uint32_t idx, uint64_t h,
		      uint32_t room)
{
	uint32_t t = *tail;
	if (t != KV_NONE && p->runs[t].lock == 1 && p->runs[t].n_children == 0) {
		struct kv_run *r = &p->runs[t];
		assert(r->depth + r->len == idx);
		if (run_reserve(p, r, r->len + 1))
			return -1;
		r->hashes[r->len++] = h;
		return 0; /* the block moves from own to a locked run: n_used unchanged */
	}
	uint32_t id = run_new(p);
	if (id == KV_NONE)
		return -1;
	struct kv_run *r = &p->runs[id];
	if (run_reserve(p, r, room) || hmap_put(&p->first, h, id) < 0) {
		p->oom = 1;
		run_delete(p, id);
		return -1;
	}
	r->hashes[0] = h;
	r->len = 1;
	r->depth = idx;
	r->parent = t;
	r->lock = 1;
	if (t != KV_NONE)
		p->runs[t].n_children++;
	*tail = id;
	return 0;
}

uint32_t kv_commit_blocks_any(struct kv_pool *p, uint32_t *tail, uint32_t from, uint32_t to,
			      const uint64_t *hashes, uint32_t n_chain)
{
	for (uint32_t b = from; b < to; b++) {
		struct kv_run *r = *tail != KV_NONE ? &p->runs[*tail] : NULL;
		if (r && r->lock == 1 && r->n_children == 0) {
			/* kv_commit_block would append each of the rest here: no
			 * run can start with them (they chain under this one,
			 * which has no children) */
			assert(r->depth + r->len == b);
			uint32_t want = r->len + (to - b);
			if (want > r->cap && n_chain > to && n_chain - r->depth > want)
				want = n_chain - r->depth; /* the chain's later blocks too */
			if (run_reserve(p, r, want))
				return b - from;
			memcpy(r->hashes + r->len, hashes + b, (to - b) * sizeof *hashes);
			r->len += to - b;
			return to - from;
		}
		uint32_t k = commit_at(p, tail, b, hashes + b, to - b, n_chain > b ? n_chain - b : 1);
		if (k == 0)
			return b - from;
		b += k - 1;
	}
	return to - from;
}

void kv_release(struct kv_pool *p, uint32_t tail, uint32_t n_own)
{
	for (uint32_t id = tail; id != KV_NONE; id = p->runs[id].parent) {
		struct kv_run *r = &p->runs[id];
		assert(r->lock > 0);
		if (--r->lock > 0)
			continue;
		p->n_used -= r->len;
		p->n_cached += r->len;
		r->release_seq = ++p->seq;
		if (r->n_children == 0)
			ev_push(p, id);
	}
	assert(p->n_used >= n_own);
	p->n_used -= n_own;
	p->n_free += n_own;
}

uint32_t kv_install(struct kv_pool *p, const uint64_t *hashes, uint32_t lo, uint32_t hi)
{
	struct kv_match m;
	kv_lookup_prefix(p, hashes, hi, &m);
	assert(!m.open); /* the owner commits held-back blocks before installs */
	if (m.blocks >= hi)
		return hi;
	if (m.blocks < lo)
		return m.blocks; /* the prefix it hangs from is gone */
	/* Hold the path while making room, so eviction cannot take it. */
	uint32_t tail = kv_acquire(p, &m);
	uint32_t want = hi - m.blocks;
	uint32_t room = kv_available(p);
	if (want > room)
		want = room;
	if (want == 0 || kv_take(p, want) != 0) {
		if (tail != KV_NONE)
			kv_release(p, tail, 0);
		return m.blocks;
	}
	/* as a range: what block-by-block commits do, with the run grown once */
	uint32_t done = kv_commit_blocks_any(p, &tail, m.blocks, m.blocks + want, hashes, hi);
	kv_release(p, tail, want - done); /* blocks that found no place are freed */
	return m.blocks + done;
}

int kv_audit(const struct kv_pool *p, uint64_t *locked_out, const char **why)
{
	uint64_t cached = 0, locked = 0;
	uint32_t leaves = 0; /* unlocked runs without children: evictable */
	*why = NULL;
	for (uint32_t i = 0; i < p->n_runs; i++) {
		const struct kv_run *r = &p->runs[i];
		if (!r->alive)
			continue;
		if (r->len == 0) {
			*why = "a live run with no blocks";
			return -1;
		}
		if (r->open && (r->lock != 1 || r->n_children != 0)) {
			*why = "an open run that is not one request's own tail";
			return -1;
		}
		if (r->lock)
			locked += r->len;
		else
			cached += r->len;
		leaves += r->lock == 0 && r->n_children == 0;
		const uint64_t *v = hmap_get(&p->first, r->hashes[0]);
		if (!v || *v != i) {
			*why = "a run missing from the first-hash index";
			return -1;
		}
		if (r->parent != KV_NONE) {
			const struct kv_run *pr = &p->runs[r->parent];
			if (!pr->alive || pr->depth + pr->len != r->depth) {
				*why = "a run that does not continue its parent";
				return -1;
			}
			if (pr->lock < r->lock) {
				*why = "a run locked more often than its parent";
				return -1;
			}
		} else if (r->depth != 0) {
			*why = "a root run that does not start at block 0";
			return -1;
		}
	}
	/* The eviction order: the ring in release order, the heap a min-heap,
	 * and every evictable run named by a current entry (so at least as
	 * many current entries as such runs: a run may have two). */
	uint32_t current = 0;
	for (uint32_t k = 0; k < p->ring_n; k++) {
		if (k > 0 && ring_at(p, k)->seq < ring_at(p, k - 1)->seq) {
			*why = "the eviction ring out of release order";
			return -1;
		}
		current += evictable(p, ring_at(p, k));
	}
	for (uint32_t k = 0; k < p->heap_n; k++) {
		if (k > 0 && p->heap[(k - 1) / 2].seq > p->heap[k].seq) {
			*why = "the eviction heap out of order";
			return -1;
		}
		current += evictable(p, &p->heap[k]);
	}
	if (!p->oom && current < leaves) {
		*why = "an evictable run missing from the eviction order";
		return -1;
	}
	*locked_out = locked;
	if (cached != p->n_cached) {
		*why = "unlocked run blocks differ from n_cached";
		return -1;
	}
	if (locked > p->n_used) {
		*why = "locked run blocks exceed n_used";
		return -1;
	}
	if ((uint64_t)p->n_free + p->n_cached + p->n_used != p->n_blocks) {
		*why = "free + cached + used blocks differ from the pool size";
		return -1;
	}
	return 0;
}
