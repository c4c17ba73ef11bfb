/* tracestats: one pass over a trace: lengths, distinct blocks, LRU curves. */
#include "workloads/tracestats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "base/hmap.h"
#include "base/rng.h"

/* A block-level LRU cache of cap blocks: hash map plus an index-linked list. */
struct lru {
	uint64_t cap, n;
	struct hmap map; /* id + 1 -> slot */
	uint64_t *ids;
	uint32_t *prev, *next; /* slot cap is the list head */
	uint64_t hits;
};

static int lru_init(struct lru *c, uint64_t cap)
{
	memset(c, 0, sizeof *c);
	c->cap = cap;
	hmap_init(&c->map);
	c->ids = malloc(cap * sizeof *c->ids);
	c->prev = malloc((cap + 1) * sizeof *c->prev);
	c->next = malloc((cap + 1) * sizeof *c->next);
	if (!c->ids || !c->prev || !c->next)
		return -1;
	c->prev[cap] = c->next[cap] = (uint32_t)cap;
	return 0;
}

static void lru_free(struct lru *c)
{
	hmap_free(&c->map);
	free(c->ids);
	free(c->prev);
	free(c->next);
}

static void lru_unlink(struct lru *c, uint32_t s)
{
	c->next[c->prev[s]] = c->next[s];
	c->prev[c->next[s]] = c->prev[s];
}

static void lru_front(struct lru *c, uint32_t s)
{
	uint32_t h = (uint32_t)c->cap;
	c->next[s] = c->next[h];
	c->prev[s] = h;
	c->prev[c->next[h]] = s;
	c->next[h] = s;
}

static int lru_has(const struct lru *c, uint64_t id)
{
	return hmap_get(&c->map, id + 1) != NULL;
}

/* Inserts id or makes it most recent; evicts the least recent when full. */
static int lru_touch(struct lru *c, uint64_t id)
{
	uint64_t *v = hmap_get(&c->map, id + 1);
	if (v) {
		lru_unlink(c, (uint32_t)*v);
		lru_front(c, (uint32_t)*v);
		return 0;
	}
	uint32_t s;
	if (c->n < c->cap) {
		s = (uint32_t)c->n++;
	} else {
		s = c->prev[c->cap];
		lru_unlink(c, s);
		hmap_del(&c->map, c->ids[s] + 1);
	}
	c->ids[s] = id;
	lru_front(c, s);
	return hmap_put(&c->map, id + 1, s) < 0 ? -1 : 0;
}

int tstats_detect_format(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	char line[4096] = "";
	int fmt = -1;
	while (fgets(line, sizeof line, f)) {
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (!strncmp(line, "TIMESTAMP,", 10))
			fmt = TRACE_AZURE;
		else if (strstr(line, "\"hash_ids\""))
			fmt = TRACE_MOONCAKE;
		else if (strstr(line, "\"blocks\""))
			fmt = TRACE_KVSIM;
		break;
	}
	fclose(f);
	return fmt;
}

static int push(double **v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4096;
		double *nv = realloc(*v, nc * sizeof *nv);
		if (!nv)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static void dist_of(double *v, size_t n, struct tstats_dist *d)
{
	memset(d, 0, sizeof *d);
	if (!n)
		return;
	gsl_sort(v, 1, n);
	d->mean = gsl_stats_mean(v, 1, n);
	d->p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5);
	d->p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
	d->max = v[n - 1];
}

int tstats_run(const char *path, enum trace_format format, int skip_bad, const uint64_t *caches,
	       size_t n_caches, struct trace_stats *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->format = format;
	if (n_caches > TSTATS_MAX_CACHES) {
		snprintf(err, errlen, "--cache-blocks: at most %d sizes", TSTATS_MAX_CACHES);
		return -1;
	}
	struct trace_reader tr;
	struct trace_rec rec;
	memset(&rec, 0, sizeof rec);
	if (trace_open(&tr, path, format, skip_bad, err, errlen))
		return -1;
	struct hmap seen;
	hmap_init(&seen);
	struct lru lrus[TSTATS_MAX_CACHES];
	size_t n_lru = 0;
	double *in = NULL, *outv = NULL;
	size_t n_in = 0, cap_in = 0, n_out = 0, cap_out = 0;
	double hit_blocks = 0, hit_tokens = 0, tokens = 0, share = 0;
	int64_t first = -1, last = 0;
	uint64_t azure_id = 0, *ids = NULL;
	size_t ids_cap = 0;
	int rc = -1, got;
	for (; n_lru < n_caches; n_lru++) {
		out->cache_blocks[n_lru] = caches[n_lru];
		if (caches[n_lru] == 0 || caches[n_lru] > 100000000 || lru_init(&lrus[n_lru], caches[n_lru])) {
			snprintf(err, errlen, "--cache-blocks: %llu: expected 1 to 100000000 blocks",
				 (unsigned long long)caches[n_lru]);
			if (caches[n_lru] && caches[n_lru] <= 100000000)
				lru_free(&lrus[n_lru]);
			goto done;
		}
	}
	out->n_caches = n_caches;
	while ((got = trace_next(&tr, &rec, err, errlen)) == 1) {
		uint32_t bt = rec.block_tokens ? rec.block_tokens : 512;
		out->block_tokens = bt;
		/* Prompt blocks (nb): Mooncake's ids cover the prompt (the last
		 * may be partial); kvsim's cover prompt + answer (full blocks),
		 * of which the full prompt blocks are looked up and all cached,
		 * as the simulator caches an answer's blocks for the next turn;
		 * Azure prompts are unique, named here by a counter. */
		uint32_t nb = rec.n_ids, nall = rec.n_ids;
		if (format == TRACE_KVSIM)
			nb = rec.input / bt < rec.n_ids ? rec.input / bt : rec.n_ids;
		if (format == TRACE_AZURE)
			nb = nall = (rec.input + bt - 1) / bt;
		if (nall > ids_cap) {
			uint64_t *ni = realloc(ids, nall * sizeof *ni);
			if (!ni) {
				snprintf(err, errlen, "out of memory");
				goto done;
			}
			ids = ni;
			ids_cap = nall;
		}
		for (uint32_t i = 0; i < nall; i++)
			ids[i] = format == TRACE_AZURE ? ++azure_id : rng_mix64(rec.ids[i]) | 1;
		if (rec.arrival_ns >= 0) {
			if (first < 0)
				first = rec.arrival_ns;
			last = rec.arrival_ns;
		}
		if (push(&in, &n_in, &cap_in, rec.input) || push(&outv, &n_out, &cap_out, rec.output)) {
			snprintf(err, errlen, "out of memory");
			goto done;
		}
		uint32_t hit = 0;
		while (hit < nb && hmap_get(&seen, ids[hit]))
			hit++;
		double htok = 0;
		for (uint32_t i = 0; i < hit; i++) {
			uint32_t left = rec.input - i * bt;
			htok += left < bt ? left : bt;
		}
		hit_blocks += hit;
		hit_tokens += htok;
		tokens += rec.input;
		share += htok / rec.input;
		out->total_blocks += nb;
		for (uint32_t i = 0; i < nall; i++) {
			int added = hmap_put(&seen, ids[i], 1);
			if (added < 0) {
				snprintf(err, errlen, "out of memory");
				goto done;
			}
			out->distinct_blocks += (uint64_t)added;
		}
		for (size_t c = 0; c < n_lru; c++) {
			uint32_t h = 0;
			while (h < nb && lru_has(&lrus[c], ids[h]))
				h++;
			lrus[c].hits += h;
			for (uint32_t i = 0; i < nall; i++)
				if (lru_touch(&lrus[c], ids[i])) {
					snprintf(err, errlen, "out of memory");
					goto done;
				}
		}
		out->requests++;
	}
	if (got < 0)
		goto done;
	if (trace_check_nonempty(&tr, err, errlen))
		goto done;
	out->skipped = tr.skipped;
	out->duration_s = (double)(last - (first < 0 ? 0 : first)) * 1e-9;
	out->arrival_rate_per_s = out->duration_s > 0 ? (double)out->requests / out->duration_s : 0;
	dist_of(in, n_in, &out->input);
	dist_of(outv, n_out, &out->output);
	out->ideal_blocks = out->total_blocks ? hit_blocks / (double)out->total_blocks : 0;
	out->ideal_tokens = tokens > 0 ? hit_tokens / tokens : 0;
	out->ideal_per_request = share / (double)out->requests;
	for (size_t c = 0; c < n_lru; c++)
		out->lru_hit[c] =
		    out->total_blocks ? (double)lrus[c].hits / (double)out->total_blocks : 0;
	rc = 0;
done:
	if (rc == 0 && tr.skipped)
		snprintf(err, errlen, "%s", tr.first_bad);
	free(ids);
	for (size_t c = 0; c < n_lru; c++)
		lru_free(&lrus[c]);
	hmap_free(&seen);
	free(in);
	free(outv);
	trace_rec_free(&rec);
	trace_close(&tr);
	return rc;
}
