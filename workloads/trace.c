/* trace: line-by-line readers of Mooncake JSONL, Azure CSV and kvsim JSONL. */
#include "workloads/trace.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "config/cfg.h"
#include "sim/request.h"
#include "workloads/common.h"

static const char *const format_names[] = {"mooncake", "azure", "kvsim"};

int trace_format_parse(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(name, format_names[i]))
			return i;
	return -1;
}

const char *trace_format_name(enum trace_format f)
{
	return format_names[f];
}

int trace_open(struct trace_reader *tr, const char *path, enum trace_format format, int skip_bad,
	       char *err, size_t errlen)
{
	memset(tr, 0, sizeof *tr);
	snprintf(tr->path, sizeof tr->path, "%s", path);
	tr->format = format;
	tr->skip_bad = skip_bad;
	hmap_init(&tr->open_sessions);
	struct stat st;
	if (stat(path, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory, expected a trace file", path);
		return -1;
	}
	tr->f = fopen(path, "rb");
	if (!tr->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

void trace_close(struct trace_reader *tr)
{
	if (tr->f)
		fclose(tr->f);
	free(tr->buf);
	hmap_free(&tr->open_sessions);
	tr->f = NULL;
	tr->buf = NULL;
}

void trace_rec_free(struct trace_rec *rec)
{
	free(rec->ids);
	rec->ids = NULL;
	rec->ids_cap = rec->n_ids = 0;
}

/* Reads one line into tr->buf (without the newline). 1, 0 at EOF (or a
 * read error, as the end), -1 with no memory, -2 on a NUL byte (binary
 * data). getline, not a character at a time: a trace is read at several
 * hundred MB/s. */
static int read_line(struct trace_reader *tr, size_t *len)
{
	errno = 0;
	ssize_t got = getline(&tr->buf, &tr->cap, tr->f);
	if (got < 0)
		return errno == ENOMEM ? -1 : 0;
	size_t n = (size_t)got;
	if (n && tr->buf[n - 1] == '\n')
		n--;
	if (n && tr->buf[n - 1] == '\r')
		n--;
	tr->buf[n] = 0;
	*len = n;
	tr->line++;
	return memchr(tr->buf, 0, n) ? -2 : 1;
}

static int bad(char *err, size_t errlen, const struct trace_reader *tr, const char *fmt, ...)
{
	char what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%.900s:%llu: %s", tr->path, (unsigned long long)tr->line, what);
	return -1;
}

static int reserve_ids(struct trace_rec *rec, uint32_t n)
{
	return wl_reserve_u64(&rec->ids, &rec->ids_cap, n);
}

/* An integer member in [lo, hi]. */
static int get_int(const struct trace_reader *tr, const cJSON *o, const char *key, double lo,
		   double hi, int required, double *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v) {
		if (required)
			return bad(err, errlen, tr, "missing field \"%s\"", key);
		return 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || floor(v->valuedouble) != v->valuedouble)
		return bad(err, errlen, tr, "\"%s\": expected an integer", key);
	if (v->valuedouble < lo || v->valuedouble > hi)
		return bad(err, errlen, tr, "\"%s\": expected an integer in [%.0f, %.0f], got %.0f", key,
			   lo, hi, v->valuedouble);
	*out = v->valuedouble;
	return 0;
}

static int get_num(const struct trace_reader *tr, const cJSON *o, const char *key, double lo,
		   double *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return bad(err, errlen, tr, "missing field \"%s\"", key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return bad(err, errlen, tr, "\"%s\": expected a number", key);
	if (v->valuedouble < lo)
		return bad(err, errlen, tr, "\"%s\": expected a number >= %g, got %g", key, lo,
			   v->valuedouble);
	*out = v->valuedouble;
	return 0;
}

#define MAX_TOKENS 100000000.0

/* A Mooncake record's fields once its n ids are in place (512-token blocks). */
static void mooncake_done(struct trace_rec *rec, uint32_t n, double in, double out)
{
	rec->n_ids = n;
	rec->block_tokens = 512;
	rec->input = (uint32_t)in;
	rec->output = (uint32_t)out;
	rec->shared_blocks = 0;
}

static int parse_mooncake(struct trace_reader *tr, const cJSON *o, struct trace_rec *rec,
			  double *ts_ms, char *err, size_t errlen)
{
	double in = 0, out = 0;
	if (get_num(tr, o, "timestamp", 0, ts_ms, err, errlen) ||
	    get_int(tr, o, "input_length", 1, MAX_TOKENS, 1, &in, err, errlen) ||
	    get_int(tr, o, "output_length", 1, MAX_TOKENS, 1, &out, err, errlen))
		return -1;
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
	if (!ids)
		return bad(err, errlen, tr, "missing field \"hash_ids\"");
	if (!cJSON_IsArray(ids))
		return bad(err, errlen, tr, "\"hash_ids\": expected an array of integers");
	uint32_t n = (uint32_t)cJSON_GetArraySize(ids), want = (uint32_t)ceil(in / 512.0);
	if (n != want)
		return bad(err, errlen, tr,
			   "\"hash_ids\" has %u ids; input_length %.0f needs ceil(%.0f / 512) = %u",
			   n, in, in, want);
	if (reserve_ids(rec, n))
		return bad(err, errlen, tr, "out of memory");
	uint32_t i = 0;
	for (const cJSON *e = ids->child; e; e = e->next, i++) {
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 9.0e15 ||
		    floor(e->valuedouble) != e->valuedouble)
			return bad(err, errlen, tr, "\"hash_ids\"[%u]: expected a non-negative integer",
				   i);
		rec->ids[i] = (uint64_t)e->valuedouble;
	}
	mooncake_done(rec, n, in, out);
	return 0;
}

/* The fast path for a Mooncake line in its canonical shape: the four keys
 * in the published order, unsigned integers without leading zeros of at
 * most 15 digits (exact as doubles), 12 for the timestamp (its ns fit in
 * 64 bits), blanks and tabs between tokens. It
 * accepts only what parse_mooncake accepts, with the same values, and
 * fills rec as it would: 1. Anything else, a line parse_mooncake would
 * reject included, returns 0 for the general path (cJSON), whose answer
 * or error stands. -1: out of memory. A cJSON tree per line was ~15% of
 * replaying the Mooncake trace. */
static const char *fm_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static const char *fm_uint(const char *p, int digits, uint64_t *v)
{
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return NULL;
	uint64_t x = 0;
	int n = 0;
	for (; *p >= '0' && *p <= '9'; p++, n++) {
		if (n == digits)
			return NULL;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*v = x;
	return p;
}

static const char *fm_key(const char *p, const char *key)
{
	size_t k = strlen(key);
	p = fm_ws(p);
	if (*p != '"' || strncmp(p + 1, key, k) != 0 || p[1 + k] != '"')
		return NULL;
	p = fm_ws(p + k + 2);
	return *p == ':' ? fm_ws(p + 1) : NULL;
}

static int fast_mooncake(const char *p, struct trace_rec *rec, double *ts_ms)
{
	uint64_t ts, in, out;
	p = fm_ws(p);
	if (*p++ != '{' || !(p = fm_key(p, "timestamp")) || !(p = fm_uint(p, 12, &ts)) ||
	    *(p = fm_ws(p)) != ',' || !(p = fm_key(p + 1, "input_length")) ||
	    !(p = fm_uint(p, 15, &in)) || *(p = fm_ws(p)) != ',' ||
	    !(p = fm_key(p + 1, "output_length")) || !(p = fm_uint(p, 15, &out)) ||
	    *(p = fm_ws(p)) != ',' || !(p = fm_key(p + 1, "hash_ids")) || *p++ != '[')
		return 0;
	if (in < 1 || in > MAX_TOKENS || out < 1 || out > MAX_TOKENS)
		return 0;
	uint32_t want = (uint32_t)((in + 511) / 512), n = 0;
	if (reserve_ids(rec, want))
		return -1;
	p = fm_ws(p);
	if (*p != ']') {
		for (;;) {
			uint64_t id;
			if (n == want || !(p = fm_uint(p, 15, &id)))
				return 0;
			rec->ids[n++] = id;
			p = fm_ws(p);
			if (*p == ']')
				break;
			if (*p != ',')
				return 0;
			p = fm_ws(p + 1);
		}
	}
	p = fm_ws(p + 1);
	if (*p++ != '}' || *fm_ws(p) != 0 || n != want)
		return 0;
	*ts_ms = (double)ts;
	mooncake_done(rec, n, (double)in, (double)out);
	return 1;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* "YYYY-MM-DD HH:MM:SS[.fraction]" -> ns since the epoch; -1 if malformed. */
static int parse_datetime(const char *s, int64_t *ns)
{
	int y, mo, d, h, mi, sec, used = 0;
	if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6 ||
	    mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || h < 0 ||
	    mi < 0 || sec < 0 || y < 1900 || y > 2200) /* int64 ns reach only +-292 years */
		return -1;
	int64_t frac = 0;
	const char *p = s + used;
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 9)
				frac = frac * 10 + (*p - '0');
		if (digits == 0)
			return -1;
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (*p)
		return -1;
	int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	*ns = ((days * 24 + h) * 60 + mi) * 60 * 1000000000LL + (int64_t)sec * 1000000000LL + frac;
	return 0;
}

static int parse_azure(struct trace_reader *tr, char *line, struct trace_rec *rec, int64_t *ts_ns,
		       char *err, size_t errlen)
{
	char *c1 = strchr(line, ',');
	char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
	if (!c1 || !c2 || strchr(c2 + 1, ','))
		return bad(err, errlen, tr,
			   "expected 3 comma-separated fields TIMESTAMP,ContextTokens,GeneratedTokens");
	*c1 = *c2 = 0;
	if (parse_datetime(line, ts_ns))
		return bad(err, errlen, tr,
			   "TIMESTAMP \"%.40s\": expected YYYY-MM-DD HH:MM:SS.fraction (years "
			   "1900 to 2200)",
			   line);
	char *end;
	errno = 0;
	long long in = strtoll(c1 + 1, &end, 10);
	if (errno || *end || end == c1 + 1)
		return bad(err, errlen, tr, "ContextTokens \"%.20s\": expected an integer", c1 + 1);
	long long out = strtoll(c2 + 1, &end, 10);
	if (errno || *end || end == c2 + 1)
		return bad(err, errlen, tr, "GeneratedTokens \"%.20s\": expected an integer", c2 + 1);
	if (in < 1 || in > MAX_TOKENS)
		return bad(err, errlen, tr, "ContextTokens: expected an integer in [1, %.0f], got %lld",
			   MAX_TOKENS, in);
	if (out < 1 || out > MAX_TOKENS)
		return bad(err, errlen, tr,
			   "GeneratedTokens: expected an integer in [1, %.0f], got %lld", MAX_TOKENS,
			   out);
	rec->input = (uint32_t)in;
	rec->output = (uint32_t)out;
	rec->n_ids = 0;
	rec->block_tokens = 0;
	rec->shared_blocks = 0;
	return 0;
}

static int parse_hex(const char *s, uint64_t *out)
{
	if (!s || !*s || strlen(s) > 16)
		return -1;
	uint64_t v = 0;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9'   ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return v ? 0 : -1;
}

/* A time of the trace (x units of ns_per_unit ns) as ns; -1 with err when
 * the clock cannot hold it. */
static int trace_time(const struct trace_reader *tr, const char *key, double x, double ns_per_unit,
		      const char *unit, int64_t *ns, char *err, size_t errlen)
{
	if (cfg_time_ns(x, ns_per_unit, ns) == 0)
		return 0;
	return bad(err, errlen, tr,
		   "\"%s\": %.16g %s is out of range (expected at most %.16g %s, about 126 years%s)",
		   key, x, unit, (double)CFG_TIME_MAX_NS / ns_per_unit, unit,
		   tr->format == TRACE_MOONCAKE ? "; Mooncake timestamps are milliseconds" : "");
}

static int parse_kvsim(struct trace_reader *tr, const cJSON *o, struct trace_rec *rec,
		       int64_t *arrival_ns, char *err, size_t errlen)
{
	double session = 0, turn = 0, in = 0, out = 0, bt = 0, shared = 0, after = 0;
	if (get_int(tr, o, "session", 1, 9.0e15, 1, &session, err, errlen) ||
	    get_int(tr, o, "turn", 1, 1e9, 1, &turn, err, errlen) ||
	    get_int(tr, o, "prompt_tokens", 1, MAX_TOKENS, 1, &in, err, errlen) ||
	    get_int(tr, o, "output_tokens", 1, MAX_TOKENS, 1, &out, err, errlen) ||
	    get_int(tr, o, "block_tokens", 1, 4096, 1, &bt, err, errlen) ||
	    get_int(tr, o, "shared_blocks", 0, 1e9, 0, &shared, err, errlen))
		return -1;
	const cJSON *lt = cJSON_GetObjectItemCaseSensitive(o, "last_turn");
	if (lt && !cJSON_IsBool(lt))
		return bad(err, errlen, tr, "\"last_turn\": expected true or false");
	if (turn == 1) {
		double arrival = 0;
		if (get_num(tr, o, "arrival_s", 0, &arrival, err, errlen) ||
		    trace_time(tr, "arrival_s", arrival, 1e9, "s", arrival_ns, err, errlen))
			return -1;
		rec->after_ns = 0;
	} else {
		if (get_num(tr, o, "after_s", 0, &after, err, errlen) ||
		    trace_time(tr, "after_s", after, 1e9, "s", &rec->after_ns, err, errlen))
			return -1;
		*arrival_ns = -1;
	}
	const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(o, "blocks");
	if (!blocks)
		return bad(err, errlen, tr, "missing field \"blocks\"");
	if (!cJSON_IsArray(blocks))
		return bad(err, errlen, tr, "\"blocks\": expected an array of hex strings");
	uint32_t n = (uint32_t)cJSON_GetArraySize(blocks);
	uint32_t want = (uint32_t)((in + out) / bt);
	if (n != want)
		return bad(err, errlen, tr,
			   "\"blocks\" has %u hashes; prompt_tokens + output_tokens = %.0f needs "
			   "floor(%.0f / %.0f) = %u",
			   n, in + out, in + out, bt, want);
	if (shared > n)
		return bad(err, errlen, tr, "\"shared_blocks\": %.0f is more than the %u blocks", shared,
			   n);
	if (reserve_ids(rec, n))
		return bad(err, errlen, tr, "out of memory");
	uint32_t i = 0;
	for (const cJSON *e = blocks->child; e; e = e->next, i++)
		if (!cJSON_IsString(e) || parse_hex(e->valuestring, &rec->ids[i]))
			return bad(err, errlen, tr,
				   "\"blocks\"[%u]: expected a nonzero hash of 1-16 hex digits", i);
	rec->n_ids = n;
	rec->session = (uint64_t)session;
	rec->turn = (uint32_t)turn;
	rec->last_turn = lt && cJSON_IsTrue(lt);
	rec->input = (uint32_t)in;
	rec->output = (uint32_t)out;
	rec->block_tokens = (uint32_t)bt;
	rec->shared_blocks = (uint32_t)shared;
	return 0;
}

/* Parses the current line into rec: 0, or -1 with err. */
static int parse_line(struct trace_reader *tr, size_t len, struct trace_rec *rec, char *err,
		      size_t errlen)
{
	rec->line = tr->line;
	rec->session = 0;
	rec->turn = 1;
	rec->last_turn = 1;
	rec->after_ns = 0;
	int64_t t_ns = -1; /* the raw time (Azure: ns since the epoch, maybe < 0) */
	int have_t = 1;    /* 0: a kvsim later turn */
	int fast = 0;
	double ts_ms = 0;
	if (tr->format == TRACE_MOONCAKE && (fast = fast_mooncake(tr->buf, rec, &ts_ms)) != 0) {
		if (fast < 0)
			return bad(err, errlen, tr, "out of memory");
		if (trace_time(tr, "timestamp", ts_ms, 1e6, "ms", &t_ns, err, errlen))
			return -1;
	} else if (tr->format == TRACE_AZURE) {
		if (parse_azure(tr, tr->buf, rec, &t_ns, err, errlen))
			return -1;
	} else {
		const char *end = NULL;
		cJSON *o = cJSON_ParseWithOpts(tr->buf, &end, 1);
		if (!o || !cJSON_IsObject(o)) {
			cJSON_Delete(o);
			return bad(err, errlen, tr, "not a JSON object%s",
				   len > 0 && tr->buf[len - 1] != '}' ? " (truncated line?)" : "");
		}
		int rc;
		if (tr->format == TRACE_MOONCAKE) {
			double t = -1;
			rc = parse_mooncake(tr, o, rec, &t, err, errlen) ||
			     trace_time(tr, "timestamp", t, 1e6, "ms", &t_ns, err, errlen);
		} else {
			rc = parse_kvsim(tr, o, rec, &t_ns, err, errlen);
			have_t = t_ns >= 0;
		}
		cJSON_Delete(o);
		if (rc)
			return -1;
	}
	if (!have_t) {
		rec->arrival_ns = -1;
		return 0;
	}
	int64_t t0 = tr->have_t0 ? tr->t0_ns : tr->format == TRACE_KVSIM ? 0 : t_ns, rel;
	if (tr->have_t0 && t_ns < tr->last_ns)
		return bad(err, errlen, tr,
			   "arrival goes backwards (%.6f s after the previous one's %.6f s); "
			   "a trace must be in arrival order",
			   ((double)t_ns - (double)t0) * 1e-9, ((double)tr->last_ns - (double)t0) * 1e-9);
	/* Azure's raw times span centuries: their differences may not fit */
	if (__builtin_sub_overflow(t_ns, t0, &rel) || rel > CFG_TIME_MAX_NS)
		return bad(err, errlen, tr,
			   "arrival %.0f s after the trace's first is out of range (expected at most "
			   "%.0f s, about 126 years)",
			   ((double)t_ns - (double)t0) * 1e-9, (double)CFG_TIME_MAX_NS * 1e-9);
	tr->t0_ns = t0;
	tr->have_t0 = 1;
	tr->last_ns = t_ns;
	rec->arrival_ns = rel;
	return 0;
}

/* kvsim: a later turn must come after its session's turn before it (and
 * that one not its last); a first turn opens its session. 0, or -1 with
 * err. */
static int check_turn(struct trace_reader *tr, const struct trace_rec *rec, char *err,
		      size_t errlen)
{
	struct hmap *open = &tr->open_sessions;
	uint64_t *next = hmap_get(open, rec->session);
	if (rec->turn > 1 && (!next || *next != rec->turn)) {
		if (next)
			return bad(err, errlen, tr, "session %llu turn %u: expected turn %llu next",
				   (unsigned long long)rec->session, rec->turn,
				   (unsigned long long)*next);
		return bad(err, errlen, tr,
			   "session %llu turn %u: no open turn %u of the session before it (a "
			   "session's turns follow its turn 1 in order, until the one with "
			   "last_turn)",
			   (unsigned long long)rec->session, rec->turn, rec->turn - 1);
	}
	if (rec->last_turn) {
		hmap_del(open, rec->session);
		return 0;
	}
	if (next) {
		*next = rec->turn + 1ULL;
		return 0;
	}
	return hmap_put(open, rec->session, rec->turn + 1ULL) < 0 ? bad(err, errlen, tr, "out of memory")
								   : 0;
}

int trace_check_nonempty(const struct trace_reader *tr, char *err, size_t errlen)
{
	if (tr->records)
		return 0;
	if (tr->skipped)
		snprintf(err, errlen, "%.900s: no requests in the trace: all %llu lines were skipped; "
				      "the first: %.1000s",
			 tr->path, (unsigned long long)tr->skipped, tr->first_bad);
	else
		snprintf(err, errlen, "%.900s: no requests in the trace (empty file?)", tr->path);
	return -1;
}

int trace_next(struct trace_reader *tr, struct trace_rec *rec, char *err, size_t errlen)
{
	for (;;) {
		size_t len = 0;
		int got = read_line(tr, &len);
		if (got == 0)
			return 0;
		if (got == -1)
			return bad(err, errlen, tr, "out of memory");
		int rc;
		if (got == -2) {
			rc = bad(err, errlen, tr, "binary data (a NUL byte); expected a text line");
		} else if (len == 0 || strspn(tr->buf, " \t") == len) {
			continue; /* blank lines separate nothing */
		} else if (tr->format == TRACE_AZURE && tr->line == 1) {
			if (strcmp(tr->buf, "TIMESTAMP,ContextTokens,GeneratedTokens") == 0)
				continue;
			rc = bad(err, errlen, tr,
				 "expected the header TIMESTAMP,ContextTokens,GeneratedTokens");
		} else {
			rc = parse_line(tr, len, rec, err, errlen);
			if (rc == 0 && tr->format == TRACE_KVSIM)
				rc = check_turn(tr, rec, err, errlen);
		}
		if (rc == 0) {
			tr->records++;
			return 1;
		}
		if (!tr->skip_bad)
			return -1;
		if (tr->skipped++ == 0)
			snprintf(tr->first_bad, sizeof tr->first_bad, "%s", err);
	}
}

void trace_write_kvsim(FILE *f, const struct request *r, uint32_t block_tokens, int64_t after_ns)
{
	fprintf(f, "{\"session\": %llu, \"turn\": %u, ", (unsigned long long)r->session, r->turn);
	if (r->turn == 1)
		fprintf(f, "\"arrival_s\": %.9f, ", (double)r->arrival_ns * 1e-9);
	else
		fprintf(f, "\"after_s\": %.9f, ", (double)after_ns * 1e-9);
	fprintf(f,
		"\"last_turn\": %s, \"prompt_tokens\": %u, \"output_tokens\": %u, "
		"\"block_tokens\": %u, \"shared_blocks\": %u, \"blocks\": [",
		r->last_turn ? "true" : "false", r->prompt_tokens, r->output_tokens, block_tokens,
		r->n_shared);
	for (uint32_t i = 0; i < r->n_hashes; i++)
		fprintf(f, "%s\"%016llx\"", i ? ", " : "", (unsigned long long)r->hashes[i]);
	fputs("]}\n", f);
}
