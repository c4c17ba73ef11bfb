/* cfg: typed, range-checked reads of cJSON values with JSON-path errors. */
#include "config/cfg.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/rng.h"

const char *cfg_join(char *buf, size_t len, const char *path, const char *key)
{
	if (path && path[0])
		snprintf(buf, len, "%s.%s", path, key);
	else
		snprintf(buf, len, "%s", key);
	return buf;
}

const char *cfg_type_name(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "an invalid value";
}

int cfg_expect_object(const cJSON *obj, const char *path, char *err, size_t errlen)
{
	if (obj == NULL || cJSON_IsObject(obj))
		return 0;
	snprintf(err, errlen, "%s: expected an object, got %s", path[0] ? path : "(top level)",
		 cfg_type_name(obj));
	return -1;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first key given twice among obj's members, or NULL; *oom set when
 * the sort's scratch could not be had. */
static const char *duplicate_key(const cJSON *obj, int *oom)
{
	size_t n = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		n++;
	if (n < 2)
		return NULL;
	if (n <= 16) { /* the common case: a pass over pairs */
		for (const cJSON *a = obj->child; a; a = a->next)
			for (const cJSON *b = a->next; b; b = b->next)
				if (!strcmp(a->string, b->string))
					return a->string;
		return NULL;
	}
	const char **keys = malloc(n * sizeof *keys);
	if (!keys) {
		*oom = 1;
		return NULL;
	}
	size_t k = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		keys[k++] = c->string;
	qsort(keys, n, sizeof *keys, key_cmp);
	const char *dup = NULL;
	for (k = 1; k < n && !dup; k++)
		if (!strcmp(keys[k - 1], keys[k]))
			dup = keys[k];
	free(keys);
	return dup;
}

int cfg_check_unique_keys(const cJSON *v, const char *path, char *err, size_t errlen)
{
	char p[512];
	if (cJSON_IsObject(v)) {
		int oom = 0;
		const char *dup = duplicate_key(v, &oom);
		if (oom) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (dup) {
			snprintf(err, errlen, "%s: duplicate key (given more than once; expected once)",
				 cfg_join(p, sizeof p, path, dup));
			return -1;
		}
		for (const cJSON *c = v->child; c; c = c->next)
			if (cfg_check_unique_keys(c, cfg_join(p, sizeof p, path, c->string), err, errlen))
				return -1;
	} else if (cJSON_IsArray(v)) {
		int i = 0;
		for (const cJSON *c = v->child; c; c = c->next, i++) {
			snprintf(p, sizeof p, "%s[%d]", path, i);
			if (cfg_check_unique_keys(c, p, err, errlen))
				return -1;
		}
	}
	return 0;
}

int cfg_check_keys(const cJSON *obj, const char *path, const char *const *allowed, char *err,
		   size_t errlen)
{
	if (cfg_expect_object(obj, path, err, errlen))
		return -1;
	if (!obj)
		return 0;
	for (const cJSON *c = obj->child; c; c = c->next) {
		if (c->string[0] == '_')
			continue;
		int ok = 0;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = strcmp(*a, c->string) == 0;
		if (ok)
			continue;
		char p[256], list[512] = "";
		for (const char *const *a = allowed; *a; a++) {
			if (strlen(list) + strlen(*a) + 3 >= sizeof list)
				break;
			strcat(list, list[0] ? ", " : "");
			strcat(list, *a);
		}
		cfg_join(p, sizeof p, path, c->string);
		if (!allowed[0])
			snprintf(err, errlen, "%s: unknown key (%s takes no keys)", p, path);
		else
			snprintf(err, errlen, "%s: unknown key (expected one of: %s)", p, list);
		return -1;
	}
	return 0;
}

static const cJSON *member(const cJSON *obj, const char *key)
{
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

int cfg_number(const cJSON *obj, const char *path, const char *key, double lo, double hi,
	       double *out, char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	char p[256];
	cfg_join(p, sizeof p, path, key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		snprintf(err, errlen, "%s: expected a number in [%g, %g], got %s", p, lo, hi,
			 cfg_type_name(v));
		return -1;
	}
	if (v->valuedouble < lo || v->valuedouble > hi) {
		snprintf(err, errlen, "%s: expected a number in [%g, %g], got %g", p, lo, hi,
			 v->valuedouble);
		return -1;
	}
	*out = v->valuedouble;
	return 0;
}

int cfg_int(const cJSON *obj, const char *path, const char *key, int64_t lo, int64_t hi,
	    int64_t *out, char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	char p[256];
	cfg_join(p, sizeof p, path, key);
	if (lo < -CFG_INT_MAX)
		lo = -CFG_INT_MAX;
	if (hi > CFG_INT_MAX)
		hi = CFG_INT_MAX;
	double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	if (!isfinite(x) || floor(x) != x || x < (double)lo || x > (double)hi) {
		if (cJSON_IsNumber(v))
			snprintf(err, errlen, "%s: expected an integer in [%lld, %lld], got %g", p,
				 (long long)lo, (long long)hi, x);
		else
			snprintf(err, errlen, "%s: expected an integer in [%lld, %lld], got %s", p,
				 (long long)lo, (long long)hi, cfg_type_name(v));
		return -1;
	}
	*out = (int64_t)x;
	return 0;
}

int cfg_bool(const cJSON *obj, const char *path, const char *key, int *out, char *err,
	     size_t errlen)
{
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	if (!cJSON_IsBool(v)) {
		char p[256];
		snprintf(err, errlen, "%s: expected true or false, got %s",
			 cfg_join(p, sizeof p, path, key), cfg_type_name(v));
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

int cfg_string(const cJSON *obj, const char *path, const char *key, char *out, size_t outlen,
	       char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	char p[256];
	cfg_join(p, sizeof p, path, key);
	if (!cJSON_IsString(v)) {
		snprintf(err, errlen, "%s: expected a string, got %s", p, cfg_type_name(v));
		return -1;
	}
	if (strlen(v->valuestring) >= outlen || v->valuestring[0] == 0) {
		snprintf(err, errlen, "%s: expected a non-empty string of at most %zu characters", p,
			 outlen - 1);
		return -1;
	}
	strcpy(out, v->valuestring);
	return 0;
}

int cfg_enum(const cJSON *obj, const char *path, const char *key, const char *const *choices,
	     int *out, char *err, size_t errlen)
{
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	char p[256], list[512] = "";
	cfg_join(p, sizeof p, path, key);
	for (int i = 0; choices[i]; i++) {
		if (cJSON_IsString(v) && strcmp(v->valuestring, choices[i]) == 0) {
			*out = i;
			return 0;
		}
		if (strlen(list) + strlen(choices[i]) + 3 < sizeof list) {
			strcat(list, i ? ", " : "");
			strcat(list, choices[i]);
		}
	}
	if (cJSON_IsString(v))
		snprintf(err, errlen, "%s: expected one of %s, got \"%.64s\"", p, list, v->valuestring);
	else
		snprintf(err, errlen, "%s: expected one of %s, got %s", p, list, cfg_type_name(v));
	return -1;
}

int cfg_dist(const cJSON *obj, const char *path, const char *key, int token_count,
	     struct dist *out, char *err, size_t errlen)
{
	static const char *const kinds[] = {"constant",  "uniform",   "exponential", "lognormal",
					    "gamma",     "geometric", "zipf",        NULL};
	static const char *const params[][3] = {
	    {"value", NULL, NULL}, {"min", "max", NULL},   {"mean", NULL, NULL},
	    {"median", "sigma", NULL}, {"mean", "cv", NULL}, {"mean", NULL, NULL},
	    {"n", "s", NULL}};
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	char p[256];
	cfg_join(p, sizeof p, path, key);
	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen,
			 "%s: expected a distribution object such as {\"dist\": \"lognormal\", "
			 "\"median\": 100, \"sigma\": 0.5}, got %s",
			 p, cfg_type_name(v));
		return -1;
	}
	int kind = -1;
	if (!member(v, "dist")) {
		snprintf(err, errlen, "%s.dist: missing (expected one of constant, uniform, "
				      "exponential, lognormal, gamma, geometric, zipf)", p);
		return -1;
	}
	if (cfg_enum(v, p, "dist", kinds, &kind, err, errlen))
		return -1;
	const char *allowed[4] = {"dist", params[kind][0], params[kind][1], NULL};
	if (cfg_check_keys(v, p, allowed, err, errlen))
		return -1;
	double a = NAN, b = NAN;
	double lo = token_count ? 0 : -1e300;
	for (int i = 0; i < 2 && params[kind][i]; i++) {
		const char *name = params[kind][i];
		double *dst = i == 0 ? &a : &b;
		if (!member(v, name)) {
			snprintf(err, errlen, "%s.%s: missing (a %s distribution needs it)", p, name,
				 kinds[kind]);
			return -1;
		}
		double plo = lo;
		if (!strcmp(name, "mean") || !strcmp(name, "median") || !strcmp(name, "sigma") ||
		    !strcmp(name, "cv") || !strcmp(name, "n"))
			plo = strcmp(name, "n") == 0 ? 1 : 1e-12;
		if (!strcmp(name, "mean") && kind == DIST_GEOMETRIC)
			plo = 1;
		if (!strcmp(name, "s"))
			plo = 0;
		if (cfg_number(v, p, name, plo, 1e15, dst, err, errlen))
			return -1;
	}
	if (kind == DIST_UNIFORM && !(b >= a)) {
		snprintf(err, errlen, "%s.max: expected max >= min (%g), got %g", p, a, b);
		return -1;
	}
	if (kind == DIST_ZIPF && (floor(a) != a || a > 1e8)) {
		snprintf(err, errlen, "%s.n: expected an integer in [1, 100000000], got %g", p, a);
		return -1;
	}
	struct dist d;
	if (dist_make(&d, (enum dist_kind)kind, a, b)) {
		snprintf(err, errlen, "%s: invalid parameters or out of memory", p);
		return -1;
	}
	dist_free(out);
	*out = d;
	return 0;
}

char *cfg_slurp(const char *file, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	if (stat(file, &st) != 0) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a %s, expected a file", file,
			 S_ISDIR(st.st_mode) ? "directory" : S_ISBLK(st.st_mode) ? "block device"
										: "socket");
		return NULL;
	}
	const char *too_big = "%s: larger than %zu MiB, the most kvsim reads of one file";
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > CFG_SLURP_MAX) {
		snprintf(err, errlen, too_big, file, CFG_SLURP_MAX >> 20);
		return NULL;
	}
	FILE *f = fopen(file, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return NULL;
	}
	/* A FIFO or a device (/dev/zero) has no size to check first: reading
	 * stops one byte past the limit. */
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf && n <= CFG_SLURP_MAX) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		size_t want = cap - n - 1;
		if (want > CFG_SLURP_MAX + 1 - n)
			want = CFG_SLURP_MAX + 1 - n;
		size_t got = fread(buf + n, 1, want, f);
		n += got;
		if (got == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	if (buf && n > CFG_SLURP_MAX) {
		free(buf);
		snprintf(err, errlen, too_big, file, CFG_SLURP_MAX >> 20);
		return NULL;
	}
	if (!buf || bad) {
		free(buf);
		snprintf(err, errlen, "%s: %s", file, buf ? "read error" : "out of memory");
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* The length of the UTF-8 sequence at s (RFC 3629), or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t n = c >= 0xc2 && c <= 0xdf   ? 2
		   : c >= 0xe0 && c <= 0xef ? 3
		   : c >= 0xf0 && c <= 0xf4 ? 4
					    : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* no overlong forms, no UTF-16 surrogates, nothing past U+10FFFF */
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* The offset of the first byte of s that does not begin a UTF-8 sequence,
 * or -1 when s is all UTF-8. */
static long utf8_bad_at(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; p[i];) {
		size_t n = utf8_seq(p + i);
		if (!n)
			return (long)i;
		i += n;
	}
	return -1;
}

int cfg_check_utf8(const cJSON *v, const char *path, char *err, size_t errlen)
{
	const char *what = path[0] ? path : "(top level)";
	if (cJSON_IsString(v)) {
		long at = utf8_bad_at(v->valuestring);
		if (at >= 0) {
			snprintf(err, errlen, "%s: invalid UTF-8 (byte 0x%02x at offset %ld of the string); "
					      "expected UTF-8 text",
				 what, (unsigned char)v->valuestring[at], at);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
		return 0;
	int i = 0;
	for (const cJSON *c = v->child; c; c = c->next, i++) {
		char p[512];
		if (cJSON_IsObject(v)) {
			long at = utf8_bad_at(c->string);
			if (at >= 0) {
				snprintf(err, errlen, "%s: a key has invalid UTF-8 (byte 0x%02x at offset "
						      "%ld); expected UTF-8 text",
					 what, (unsigned char)c->string[at], at);
				return -1;
			}
			cfg_join(p, sizeof p, path, c->string);
		} else {
			snprintf(p, sizeof p, "%s[%d]", path, i);
		}
		if (cfg_check_utf8(c, p, err, errlen))
			return -1;
	}
	return 0;
}

int cfg_time_ns(double x, double ns_per_unit, int64_t *ns)
{
	double t = x * ns_per_unit;
	if (!(t >= 0 && t <= (double)CFG_TIME_MAX_NS))
		return -1;
	*ns = (int64_t)llround(t);
	return 0;
}

int64_t cfg_time_ns_clamp(double x, double ns_per_unit)
{
	int64_t ns;
	if (cfg_time_ns(x, ns_per_unit, &ns) == 0)
		return ns;
	return x * ns_per_unit > 0 ? CFG_TIME_MAX_NS : 0;
}

int64_t cfg_time_add(int64_t a, int64_t b)
{
	return a > CFG_TIME_MAX_NS - b ? CFG_TIME_MAX_NS : a + b;
}
