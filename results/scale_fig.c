/* scale_fig: the data of the figure of nodes and load over time, for a run whose pools autoscaled. */
#include "results/scale_fig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/afile.h"
#include "config/cfg.h"

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

/* Calls row(ctx, v) with the numbers of columns names[0..n) of each row of
 * the CSV at path (n <= 8). 0 when every row was read; 1 when the header
 * lacks names[k] (*missing = k, no message); 2 (a bad row, a missing
 * header) or 3 (I/O, memory) with err; row returns 0, or 3 when memory runs
 * out. */
static int csv_rows(const char *path, const char *const *names, int n,
		    int (*row)(void *ctx, const double *v), void *ctx, int *missing, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 2;
	}
	char *line = NULL, *fld[MAX_FIELDS];
	size_t cap = 0;
	long lineno = 1;
	int rc = 2, col[8], need = 0;
	if (getline(&line, &cap, f) < 0) {
		snprintf(err, errlen, "%s: empty (expected a CSV header)", path);
		goto out;
	}
	int nf = split(line, fld, MAX_FIELDS);
	for (int k = 0; k < n; k++) {
		col[k] = column(fld, nf, names[k]);
		if (col[k] < 0) {
			*missing = k;
			rc = 1;
			goto out;
		}
		need = col[k] > need ? col[k] : need;
	}
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		nf = split(line, fld, MAX_FIELDS);
		double v[8];
		for (int k = 0; k < n; k++)
			if (nf <= need || num(fld[col[k]], &v[k])) {
				snprintf(err, errlen, "%s:%ld: %s: expected a number", path, lineno,
					 names[k]);
				goto out;
			}
		if (row(ctx, v)) {
			snprintf(err, errlen, "out of memory");
			rc = 3;
			goto out;
		}
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

/* A timeseries row (time_s, node, running, queued, nodes_up) into its
 * sample. */
static int ts_row(void *ctx, const double *v)
{
	struct scan *sc = ctx;
	double t = v[0];
	if (!sc->n || sc->s[sc->n - 1].t != t) {
		if (sc->n == sc->cap) {
			size_t nc = sc->cap ? 2 * sc->cap : 1024;
			struct sample *ns = realloc(sc->s, nc * sizeof *ns);
			if (!ns)
				return 3;
			sc->s = ns;
			sc->cap = nc;
		}
		struct sample *s = &sc->s[sc->n];
		memset(s, 0, sizeof *s);
		s->t = t;
		s->up = calloc((size_t)sc->n_pools, sizeof *s->up);
		if (!s->up)
			return 3;
		sc->n++;
	}
	struct sample *s = &sc->s[sc->n - 1];
	int id = (int)v[1];
	int pool = id >= 0 && id < sc->n_nodes ? sc->pool_of[id] : 0;
	s->running += v[2];
	s->queued += v[3];
	if (v[4] > s->up[pool])
		s->up[pool] = v[4];
	return 0;
}

/* timeseries.csv into sc->s: 1 read, 0 no nodes_up column, 2 or 3 with
 * err. */
static int read_timeseries(const char *path, struct scan *sc, char *err, size_t errlen)
{
	static const char *const names[] = {"time_s", "node", "running", "queued", "nodes_up"};
	int missing = -1;
	int rc = csv_rows(path, names, 5, ts_row, sc, &missing, err, errlen);
	if (rc == 1 && missing == 4)
		return 0;
	if (rc == 1)
		snprintf(err, errlen, "%s:1: expected the columns time_s, node, running and queued",
			 path);
	return rc == 0 ? 1 : rc == 1 ? 2 : rc;
}

/* An arrival at a goes to the first sample at or after it. */
static int arrival_row(void *ctx, const double *v)
{
	struct scan *sc = ctx;
	size_t lo = 0, hi = sc->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sc->s[mid].t < v[0])
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sc->n)
		sc->s[lo].arrivals++;
	return 0;
}

/* requests.csv's arrivals counted into the samples. 0, 2 or 3 with err. */
static int read_arrivals(const char *path, struct scan *sc, char *err, size_t errlen)
{
	static const char *const names[] = {"arrival_s"};
	int missing = -1;
	int rc = csv_rows(path, names, 1, arrival_row, sc, &missing, err, errlen);
	if (rc == 1) {
		snprintf(err, errlen, "%s:1: no column \"arrival_s\" in the header", path);
		return 2;
	}
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
