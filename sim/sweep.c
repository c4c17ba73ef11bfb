/* sweep: cartesian sweeps of scenario values, run here or emitted as jobs, then merged. */
#define _GNU_SOURCE
#include "sim/sweep.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/metric_table.h"
#include "results/metrics.h"
#include "results/writer.h"
#include "sim/cfg.h"
#include "sim/config.h"
#include "sim/rng.h"
#include "sim/sim.h"

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
	char *list = strdup(eq + 1), *save = NULL;
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	a->n = 0;
	a->values = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nv = realloc(a->values, (size_t)(a->n + 1) * sizeof *nv);
		if (!nv || !(nv[a->n] = strdup(t))) {
			free(list);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		a->values = nv;
		a->n++;
	}
	free(list);
	if (a->n == 0) {
		snprintf(err, errlen, "--vary %s: no values", arg);
		return -1;
	}
	long total = s->n_axes ? s->n_points : 1;
	if (total > 10000000 / a->n) {
		snprintf(err, errlen, "--vary: more than 10,000,000 points");
		return -1;
	}
	s->n_points = total * a->n;
	s->n_axes++;
	return 0;
}

void swp_free(struct swp *s)
{
	for (int k = 0; k < s->n_axes; k++) {
		for (int i = 0; i < s->ax[k].n; i++)
			free(s->ax[k].values[i]);
		free(s->ax[k].values);
	}
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

uint64_t swp_point_seed(uint64_t base_seed, const char *canon)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a over the point's identity */
	for (const unsigned char *p = (const unsigned char *)canon; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return rng_mix64(rng_mix64(base_seed) ^ h) >> 11; /* 53 bits: exact in JSON */
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
		cJSON_AddNumberToObject(p, "seed", (double)swp_point_seed(s->seed, canon));
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

int swp_run_point(const struct swp *s, long i, const char *dir, char *err, size_t errlen)
{
	char pdir[4200], canon[4096], set[4300];
	point_dir(dir, i, pdir, sizeof pdir);
	swp_point_canon(s, i, canon, sizeof canon);
	cJSON *root = NULL;
	struct scenario sc;
	int rc = 2, loaded = 0;
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
	cJSON_AddNumberToObject(root, "seed", (double)swp_point_seed(s->seed, canon));
	if (cfg_scenario_load(&sc, root, s->catalog, err, errlen))
		goto out;
	loaded = 1;
	cfg_scenario_set_source(&sc, s->scenario);
	if (sim_validate(&sc, err, errlen))
		goto out;
	struct sim_opts o = {.out_dir = pdir};
	struct met_summary m;
	rc = sim_run(&sc, &o, &m, err, errlen);
	if (rc == 0)
		met_summary_free(&m);
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
		swp_point_canon(s, i, canon, sizeof canon);
		char pdir[PATH_MAX + 32];
		point_dir(abs_dir, i, pdir, sizeof pdir);
		fprintf(f, " --seed %llu --out ", (unsigned long long)swp_point_seed(s->seed, canon));
		put_shell_quoted(f, pdir);
		fputs(" --quiet\n", f);
	}
	return ferror(f) ? -1 : 0;
}

int swp_merge_with(const char *dir, const struct res_metrics *table, FILE *out, long *missing,
		   long *failed, char *err, size_t errlen)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/sweep.spec.json", dir);
	cJSON *spec = NULL;
	if (cfg_read_json(path, &spec, err, errlen))
		return -1;
	const cJSON *vary = cJSON_GetObjectItemCaseSensitive(spec, "vary");
	const cJSON *pts = cJSON_GetObjectItemCaseSensitive(spec, "points");
	if (!cJSON_IsArray(vary) || !cJSON_IsArray(pts)) {
		snprintf(err, errlen, "%s: not a sweep spec (no vary/points)", path);
		cJSON_Delete(spec);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	char *csv = malloc(cap);
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
	if (!csv)
		goto oom;
	for (const cJSON *a = vary->child; a; a = a->next)
		CSV("%s,", cJSON_GetObjectItemCaseSensitive(a, "path")->valuestring);
	CSV("point,seed");
	size_t it = 0;
	for (const struct res_metric *m; (m = res_metric_next(table, RES_LIST_SWEEP, &it));)
		CSV(",%s", m->csv);
	CSV("\n");
	for (const cJSON *p = pts->child; p; p = p->next) {
		long i = (long)cJSON_GetObjectItemCaseSensitive(p, "point")->valuedouble;
		const char *pd = cJSON_GetObjectItemCaseSensitive(p, "dir")->valuestring;
		const char *canon = cJSON_GetObjectItemCaseSensitive(p, "values")->valuestring;
		double seed = cJSON_GetObjectItemCaseSensitive(p, "seed")->valuedouble;
		char sum[4400], errf[4400], inner[512];
		snprintf(sum, sizeof sum, "%s/%s/summary.json", dir, pd);
		snprintf(errf, sizeof errf, "%s/%s/error.txt", dir, pd);
		cJSON *s = NULL;
		struct stat st;
		if (stat(sum, &st) == 0 && cfg_read_json(sum, &s, inner, sizeof inner) == 0) {
			cJSON_DeleteItemFromObjectCaseSensitive(s, "perf");
			char buf[4096];
			snprintf(buf, sizeof buf, "%s", canon);
			char *save = NULL;
			for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
				CSV("%s,", strchr(t, '=') + 1);
			CSV("%ld,%.0f", i, seed);
			it = 0;
			for (const struct res_metric *m;
			     (m = res_metric_next(table, RES_LIST_SWEEP, &it));) {
				const cJSON *v = res_json_at(s, m->path);
				CSV(",%.9g", v ? v->valuedouble : 0);
			}
			CSV("\n");
			cJSON *row = cJSON_CreateObject();
			cJSON_AddNumberToObject(row, "point", (double)i);
			cJSON_AddStringToObject(row, "values", canon);
			cJSON_AddNumberToObject(row, "seed", seed);
			cJSON_AddItemToObject(row, "summary", s);
			cJSON_AddItemToArray(rows, row);
		} else if (stat(errf, &st) == 0) {
			(*failed)++;
			char *why = cfg_slurp(errf, NULL, inner, sizeof inner);
			fprintf(out, "sweep: point %ld failed: %s", i, why ? why : "(unreadable error)\n");
			cJSON_AddItemToArray(bad, cJSON_CreateNumber((double)i));
			free(why);
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
	return rc;
oom:
	free(csv);
	cJSON_Delete(res);
	cJSON_Delete(spec);
	snprintf(err, errlen, "out of memory");
	return -1;
#undef CSV
}

int swp_merge(const char *dir, FILE *out, long *missing, long *failed, char *err, size_t errlen)
{
	return swp_merge_with(dir, NULL, out, missing, failed, err, errlen);
}
