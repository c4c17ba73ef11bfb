/* scale_fig: the data of the figure of nodes and load over time, for a run whose pools autoscaled. */
#include "results/scale_fig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sim/afile.h"
#include "sim/cfg.h"

/* One sample time of the timeseries, summed as the rows come. */
struct sample {
	double t, running, queued, arrivals;
	double *up; /* per pool: its nodes_up (the most its rows say) */
};

struct scan {
	struct sample *s;
	size_t n, cap;
	int n_pools;
	int *pool_of; /* node id -> pool, from summary.json */
	int n_nodes;
};

/* Whether summary.json shows scaling; the node -> pool map into sc. 1, 0,
 * or 2 with err. */
static int read_summary(const char *path, struct scan *sc, char *err, size_t errlen)
{
	size_t len;
	char *text = cfg_slurp(path, &len, err, errlen);
	if (!text)
		return 2;
	cJSON *j = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s: expected a JSON object (a kvsim summary)", path);
		cJSON_Delete(j);
		return 2;
	}
	const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(j, "scaling");
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(scaling, "up");
	const cJSON *down = cJSON_GetObjectItemCaseSensitive(scaling, "down");
	int scaled = (cJSON_IsNumber(up) ? up->valuedouble : 0) +
			 (cJSON_IsNumber(down) ? down->valuedouble : 0) >
		     0;
	const cJSON *pools = cJSON_GetObjectItemCaseSensitive(j, "pools"), *p;
	sc->n_pools = 0;
	cJSON_ArrayForEach(p, pools) {
		const cJSON *mean = cJSON_GetObjectItemCaseSensitive(p, "nodes_mean");
		const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(p, "nodes");
		if (cJSON_IsNumber(mean) && cJSON_IsNumber(nodes) &&
		    mean->valuedouble != nodes->valuedouble)
			scaled = 1;
		sc->n_pools++;
	}
	if (sc->n_pools == 0)
		sc->n_pools = 1;
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j, "nodes"), *nd;
	int max_id = -1;
	cJSON_ArrayForEach(nd, nodes) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(nd, "id");
		if (cJSON_IsNumber(id) && id->valuedouble > max_id && id->valuedouble < 1e7)
			max_id = (int)id->valuedouble;
	}
	sc->n_nodes = max_id + 1;
	sc->pool_of = calloc((size_t)(sc->n_nodes ? sc->n_nodes : 1), sizeof *sc->pool_of);
	if (!sc->pool_of) {
		cJSON_Delete(j);
		snprintf(err, errlen, "out of memory");
		return 3;
	}
	cJSON_ArrayForEach(nd, nodes) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(nd, "id");
		const cJSON *pool = cJSON_GetObjectItemCaseSensitive(nd, "pool");
		if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < sc->n_nodes &&
		    cJSON_IsNumber(pool) && pool->valuedouble >= 0 &&
		    pool->valuedouble < sc->n_pools)
			sc->pool_of[(int)id->valuedouble] = (int)pool->valuedouble;
	}
	cJSON_Delete(j);
	return scaled;
}

/* Splits line (its end of line dropped) at commas into f[0..max); the
 * count. */
static int split(char *line, char **f, int max)
{
	line[strcspn(line, "\r\n")] = 0;
	int n = 0;
	for (char *p = line; n < max; p++) {
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = 0;
	}
	return n;
}

static int column(char **f, int n, const char *name)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(f[k], name))
			return k;
	return -1;
}

/* A field as a number (empty: 0). 0, or -1. */
static int num(const char *v, double *x)
{
	char *end;
	if (!*v) {
		*x = 0;
		return 0;
	}
	*x = strtod(v, &end);
	return *end ? -1 : 0;
}

enum { MAX_FIELDS = 64 };

/* timeseries.csv into sc->s: 1 read, 0 no nodes_up column, 2 or 3 with
 * err. */
static int read_timeseries(const char *path, struct scan *sc, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 2;
	}
	char *line = NULL, *fld[MAX_FIELDS];
	size_t cap = 0;
	long lineno = 1;
	int rc = 2;
	if (getline(&line, &cap, f) < 0) {
		snprintf(err, errlen, "%s: empty (expected a CSV header)", path);
		goto out;
	}
	int nf = split(line, fld, MAX_FIELDS);
	int c_t = column(fld, nf, "time_s"), c_node = column(fld, nf, "node");
	int c_run = column(fld, nf, "running"), c_q = column(fld, nf, "queued");
	int c_up = column(fld, nf, "nodes_up");
	if (c_up < 0) {
		rc = 0;
		goto out;
	}
	if (c_t < 0 || c_node < 0 || c_run < 0 || c_q < 0) {
		snprintf(err, errlen, "%s:1: expected the columns time_s, node, running and queued",
			 path);
		goto out;
	}
	int need = c_t;
	const int cols[] = {c_node, c_run, c_q, c_up};
	for (int k = 0; k < 4; k++)
		need = cols[k] > need ? cols[k] : need;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		nf = split(line, fld, MAX_FIELDS);
		double t, node, run, q, up;
		if (nf <= need || num(fld[c_t], &t) || num(fld[c_node], &node) ||
		    num(fld[c_run], &run) || num(fld[c_q], &q) || num(fld[c_up], &up)) {
			snprintf(err, errlen, "%s:%ld: expected numbers in time_s, node, running, "
					      "queued and nodes_up", path, lineno);
			goto out;
		}
		if (!sc->n || sc->s[sc->n - 1].t != t) {
			if (sc->n == sc->cap) {
				size_t nc = sc->cap ? 2 * sc->cap : 1024;
				struct sample *ns = realloc(sc->s, nc * sizeof *ns);
				if (!ns)
					goto oom;
				sc->s = ns;
				sc->cap = nc;
			}
			struct sample *s = &sc->s[sc->n];
			memset(s, 0, sizeof *s);
			s->t = t;
			s->up = calloc((size_t)sc->n_pools, sizeof *s->up);
			if (!s->up)
				goto oom;
			sc->n++;
		}
		struct sample *s = &sc->s[sc->n - 1];
		int id = (int)node;
		int pool = id >= 0 && id < sc->n_nodes ? sc->pool_of[id] : 0;
		s->running += run;
		s->queued += q;
		if (up > s->up[pool])
			s->up[pool] = up;
	}
	rc = ferror(f) ? 3 : 1;
	if (rc == 3)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
	rc = 3;
out:
	free(line);
	fclose(f);
	return rc;
}

/* requests.csv's arrivals counted into the samples: an arrival at a goes
 * to the first sample at or after it. 0, 2 or 3 with err. */
static int read_arrivals(const char *path, struct scan *sc, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 2;
	}
	char *line = NULL, *fld[MAX_FIELDS];
	size_t cap = 0;
	long lineno = 1;
	int rc = 2;
	if (getline(&line, &cap, f) < 0) {
		snprintf(err, errlen, "%s: empty (expected a CSV header)", path);
		goto out;
	}
	int c_a = column(fld, split(line, fld, MAX_FIELDS), "arrival_s");
	if (c_a < 0) {
		snprintf(err, errlen, "%s:1: no column \"arrival_s\" in the header", path);
		goto out;
	}
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		double a;
		if (split(line, fld, MAX_FIELDS) <= c_a || num(fld[c_a], &a)) {
			snprintf(err, errlen, "%s:%ld: arrival_s: expected a number", path, lineno);
			goto out;
		}
		size_t lo = 0, hi = sc->n; /* the first sample with t >= a */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (sc->s[mid].t < a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < sc->n)
			sc->s[lo].arrivals++;
	}
	rc = 0;
	if (ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = 3;
	}
out:
	free(line);
	fclose(f);
	return rc;
}

static int write_dat(const char *dat, const struct scan *sc, char *err, size_t errlen)
{
	struct afile a = {0};
	if (afile_open(&a, dat, err, errlen))
		return 3;
	fprintf(a.f, "time_s,nodes_up,running,queued,arrivals_per_s\n");
	for (size_t i = 0; i < sc->n; i++) {
		const struct sample *s = &sc->s[i];
		double up = 0, dt = s->t - (i ? sc->s[i - 1].t : 0);
		for (int p = 0; p < sc->n_pools; p++)
			up += s->up[p];
		fprintf(a.f, "%.6f,%.0f,%.0f,%.0f,%.6g\n", s->t, up, s->running, s->queued,
			dt > 0 ? s->arrivals / dt : 0);
	}
	if (afile_commit(&a, err, errlen)) {
		afile_discard(&a);
		return 3;
	}
	return 0;
}

int res_scale_data(const char *dir, const char *policy, const char *dat, char *err,
		   size_t errlen)
{
	char path[4200];
	struct scan sc = {0};
	snprintf(path, sizeof path, "%s/%s/summary.json", dir, policy);
	int rc = read_summary(path, &sc, err, errlen);
	if (rc == 1) {
		snprintf(path, sizeof path, "%s/%s/timeseries.csv", dir, policy);
		rc = read_timeseries(path, &sc, err, errlen);
	}
	if (rc == 1 && sc.n == 0)
		rc = 0; /* no sample: nothing to draw */
	if (rc == 1) {
		snprintf(path, sizeof path, "%s/%s/requests.csv", dir, policy);
		int r = read_arrivals(path, &sc, err, errlen);
		if (!r)
			r = write_dat(dat, &sc, err, errlen);
		if (r)
			rc = r;
	}
	for (size_t i = 0; i < sc.n; i++)
		free(sc.s[i].up);
	free(sc.s);
	free(sc.pool_of);
	return rc;
}
