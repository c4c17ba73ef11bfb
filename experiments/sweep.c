/* sweep: cartesian sweeps of scenario values, run here or emitted as jobs, then merged. */
#define _GNU_SOURCE
#include "experiments/sweep.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "experiments/capacity.h"
#include "results/metric_table.h"
#include "results/metrics.h"
#include "results/writer.h"
#include "config/cfg.h"
#include "config/config.h"
#include "base/rng.h"
#include "sim/sim.h"

static void free_axis(struct swp_axis *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->values[i]);
	free(a->values);
	a->values = NULL;
	a->n = 0;
}

/* Appends the value v[0..len) (blanks around it dropped) to a. 0, or -1
 * with err. */
static int add_value(struct swp_axis *a, const char *arg, const char *v, size_t len, char *err,
		     size_t errlen)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	if (!len) {
		snprintf(err, errlen, "--vary %s: an empty value (expected PATH=v1,v2,...)", arg);
		return -1;
	}
	char **nv = realloc(a->values, (size_t)(a->n + 1) * sizeof *nv);
	if (nv)
		a->values = nv;
	if (!nv || !(nv[a->n] = strndup(v, len))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	a->n++;
	return 0;
}

/* Splits list at its top-level commas: those outside brackets, braces and
 * double-quoted strings, so that a JSON value ([1,2] or {"a":1,"b":2}) is
 * one value. 0, or -1 with err (an unbalanced bracket or quote, an empty
 * value). */
static int split_values(struct swp_axis *a, const char *arg, const char *list, char *err,
			size_t errlen)
{
	const char *start = list;
	int depth = 0, quoted = 0;
	for (const char *p = list;; p++) {
		if (quoted) {
			if (!*p)
				break;
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quoted = 0;
		} else if (*p == '"') {
			quoted = 1;
		} else if (*p == '[' || *p == '{') {
			depth++;
		} else if ((*p == ']' || *p == '}') && depth > 0) {
			depth--;
		} else if ((*p == ',' && depth == 0) || !*p) {
			if (add_value(a, arg, start, (size_t)(p - start), err, errlen))
				return -1;
			if (!*p)
				return 0;
			start = p + 1;
		}
	}
	snprintf(err, errlen, "--vary %s: a string is not closed (expected PATH=v1,v2,...)", arg);
	return -1;
}

int swp_add_axis(struct swp *s, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1]) {
		snprintf(err, errlen, "--vary %s: expected PATH=v1,v2,... e.g. cluster.nodes=4,8,16",
			 arg);
		return -1;
	}
	if (s->n_axes == SWP_MAX_AXES) {
		snprintf(err, errlen, "--vary: at most %d axes", SWP_MAX_AXES);
		return -1;
	}
	struct swp_axis *a = &s->ax[s->n_axes];
	size_t plen = (size_t)(eq - arg);
	if (plen >= sizeof a->path) {
		snprintf(err, errlen, "--vary: path too long");
		return -1;
	}
	memcpy(a->path, arg, plen);
	a->path[plen] = 0;
	for (int k = 0; k < s->n_axes; k++) {
		if (!strcmp(s->ax[k].path, a->path)) {
			snprintf(err, errlen, "--vary %s: varied twice", a->path);
			return -1;
		}
	}
	a->n = 0;
	a->values = NULL;
	long total = s->n_axes ? s->n_points : 1;
	if (split_values(a, arg, eq + 1, err, errlen) || total > 10000000 / a->n) {
		if (a->n && total > 10000000 / a->n)
			snprintf(err, errlen, "--vary: more than 10,000,000 points");
		free_axis(a);
		return -1;
	}
	s->n_points = total * a->n;
	s->n_axes++;
	return 0;
}

void swp_free(struct swp *s)
{
	for (int k = 0; k < s->n_axes; k++)
		free_axis(&s->ax[k]);
	s->n_axes = 0;
}

static int value_index(const struct swp *s, long i, int k)
{
	long stride = 1;
	for (int j = s->n_axes - 1; j > k; j--)
		stride *= s->ax[j].n;
	return (int)((i / stride) % s->ax[k].n);
}

void swp_point_canon(const struct swp *s, long i, char *buf, size_t len)
{
	buf[0] = 0;
	for (int k = 0; k < s->n_axes; k++) {
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%s=%s", k ? ";" : "", s->ax[k].path,
			 s->ax[k].values[value_index(s, i, k)]);
	}
}

uint64_t swp_point_seed(const struct swp *s, long i)
{
	for (int k = 0; k < s->n_axes; k++) {
		if (strcmp(s->ax[k].path, "seed"))
			continue;
		char *end;
		const char *v = s->ax[k].values[value_index(s, i, k)];
		unsigned long long x = strtoull(v, &end, 10);
		return end != v && !*end ? (uint64_t)x : s->seed;
	}
	return s->seed;
}

static void point_dir(const char *dir, long i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/points/p%06ld", dir, i);
}

int swp_write_spec(const struct swp *s, const char *dir, char *err, size_t errlen)
{
	cJSON *o = cJSON_CreateObject();
	char abs[PATH_MAX], canon[4096], path[4200];
	if (s->scenario && realpath(s->scenario, abs))
		cJSON_AddStringToObject(o, "scenario", abs);
	else if (s->scenario)
		cJSON_AddStringToObject(o, "scenario", s->scenario);
	else
		cJSON_AddNullToObject(o, "scenario");
	if (s->catalog && realpath(s->catalog, abs))
		cJSON_AddStringToObject(o, "catalog", abs);
	cJSON *sets = cJSON_AddArrayToObject(o, "sets");
	for (int i = 0; i < s->n_sets; i++)
		cJSON_AddItemToArray(sets, cJSON_CreateString(s->sets[i]));
	cJSON_AddNumberToObject(o, "seed", (double)s->seed);
	cJSON *vary = cJSON_AddArrayToObject(o, "vary");
	for (int k = 0; k < s->n_axes; k++) {
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "path", s->ax[k].path);
		cJSON *vals = cJSON_AddArrayToObject(a, "values");
		for (int v = 0; v < s->ax[k].n; v++)
			cJSON_AddItemToArray(vals, cJSON_CreateString(s->ax[k].values[v]));
		cJSON_AddItemToArray(vary, a);
	}
	cJSON *pts = cJSON_AddArrayToObject(o, "points");
	for (long i = 0; i < s->n_points; i++) {
		cJSON *p = cJSON_CreateObject();
		swp_point_canon(s, i, canon, sizeof canon);
		snprintf(path, sizeof path, "points/p%06ld", i);
		cJSON_AddNumberToObject(p, "point", (double)i);
		cJSON_AddStringToObject(p, "dir", path);
		cJSON_AddStringToObject(p, "values", canon);
		cJSON_AddNumberToObject(p, "seed", (double)swp_point_seed(s, i));
		cJSON_AddItemToArray(pts, p);
	}
	snprintf(path, sizeof path, "%s/sweep.spec.json", dir);
	int rc = res_mkdirs(dir, err, errlen) || res_write_json(path, o, err, errlen) ? -1 : 0;
	cJSON_Delete(o);
	return rc;
}

static void record_error(const char *pdir, const char *msg)
{
	char path[4300], err[256];
	snprintf(path, sizeof path, "%s/error.txt", pdir);
	char text[1200];
	snprintf(text, sizeof text, "%s\n", msg);
	if (res_mkdirs(pdir, err, sizeof err) == 0)
		res_write_atomic(path, text, err, sizeof err);
}

/* The content of point.json: {"point", "values", "seed"}. Caller frees
 * with cJSON_Delete; NULL when out of memory. */
static cJSON *point_identity(long i, const char *canon, uint64_t seed)
{
	cJSON *o = cJSON_CreateObject();
	if (!cJSON_AddNumberToObject(o, "point", (double)i) ||
	    !cJSON_AddStringToObject(o, "values", canon) ||
	    !cJSON_AddNumberToObject(o, "seed", (double)seed)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* pdir/point.json: which point of the sweep the folder's results are (merge
 * holds them to it). 0, or 3 with err. */
static int write_identity(const char *pdir, long i, const char *canon, uint64_t seed, char *err,
			  size_t errlen)
{
	char path[4300];
	cJSON *o = point_identity(i, canon, seed);
	snprintf(path, sizeof path, "%.4200s/point.json", pdir);
	int rc = !o || res_write_json(path, o, err, errlen) ? 3 : 0;
	if (!o)
		snprintf(err, errlen, "out of memory");
	cJSON_Delete(o);
	return rc;
}

int swp_run_point(const struct swp *s, long i, const char *dir, char *warning, size_t wlen,
		  char *err, size_t errlen)
{
	if (warning && wlen)
		warning[0] = 0;
	char pdir[4200], canon[4096], set[4300];
	point_dir(dir, i, pdir, sizeof pdir);
	swp_point_canon(s, i, canon, sizeof canon);
	cJSON *root = NULL;
	struct scenario sc;
	int rc = 2, loaded = 0;
	/* What an earlier run left here is not this run's result. */
	static const char *const stale[] = {"point.json", "error.txt", "summary.json"};
	for (size_t k = 0; k < sizeof stale / sizeof *stale; k++) {
		snprintf(set, sizeof set, "%.4200s/%s", pdir, stale[k]);
		unlink(set);
	}
	if (cfg_read_json(s->scenario, &root, err, errlen))
		goto out;
	for (int k = 0; k < s->n_sets; k++)
		if (cfg_apply_set(root, s->sets[k], err, errlen))
			goto out;
	for (int k = 0; k < s->n_axes; k++) {
		snprintf(set, sizeof set, "%s=%s", s->ax[k].path, s->ax[k].values[value_index(s, i, k)]);
		if (cfg_apply_set(root, set, err, errlen))
			goto out;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(root, "seed");
	cJSON_AddNumberToObject(root, "seed", (double)swp_point_seed(s, i));
	if (cfg_scenario_load_from(&sc, root, s->catalog, s->scenario, err, errlen))
		goto out;
	loaded = 1;
	if (sim_validate(&sc, err, errlen))
		goto out;
	struct sim_opts o = {.out_dir = pdir};
	struct met_summary m;
	rc = sim_run(&sc, &o, &m, err, errlen);
	if (rc == 0) {
		if (warning && wlen)
			snprintf(warning, wlen, "%s", m.warning);
		met_summary_free(&m);
		rc = write_identity(pdir, i, canon, swp_point_seed(s, i), err, errlen);
	}
out:
	if (rc) {
		char msg[1100];
		snprintf(msg, sizeof msg, "point %ld (%.300s): %.700s", i, canon, err);
		snprintf(err, errlen, "%s", msg);
		record_error(pdir, msg);
	}
	if (loaded)
		cfg_scenario_free(&sc);
	cJSON_Delete(root);
	return rc;
}

static void put_shell_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

int swp_write_jobs(const struct swp *s, const char *exe, const char *dir, FILE *f, char *err,
		   size_t errlen)
{
	char abs_dir[PATH_MAX], abs_scen[PATH_MAX], abs_cat[PATH_MAX], canon[4096], set[4300];
	if (!realpath(dir, abs_dir) || (s->scenario && !realpath(s->scenario, abs_scen)) ||
	    (s->catalog && !realpath(s->catalog, abs_cat))) {
		snprintf(err, errlen, "cannot resolve a path: %s", strerror(errno));
		return -1;
	}
	for (long i = 0; i < s->n_points; i++) {
		char pdir[PATH_MAX + 32], file[PATH_MAX + 64];
		point_dir(abs_dir, i, pdir, sizeof pdir);
		swp_point_canon(s, i, canon, sizeof canon);
		uint64_t seed = swp_point_seed(s, i);
		/* What an earlier run left is not this job's; once the run is
		 * done, point.json says which point the folder holds. */
		fputs("rm -f ", f);
		snprintf(file, sizeof file, "%s/point.json", pdir);
		put_shell_quoted(f, file);
		fputc(' ', f);
		snprintf(file, sizeof file, "%s/error.txt", pdir);
		put_shell_quoted(f, file);
		fputs(" && ", f);
		put_shell_quoted(f, exe);
		fputs(" run", f);
		if (s->scenario) {
			fputc(' ', f);
			put_shell_quoted(f, abs_scen);
		}
		if (s->catalog) {
			fputs(" --catalog ", f);
			put_shell_quoted(f, abs_cat);
		}
		for (int k = 0; k < s->n_sets; k++) {
			fputs(" --set ", f);
			put_shell_quoted(f, s->sets[k]);
		}
		for (int k = 0; k < s->n_axes; k++) {
			snprintf(set, sizeof set, "%s=%s", s->ax[k].path,
				 s->ax[k].values[value_index(s, i, k)]);
			fputs(" --set ", f);
			put_shell_quoted(f, set);
		}
		fprintf(f, " --seed %llu --out ", (unsigned long long)seed);
		put_shell_quoted(f, pdir);
		fputs(" --quiet && printf '%s\\n' ", f);
		cJSON *id = point_identity(i, canon, seed);
		char *text = id ? cJSON_PrintUnformatted(id) : NULL;
		cJSON_Delete(id);
		if (!text) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		put_shell_quoted(f, text);
		free(text);
		snprintf(file, sizeof file, "%s/point.json", pdir);
		fputs(" > ", f);
		put_shell_quoted(f, file);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

/* The grid of a sweep.spec.json (path names it) into g: its axes, and
 * n_points checked against the points listed, each of which must be the
 * point its index says (dir, values). Caller frees with swp_free. 0, or -1
 * with err naming the JSON path. */
static int spec_grid(const cJSON *spec, const char *path, struct swp *g, char *err,
		     size_t errlen)
{
	const cJSON *vary = cJSON_GetObjectItemCaseSensitive(spec, "vary");
	const cJSON *pts = cJSON_GetObjectItemCaseSensitive(spec, "points");
	if (!cJSON_IsArray(vary) || !cJSON_IsArray(pts)) {
		snprintf(err, errlen, "%s: not a sweep spec (no vary/points)", path);
		return -1;
	}
	g->n_points = 1;
	int k = 0;
	for (const cJSON *a = vary->child; a; a = a->next, k++) {
		const cJSON *ap = cJSON_GetObjectItemCaseSensitive(a, "path");
		const cJSON *vals = cJSON_GetObjectItemCaseSensitive(a, "values");
		int n = cJSON_IsArray(vals) ? cJSON_GetArraySize(vals) : 0;
		if (k == SWP_MAX_AXES || !cJSON_IsString(ap) || !ap->valuestring[0] ||
		    strlen(ap->valuestring) >= sizeof g->ax[0].path || n < 1 ||
		    g->n_points > 10000000 / n) {
			snprintf(err, errlen, "%s: vary[%d]: expected {\"path\": a key, \"values\": a "
					      "list of 1 or more strings} (at most %d axes, 10,000,000 "
					      "points)", path, k, SWP_MAX_AXES);
			return -1;
		}
		struct swp_axis *x = &g->ax[g->n_axes++];
		snprintf(x->path, sizeof x->path, "%s", ap->valuestring);
		x->values = calloc((size_t)n, sizeof *x->values);
		if (!x->values) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (const cJSON *v = vals->child; v; v = v->next, x->n++) {
			if (!cJSON_IsString(v)) {
				snprintf(err, errlen, "%s: vary[%d].values[%d]: expected a string", path,
					 k, x->n);
				return -1;
			}
			if (!(x->values[x->n] = strdup(v->valuestring))) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
		}
		g->n_points *= n;
	}
	if (cJSON_GetArraySize(pts) != g->n_points) {
		snprintf(err, errlen, "%s: points: expected %ld (the product of the varied values' "
				      "counts), found %d", path, g->n_points, cJSON_GetArraySize(pts));
		return -1;
	}
	long i = 0;
	char canon[4096], dir[64];
	for (const cJSON *p = pts->child; p; p = p->next, i++) {
		const cJSON *pi = cJSON_GetObjectItemCaseSensitive(p, "point");
		const cJSON *pd = cJSON_GetObjectItemCaseSensitive(p, "dir");
		const cJSON *pv = cJSON_GetObjectItemCaseSensitive(p, "values");
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(p, "seed");
		swp_point_canon(g, i, canon, sizeof canon);
		snprintf(dir, sizeof dir, "points/p%06ld", i);
		if (!cJSON_IsNumber(pi) || pi->valuedouble != (double)i || !cJSON_IsString(pd) ||
		    strcmp(pd->valuestring, dir) || !cJSON_IsString(pv) ||
		    strcmp(pv->valuestring, canon) || !cJSON_IsNumber(ps) ||
		    !(ps->valuedouble >= 0 && ps->valuedouble < 9007199254740992.0)) {
			snprintf(err, errlen, "%s: points[%ld]: expected {\"point\": %ld, \"dir\": "
					      "\"%s\", \"values\": \"%.200s\", \"seed\": a number}",
				 path, i, i, dir, canon);
			return -1;
		}
	}
	return 0;
}

/* Why the results in point folder pdir are not point i's (values canon,
 * seed), or are hollow: 0 when they are whole and its own, else -1 with
 * why. The summary's seed is the point's own record of what it ran (the
 * scenario's seed, or the point's value of a varied seed); point.json,
 * written when a point's run ends, records the values too. */
static int point_check(const char *pdir, const cJSON *sum, const char *canon, double seed,
		       const struct res_metrics *table, char *why, size_t len)
{
	const cJSON *ss = cJSON_GetObjectItemCaseSensitive(sum, "seed");
	if (!cJSON_IsNumber(ss)) {
		snprintf(why, len, "%.600s/summary.json: seed: expected a number", pdir);
		return -1;
	}
	if (ss->valuedouble != seed) {
		snprintf(why, len, "%.600s/summary.json: seed %.0f is not the point's %.0f: a result of "
				   "another sweep (run the point again)", pdir, ss->valuedouble, seed);
		return -1;
	}
	char path[4400], inner[512];
	struct stat st;
	snprintf(path, sizeof path, "%.4300s/point.json", pdir);
	if (stat(path, &st) == 0) {
		cJSON *id = NULL;
		if (cfg_read_json(path, &id, inner, sizeof inner)) {
			snprintf(why, len, "%.500s", inner);
			return -1;
		}
		const cJSON *iv = cJSON_GetObjectItemCaseSensitive(id, "values");
		const cJSON *is = cJSON_GetObjectItemCaseSensitive(id, "seed");
		int same = cJSON_IsString(iv) && !strcmp(iv->valuestring, canon) &&
			   cJSON_IsNumber(is) && is->valuedouble == seed;
		if (!same)
			snprintf(why, len, "%.600s: values \"%.200s\" and seed %.0f are not the point's "
					   "\"%.200s\" and %.0f: a result of another sweep (run the "
					   "point again)", path, cJSON_IsString(iv) ? iv->valuestring : "?",
				 cJSON_IsNumber(is) ? is->valuedouble : -1.0, canon, seed);
		cJSON_Delete(id);
		if (!same)
			return -1;
	}
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(table, RES_LIST_SWEEP, &it));) {
		const cJSON *v = res_json_item_at(sum, m->path);
		if (cJSON_IsNull(v)) /* no sample, no price: "n/a" in sweep.csv */
			continue;
		if (!v || !cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) {
			snprintf(why, len, "%.600s/summary.json: %s: expected a finite number >= 0%s", pdir,
				 m->path, v ? "" : ", found none");
			return -1;
		}
	}
	return 0;
}

/* s as one RFC 4180 CSV field: quoted when it holds a comma, quote, CR or
 * LF, quotes doubled. Caller frees. NULL when out of memory. */
static char *csv_field(const char *s)
{
	size_t n = strlen(s), q = 0;
	for (const char *p = s; *p; p++)
		q += *p == '"';
	char *f = malloc(n + q + 3);
	if (!f)
		return NULL;
	if (!strpbrk(s, ",\"\r\n")) {
		memcpy(f, s, n + 1);
		return f;
	}
	char *o = f;
	*o++ = '"';
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			*o++ = '"';
		*o++ = *p;
	}
	*o++ = '"';
	*o = 0;
	return f;
}

int swp_merge_with(const char *dir, const struct res_metrics *table, FILE *out, long *missing,
		   long *failed, char *err, size_t errlen)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/sweep.spec.json", dir);
	cJSON *spec = NULL;
	struct swp g;
	memset(&g, 0, sizeof g);
	if (cfg_read_json(path, &spec, err, errlen))
		return -1;
	if (spec_grid(spec, path, &g, err, errlen)) {
		swp_free(&g);
		cJSON_Delete(spec);
		return -1;
	}
	const cJSON *pts = cJSON_GetObjectItemCaseSensitive(spec, "points");
	size_t cap = 1 << 16, len = 0;
	char *csv = malloc(cap), *field = NULL;
	cJSON *res = cJSON_CreateObject();
	cJSON *rows = cJSON_AddArrayToObject(res, "points");
	cJSON *miss = cJSON_AddArrayToObject(res, "missing");
	cJSON *bad = cJSON_AddArrayToObject(res, "failed");
	cJSON_AddItemToObject(res, "spec", cJSON_Duplicate(spec, 1));
	*missing = *failed = 0;
#define CSV(...)                                                                                   \
	do {                                                                                       \
		int need = snprintf(csv + len, cap - len, __VA_ARGS__);                            \
		while (need >= 0 && (size_t)need >= cap - len) {                                  \
			char *nc = realloc(csv, cap * 2);                                          \
			if (!nc)                                                                   \
				goto oom;                                                          \
			csv = nc;                                                                  \
			cap *= 2;                                                                  \
			need = snprintf(csv + len, cap - len, __VA_ARGS__);                        \
		}                                                                                  \
		len += (size_t)need;                                                               \
	} while (0)
/* One CSV field and a comma, escaped. */
#define CSV_FIELD(s)                                                                               \
	do {                                                                                       \
		if (!(field = csv_field(s)))                                                       \
			goto oom;                                                                  \
		CSV("%s,", field);                                                                 \
		free(field);                                                                       \
		field = NULL;                                                                      \
	} while (0)
	if (!csv)
		goto oom;
	for (int k = 0; k < g.n_axes; k++) {
		/* A varied seed (replicates) is its own column beside the seed the
		 * point ran with: one name, one column. */
		int clash = !strcmp(g.ax[k].path, "seed") || !strcmp(g.ax[k].path, "point");
		snprintf(path, sizeof path, "%s%s", clash ? "vary." : "", g.ax[k].path);
		CSV_FIELD(path);
	}
	CSV("point,seed");
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(table, RES_LIST_SWEEP, &it));)
		CSV(",%s", m->csv);
	CSV("\n");
	long i = 0;
	for (const cJSON *p = pts->child; p; p = p->next, i++) {
		char canon[4096];
		swp_point_canon(&g, i, canon, sizeof canon);
		double seed = cJSON_GetObjectItemCaseSensitive(p, "seed")->valuedouble;
		char pdir[4400], sum[4400], errf[4400], inner[512], why[1200];
		point_dir(dir, i, pdir, sizeof pdir);
		snprintf(sum, sizeof sum, "%.4300s/summary.json", pdir);
		snprintf(errf, sizeof errf, "%.4300s/error.txt", pdir);
		cJSON *s = NULL;
		struct stat st;
		int have = stat(sum, &st) == 0;
		if (have && cfg_read_json(sum, &s, why, sizeof why) == 0)
			cJSON_DeleteItemFromObjectCaseSensitive(s, "perf");
		if (s && point_check(pdir, s, canon, seed, table, why, sizeof why)) {
			cJSON_Delete(s);
			s = NULL;
		}
		if (s) {
			for (int k = 0; k < g.n_axes; k++)
				CSV_FIELD(g.ax[k].values[value_index(&g, i, k)]);
			CSV("%ld,%.0f", i, seed);
			it = 0;
			for (const struct res_metric *m;
			     (m = res_metric_next(table, RES_LIST_SWEEP, &it));)
				if (res_json_at(s, m->path))
					CSV(",%.9g", res_json_at(s, m->path)->valuedouble);
				else
					CSV(",n/a");
			CSV("\n");
			cJSON *row = cJSON_CreateObject();
			cJSON_AddNumberToObject(row, "point", (double)i);
			cJSON_AddStringToObject(row, "values", canon);
			cJSON_AddNumberToObject(row, "seed", seed);
			cJSON_AddItemToObject(row, "summary", s);
			cJSON_AddItemToArray(rows, row);
		} else if (have) {
			(*failed)++;
			fprintf(out, "sweep: point %ld (%s) failed: %s\n", i, canon, why);
			cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)i));
		} else if (stat(errf, &st) == 0) {
			(*failed)++;
			char *text = cfg_slurp(errf, NULL, inner, sizeof inner);
			fprintf(out, "sweep: point %ld failed: %s", i, text ? text : "(unreadable error)\n");
			cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)i));
			free(text);
		} else {
			(*missing)++;
			fprintf(out, "sweep: point %ld (%s) missing: no %s\n", i, canon, sum);
			cJSON_AddItemToArray(miss, cJSON_CreateNumber((double)i));
		}
	}
	snprintf(path, sizeof path, "%s/sweep.csv", dir);
	int rc = res_write_atomic(path, csv, err, errlen);
	snprintf(path, sizeof path, "%s/sweep.json", dir);
	if (rc == 0)
		rc = res_write_json(path, res, err, errlen);
	free(csv);
	cJSON_Delete(res);
	cJSON_Delete(spec);
	swp_free(&g);
	return rc;
oom:
	free(field);
	free(csv);
	cJSON_Delete(res);
	cJSON_Delete(spec);
	swp_free(&g);
	snprintf(err, errlen, "out of memory");
	return -1;
#undef CSV_FIELD
#undef CSV
}

int swp_merge(const char *dir, FILE *out, long *missing, long *failed, char *err, size_t errlen)
{
	return swp_merge_with(dir, NULL, out, missing, failed, err, errlen);
}

/* --- the printed table --- */

/* Point p's values without its seed ("a=1;seed=2;b=3" -> "a=1;b=3"). */
static void values_sans_seed(const char *v, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (const char *p = v; *p;) {
		const char *e = strchr(p, ';');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (strncmp(p, "seed=", 5) && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ";" : "",
						 (int)n, p);
		p += n + (e != NULL);
	}
}

static double fig_at(const cJSON *sum, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sum, a), b);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* One cell: the figure, or with several seeds its median and range. */
static void spread_cell(double *x, size_t n, int decimals, char *buf, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!isnan(x[i]))
			x[k++] = x[i];
	if (k == 0) {
		snprintf(buf, len, "n/a");
		return;
	}
	double lo, med, hi;
	cap_spread(x, k, &lo, &med, &hi);
	if (n == 1 || lo == hi)
		snprintf(buf, len, "%.*f", decimals, med);
	else
		snprintf(buf, len, "%.*f (%.*f-%.*f)", decimals, med, decimals, lo, decimals, hi);
}

/* DIR/sweep.json, parsed (NULL with err); *pts its "points". */
static cJSON *read_sweep(const char *dir, const cJSON **pts, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/sweep.json", dir);
	char *text = cfg_slurp(path, NULL, err, errlen);
	if (!text)
		return NULL;
	cJSON *doc = cJSON_Parse(text);
	free(text);
	if (!doc)
		snprintf(err, errlen, "%s: cannot read it back", path);
	*pts = cJSON_GetObjectItemCaseSensitive(doc, "points");
	return doc;
}

int swp_print_table(const char *dir, FILE *f, char *err, size_t errlen)
{
	const cJSON *pts;
	cJSON *doc = read_sweep(dir, &pts, err, errlen);
	if (!doc)
		return -1;
	int n = cJSON_GetArraySize(pts), rc = 0, seeds = 1;
	char (*key)[512] = n ? calloc((size_t)n, sizeof *key) : NULL;
	unsigned char *done = n ? calloc((size_t)n, 1) : NULL;
	double *x = n ? calloc((size_t)n * 5, sizeof *x) : NULL;
	if (n && (!key || !done || !x)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, i), "values");
		values_sans_seed(cJSON_IsString(v) ? v->valuestring : "", key[i], sizeof key[i]);
	}
	int w = 24;
	for (int i = 0; i < n; i++)
		if ((int)strlen(key[i]) > w)
			w = (int)strlen(key[i]);
	for (int i = 0, k = 0; i < n; i++) {
		k = 0;
		for (int j = i; j < n; j++)
			k += !strcmp(key[j], key[i]);
		if (k > seeds)
			seeds = k;
	}
	fprintf(f, "%-*s  %-22s  %-22s  %-22s  %-22s  %s\n", w,
		seeds > 1 ? "point (median over seeds, range)" : "point", "TTFT p99 (ms)",
		"TPOT p99 (ms)", "goodput (req/s)", "SLO attainment", "steady");
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		size_t m = 0, steady = 0;
		for (int j = i; j < n; j++) {
			if (done[j] || strcmp(key[j], key[i]))
				continue;
			done[j] = 1;
			const cJSON *sum =
			    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, j), "summary");
			x[0 * n + m] = fig_at(sum, "ttft_s", "p99") * 1e3;
			x[1 * n + m] = fig_at(sum, "tpot_s", "p99") * 1e3;
			x[2 * n + m] = fig_at(sum, "slo", "goodput_rps");
			x[3 * n + m] = fig_at(sum, "slo", "attainment");
			const cJSON *st = cJSON_GetObjectItemCaseSensitive(sum, "steady");
			steady += !cJSON_IsFalse(st);
			m++;
		}
		char c[4][64], st[32];
		static const int dec[4] = {1, 2, 2, 3};
		for (int k = 0; k < 4; k++)
			spread_cell(x + (size_t)k * n, m, dec[k], c[k], sizeof c[k]);
		if (m == 1)
			snprintf(st, sizeof st, "%s", steady ? "yes" : "no");
		else
			snprintf(st, sizeof st, "%zu of %zu", steady, m);
		fprintf(f, "%-*s  %-22s  %-22s  %-22s  %-22s  %s\n", w, key[i][0] ? key[i] : "(seeds)",
			c[0], c[1], c[2], c[3], st);
	}
out:
	cJSON_Delete(doc);
	free(key);
	free(done);
	free(x);
	return rc;
}

/* --- the latency-load figure's data --- */

/* Point values v split into its load (the component whose path is rate)
 * and the rest but the seed, "a=1;b=2", into series. */
static double split_point(const char *v, const char *rate, char *series, size_t len)
{
	size_t used = 0, rl = strlen(rate);
	double x = NAN;
	series[0] = 0;
	for (const char *p = v; *p;) {
		const char *e = strchr(p, ';');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n > rl && !strncmp(p, rate, rl) && p[rl] == '=')
			x = strtod(p + rl + 1, NULL);
		else if (strncmp(p, "seed=", 5) && used < len)
			used += (size_t)snprintf(series + used, len - used, "%s%.*s", used ? ";" : "",
						 (int)n, p);
		p += n + (e != NULL);
	}
	for (char *c = series; *c; c++) /* a word of gnuplot's word() */
		if (*c == ' ' || *c == '\t')
			*c = '_';
	return x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int swp_latency_load_data(const char *dir, const char *rate, char *names, size_t nlen, char *err,
			  size_t errlen)
{
	const cJSON *pts;
	cJSON *doc = read_sweep(dir, &pts, err, errlen);
	if (!doc)
		return -1;
	char path[4200];
	int n = cJSON_GetArraySize(pts), rc = 0;
	long rows = 0;
	char (*ser)[512] = n ? calloc((size_t)n, sizeof *ser) : NULL;
	double *xs = n ? calloc((size_t)n * 4, sizeof *xs) : NULL;
	unsigned char *done = n ? calloc((size_t)n, 1) : NULL;
	snprintf(path, sizeof path, "%s/plots", dir);
	if (res_mkdirs(path, err, errlen)) {
		rc = -1;
		goto out;
	}
	snprintf(path, sizeof path, "%s/plots/latency_load.dat", dir);
	FILE *f = !n || (ser && xs && done) ? fopen(path, "w") : NULL;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
		goto out;
	}
	double *x = xs, *ux = xs + n, *a = xs + 2 * n, *b = xs + 3 * n;
	for (int i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, i), "values");
		x[i] = split_point(cJSON_IsString(v) ? v->valuestring : "", rate, ser[i], sizeof ser[i]);
	}
	size_t used = 0;
	names[0] = 0;
	int blocks = 0;
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		/* series ser[i]: its loads, ascending, each the median over its seeds */
		int m = 0;
		for (int j = i; j < n; j++)
			if (!strcmp(ser[j], ser[i]) && !isnan(x[j]))
				ux[m++] = x[j];
		qsort(ux, (size_t)m, sizeof *ux, cmp_double);
		fprintf(f, "%srate,ttft_p99_s,tpot_p99_s,capacity_ttft_p99_s\n", blocks ? "\n\n" : "");
		for (int k = 0; k < m; k++) {
			if (k && ux[k] == ux[k - 1])
				continue;
			size_t c = 0;
			for (int j = i; j < n; j++) {
				if (strcmp(ser[j], ser[i]) || x[j] != ux[k])
					continue;
				const cJSON *sum = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(pts, j),
										   "summary");
				double t = fig_at(sum, "ttft_s", "p99"), p = fig_at(sum, "tpot_s", "p99");
				if (!isnan(t)) {
					a[c] = t;
					b[c] = isnan(p) ? -1 : p;
					c++;
				}
			}
			if (!c)
				continue;
			double lo, mt, mp, hi;
			cap_spread(a, c, &lo, &mt, &hi);
			cap_spread(b, c, &lo, &mp, &hi);
			rows++;
			fprintf(f, "%.9g,%.9g,", ux[k], mt);
			if (mp >= 0)
				fprintf(f, "%.9g,NaN\n", mp);
			else
				fputs("NaN,NaN\n", f);
		}
		for (int j = i; j < n; j++)
			if (!strcmp(ser[j], ser[i]))
				done[j] = 1;
		if (used < nlen)
			used += (size_t)snprintf(names + used, nlen - used, "%s%s", blocks ? " " : "",
						 ser[i][0] ? ser[i] : "sweep");
		blocks++;
	}
	if (fclose(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
out:
	cJSON_Delete(doc);
	free(ser);
	free(xs);
	free(done);
	return rc ? rc : (rows > INT_MAX ? INT_MAX : (int)rows);
}
