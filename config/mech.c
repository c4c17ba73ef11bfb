/* mech: the router's mechanisms, their settings and per-policy defaults. */
#include "config/mech.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"

static const char *const migs[] = {"auto", "transfer", "recompute", NULL};
static const char *const wms[] = {"none", "close", "offload", "migrate", NULL};
static const char *const sheds[] = {"none", "predicted_wait", NULL};
static const char *const throttled[] = {"ignore", "avoid", NULL};
static const char *const on_off[] = {"off", "on"};
static const char *const throttled_say[] = {NULL, "throttled"};

/* The fields are read and written as int or double by offset. */
_Static_assert(sizeof(enum migration_mode) == sizeof(int), "enum fields are ints");
_Static_assert(sizeof(enum wm_action) == sizeof(int), "enum fields are ints");
_Static_assert(sizeof(enum shed_rule) == sizeof(int), "enum fields are ints");

#define SET(f) offsetof(struct mech_set, f)
#define MECH(f) offsetof(struct mech, f)

/* Every mechanism key, in the order of the outputs (mech_describe's line,
 * summary.json) and of parsing. The defaults by family (baseline, seed,
 * production) are what each stands for (docs/policies.md, "Mechanisms").
 * The health filter's thresholds: the thermal model's resume temperature
 * (a node above it is at or near its throttle point), throttled nodes, and
 * 95% of KV blocks in use (our choice: at that share the next long prompt
 * preempts). */
static const struct mech_key table[] = {
    {.name = "migration", .type = MECH_ENUM, .choices = migs, .base = MIG_AUTO,
     .set_off = SET(migration), .off = MECH(migration),
     .fam = {MIG_RECOMPUTE, MIG_AUTO, MIG_RECOMPUTE}, .fmt = "kv %s",
     .doc = "KV a session holds on another node: moved over the links (transfer), "
	    "prefilled again (recompute), or the cheaper of the two (auto)"},
    {.name = "watermark_action", .type = MECH_ENUM, .choices = wms, .base = WM_NONE,
     .set_off = SET(watermark_action), .off = MECH(watermark_action),
     .fam = {WM_NONE, WM_MIGRATE, WM_NONE}, .fmt = "watermark %s",
     .doc = "what a node does above router.kv_watermark: nothing, take no new sessions, "
	    "write cold blocks down to the tiers, or move idle sessions away"},
    {.name = "offload", .type = MECH_BOOL, .set_off = SET(offload), .off = MECH(offload),
     .fam = {0, 1, 0}, .fmt = "offload %s", .say = on_off,
     .doc = "the engines use the servers' DRAM/NVMe tiers (cluster.tiers)"},
    {.name = "shed", .type = MECH_ENUM, .choices = sheds, .base = SHED_NONE,
     .set_off = SET(shed), .off = MECH(shed), .fam = {SHED_NONE, SHED_PREDICTED_WAIT, SHED_NONE},
     .fmt = "shed %s",
     .doc = "admission control: only the hard queue bound, or early rejection of requests "
	    "whose predicted TTFT is over the limit"},
    {.name = "shed_wait_slo_multiple", .type = MECH_NUMBER, .lo = 0.01, .hi = 1e6,
     .to_field = 1, .from_field = 1, .set_off = SET(shed_wait_x), .off = MECH(shed_wait_x),
     .fam = {1, 1, 1}, .fmt = "x%g SLO", .detail = 1,
     .doc = "shed predicted_wait's limit, in multiples of slo.ttft_p99_s"},
    {.name = "load_report_interval_ms", .type = MECH_NUMBER, .lo = 0, .hi = 1e9,
     .to_field = 1e-3, .from_field = 1e3, .set_off = SET(report_ms), .off = MECH(report_s),
     .from = MECH_FROM_POLICY, .fmt = "load reports every %g ms",
     .fmt_zero = "load reports exact",
     .doc = "how often the engines' load figures reach the router; 0: at every iteration"},
    {.obj = "health", .name = "enabled", .type = MECH_BOOL, .set_off = SET(health),
     .off = MECH(health), .fam = {0, 1, 0}, .fmt = "health %s", .say = on_off,
     .doc = "the health filter: unhealthy nodes get no work while a healthy one can take it"},
    {.obj = "health", .name = "max_temperature_c", .type = MECH_NUMBER, .lo = 0, .hi = 500,
     .to_field = 1, .from_field = 1, .set_off = SET(health_max_temp_c),
     .off = MECH(health_max_temp_c), .from = MECH_FROM_THERMAL, .fmt = ">%g C", .detail = 1,
     .doc = "a hotter node is unhealthy (default: cluster.thermal.resume_c)"},
    {.obj = "health", .name = "throttled", .type = MECH_ENUM, .choices = throttled,
     .set_off = SET(health_throttled), .off = MECH(health_throttled), .fam = {1, 1, 1},
     .fmt = "%s", .say = throttled_say, .detail = 1,
     .doc = "a thermally throttled node is unhealthy (avoid) or not (ignore)"},
    {.obj = "health", .name = "max_kv_util", .type = MECH_NUMBER, .lo = 0.01, .hi = 1,
     .to_field = 1, .from_field = 1, .set_off = SET(health_max_kv_util),
     .off = MECH(health_max_kv_util), .fam = {0.95, 0.95, 0.95}, .fmt = "kv>%g", .detail = 1,
     .doc = "a node with a larger share of its KV blocks in use is unhealthy"},
};
#define N_KEYS (sizeof table / sizeof table[0])

const struct mech_key *mech_keys(size_t *n)
{
	*n = N_KEYS;
	return table;
}

/* The key under router that row r is read from. */
static const char *top_name(const struct mech_key *r)
{
	return r->obj ? r->obj : r->name;
}

/* Whether row i starts a top-level key (the first row of its obj). */
static int starts_key(size_t i)
{
	return !table[i].obj || i == 0 || !table[i - 1].obj || strcmp(table[i - 1].obj, table[i].obj);
}

size_t mech_key_names(const char **out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < N_KEYS; i++)
		if (starts_key(i)) {
			if (n < max)
				out[n] = top_name(&table[i]);
			n++;
		}
	return n;
}

int mech_is_key(const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (!strcmp(top_name(&table[i]), key))
			return 1;
	return 0;
}

/* Field access by offset: enums and bools are ints, numbers doubles. */
static int get_int(const void *base, size_t off)
{
	int v;
	memcpy(&v, (const char *)base + off, sizeof v);
	return v;
}

static double get_double(const void *base, size_t off)
{
	double v;
	memcpy(&v, (const char *)base + off, sizeof v);
	return v;
}

static void put_int(void *base, size_t off, int v)
{
	memcpy((char *)base + off, &v, sizeof v);
}

static void put_double(void *base, size_t off, double v)
{
	memcpy((char *)base + off, &v, sizeof v);
}

/* Row r read from obj (at path) into out; absent, it stays unset. */
static int parse_row(const struct mech_key *r, const cJSON *obj, const char *path,
		     struct mech_set *out, char *err, size_t errlen)
{
	int i = -1;
	double x = -1;
	switch (r->type) {
	case MECH_ENUM:
		if (cfg_enum(obj, path, r->name, r->choices, &i, err, errlen))
			return -1;
		put_int(out, r->set_off, i < 0 ? -1 : r->base + i);
		return 0;
	case MECH_BOOL:
		if (cfg_bool(obj, path, r->name, &i, err, errlen))
			return -1;
		put_int(out, r->set_off, i);
		return 0;
	case MECH_NUMBER:
		if (cfg_number(obj, path, r->name, r->lo, r->hi, &x, err, errlen))
			return -1;
		put_double(out, r->set_off, x);
		return 0;
	}
	return 0;
}

/* The object key of the rows from table[first] (at path): checked to be an
 * object holding their names only; NULL (rows unset) when absent. */
static int parse_obj(size_t first, cJSON *obj, const char *path, const cJSON **sub,
		     char *subpath, size_t sublen, char *err, size_t errlen)
{
	const char *name = table[first].obj;
	const char *fields[N_KEYS + 1];
	size_t n = 0;
	for (size_t i = first; i < N_KEYS && table[i].obj && !strcmp(table[i].obj, name); i++)
		fields[n++] = table[i].name;
	fields[n] = NULL;
	*sub = cJSON_GetObjectItemCaseSensitive(obj, name);
	snprintf(subpath, sublen, "%s.%s", path, name);
	if (*sub && (cfg_expect_object(*sub, subpath, err, errlen) ||
		     cfg_check_keys(*sub, subpath, fields, err, errlen)))
		return -1;
	return 0;
}

int mech_parse(cJSON *obj, const char *path, int strip, struct mech_set *out, char *err,
	       size_t errlen)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (table[i].type == MECH_NUMBER)
			put_double(out, table[i].set_off, -1);
		else
			put_int(out, table[i].set_off, -1);
	}
	if (!obj)
		return 0;
	const cJSON *sub = NULL;
	char subpath[160];
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		if (r->obj && starts_key(i) &&
		    parse_obj(i, obj, path, &sub, subpath, sizeof subpath, err, errlen))
			return -1;
		if (r->obj ? sub && parse_row(r, sub, subpath, out, err, errlen)
			   : parse_row(r, obj, path, out, err, errlen))
			return -1;
	}
	if (strip)
		for (size_t i = 0; i < N_KEYS; i++)
			if (starts_key(i))
				cJSON_DeleteItemFromObjectCaseSensitive(obj, top_name(&table[i]));
	return 0;
}

/* The family's defaults, with the policy's report interval and the thermal
 * model's resume temperature where a key takes them. */
static void family_default(enum pol_family f, double report_ms, double resume_c,
			   struct mech *m)
{
	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		double v = r->from == MECH_FROM_POLICY    ? report_ms
			   : r->from == MECH_FROM_THERMAL ? resume_c
							  : r->fam[f];
		if (r->type == MECH_NUMBER)
			put_double(m, r->off, v * r->to_field);
		else
			put_int(m, r->off, (int)v);
	}
}

/* What s sets, over m. */
static void apply(const struct mech_set *s, struct mech *m)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		if (r->type == MECH_NUMBER) {
			double v = get_double(s, r->set_off);
			if (v >= 0)
				put_double(m, r->off, v * r->to_field);
		} else {
			int v = get_int(s, r->set_off);
			if (v >= 0)
				put_int(m, r->off, v);
		}
	}
}

int mech_resolve(enum pol_family fam, double report_ms, const struct mech_set *router,
		 const struct mech_set *own, const char *own_path, enum kv_path path,
		 double resume_c, struct mech *out, char *err, size_t errlen)
{
	family_default(fam, report_ms, resume_c, out);
	apply(router, out);
	apply(own, out);
	if (path == KVX_NONE) {
		if (out->migration == MIG_TRANSFER) {
			snprintf(err, errlen, "%s.migration: \"transfer\" needs a KV transfer path, "
					      "and cluster.kv_transfer is \"none\"",
				 own->migration >= 0 ? own_path : "router");
			return -1;
		}
		out->migration = MIG_RECOMPUTE; /* auto has nothing to choose from */
	}
	if (out->watermark_action == WM_OFFLOAD && !out->offload) {
		snprintf(err, errlen, "%s.watermark_action: \"offload\" writes blocks down to the "
				      "tiers, which this column does not use; set offload: true too",
			 own->watermark_action >= 0 ? own_path : "router");
		return -1;
	}
	return 0;
}

const char *mech_family_name(enum pol_family f)
{
	return f == POL_SEED ? "seed" : f == POL_PRODUCT ? "production" : "baseline";
}

const char *mech_path_name(enum kv_path p)
{
	return p == KVX_NONE ? "none" : p == KVX_LMCACHE ? "lmcache" : "nixl";
}

/* The choice index of an enum row's value (0 where it is none of them). */
static int choice(const struct mech_key *r, int v)
{
	int n = 0;
	while (r->choices[n])
		n++;
	return v - r->base >= 0 && v - r->base < n ? v - r->base : 0;
}

/* Appends as snprintf would at out + *k, *k counting what was wanted;
 * nothing once out is full. */
static void put(char *out, size_t outlen, size_t *k, const char *fmt, ...)
{
	if (*k >= outlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + *k, outlen - *k, fmt, ap);
	va_end(ap);
	*k = n < 0 ? outlen : *k + (size_t)n;
}

/* Row r of m in mech_describe's words, after prefix; nothing (and 0) when
 * its word is NULL. Returns whether the value is on (not 0: its details are
 * shown). */
static int describe_row(const struct mech_key *r, const struct mech *m, const char *prefix,
			int *said, char *out, size_t outlen, size_t *k)
{
	*said = 1;
	if (r->type == MECH_NUMBER) {
		double x = get_double(m, r->off) * r->from_field;
		put(out, outlen, k, "%s", prefix);
		if (x == 0 && r->fmt_zero)
			put(out, outlen, k, "%s", r->fmt_zero);
		else
			put(out, outlen, k, r->fmt, x);
		return x != 0;
	}
	int i = get_int(m, r->off);
	i = r->type == MECH_BOOL ? i != 0 : choice(r, i);
	const char *word = r->say ? r->say[i] : r->choices[i];
	if (word) {
		put(out, outlen, k, "%s", prefix);
		put(out, outlen, k, r->fmt, word);
	}
	*said = word != NULL;
	return i != 0;
}

void mech_describe(const struct mech *m, char *out, size_t outlen)
{
	size_t k = 0;
	int on = 0, open = 0, said;
	if (outlen)
		out[0] = '\0';
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		if (!r->detail) {
			if (open)
				put(out, outlen, &k, ")");
			open = 0;
			on = describe_row(r, m, i ? ", " : "", &said, out, outlen, &k);
		} else if (on) {
			describe_row(r, m, open ? ", " : " (", &said, out, outlen, &k);
			open |= said;
		}
	}
	if (open)
		put(out, outlen, &k, ")");
}

void mech_json(const struct mech *m, cJSON *obj)
{
	cJSON *into = obj;
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		if (starts_key(i))
			into = r->obj ? cJSON_AddObjectToObject(obj, r->obj) : obj;
		if (!into)
			continue;
		if (r->type == MECH_NUMBER)
			cJSON_AddNumberToObject(into, r->name, get_double(m, r->off) * r->from_field);
		else if (r->type == MECH_BOOL)
			cJSON_AddBoolToObject(into, r->name, get_int(m, r->off));
		else
			cJSON_AddStringToObject(into, r->name, r->choices[choice(r, get_int(m, r->off))]);
	}
}

/* Row r's range, or its default for family f, as text. */
static void row_range(const struct mech_key *r, char *out, size_t outlen)
{
	size_t k = 0;
	if (r->type == MECH_NUMBER)
		put(out, outlen, &k, "[%g, %g]", r->lo, r->hi);
	else if (r->type == MECH_BOOL)
		put(out, outlen, &k, "true, false");
	else
		for (size_t i = 0; r->choices[i]; i++)
			put(out, outlen, &k, "%s%s", i ? ", " : "", r->choices[i]);
}

static void row_default(const struct mech_key *r, enum pol_family f, char *out, size_t outlen)
{
	if (r->from == MECH_FROM_POLICY)
		snprintf(out, outlen, "by policy");
	else if (r->from == MECH_FROM_THERMAL)
		snprintf(out, outlen, "resume_c");
	else if (r->type == MECH_NUMBER)
		snprintf(out, outlen, "%g", r->fam[f]);
	else if (r->type == MECH_BOOL)
		snprintf(out, outlen, "%s", r->fam[f] ? "true" : "false");
	else
		snprintf(out, outlen, "%s", r->choices[choice(r, (int)r->fam[f])]);
}

void mech_list(FILE *f)
{
	enum { COLS = 6 };
	static const char *const head[COLS + 1] = {"key", "type", "range", "baseline",
						   "seed", "production", "what it sets"};
	static const char *const types[] = {"enum", "bool", "number"};
	char cell[N_KEYS][COLS][96];
	size_t w[COLS];
	for (size_t c = 0; c < COLS; c++)
		w[c] = strlen(head[c]);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct mech_key *r = &table[i];
		if (r->obj)
			snprintf(cell[i][0], sizeof cell[i][0], "%s.%s", r->obj, r->name);
		else
			snprintf(cell[i][0], sizeof cell[i][0], "%s", r->name);
		snprintf(cell[i][1], sizeof cell[i][1], "%s", types[r->type]);
		row_range(r, cell[i][2], sizeof cell[i][2]);
		for (int fam = POL_BASELINE; fam <= POL_PRODUCT; fam++)
			row_default(r, (enum pol_family)fam, cell[i][3 + fam], sizeof cell[i][3]);
		for (size_t c = 0; c < COLS; c++)
			if (strlen(cell[i][c]) > w[c])
				w[c] = strlen(cell[i][c]);
	}
	for (size_t c = 0; c < COLS; c++)
		fprintf(f, "| %-*s ", (int)w[c], head[c]);
	fprintf(f, "| %s |\n", head[COLS]);
	for (size_t c = 0; c < COLS; c++) {
		fputs("|", f);
		for (size_t j = 0; j < w[c] + 2; j++)
			fputc('-', f);
	}
	fputs("|---|\n", f);
	for (size_t i = 0; i < N_KEYS; i++) {
		for (size_t c = 0; c < COLS; c++)
			fprintf(f, "| %-*s ", (int)w[c], cell[i][c]);
		fprintf(f, "| %s |\n", table[i].doc);
	}
}

const char *mech_reason_name(enum mig_reason r)
{
	static const char *const names[] = {"policy", "threshold", "health", "watermark"};
	return r < MR_N ? names[r] : "policy";
}
