/* traceimport: a chat log (CSV, one row a turn) into a kvsim JSONL trace (`kvsim trace import`). */
#include "workloads/traceimport.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/afile.h"
#include "config/cfg.h"
#include "config/cluster_cfg.h"
#include "sim/request.h"
#include "workloads/trace.h"

enum { COL_TS, COL_SESSION, COL_TURN, COL_PROMPT, COL_OUTPUT, N_COLS };
static const char *const col_names[N_COLS] = {"timestamp_s", "session_id", "turn", "prompt_tokens",
					      "output_tokens"};
#define MAX_TOKENS 100000000LL /* as the trace readers (workloads/trace.c) */

struct row {
	uint64_t line;
	double ts;
	char *session; /* owned */
	long long turn;
	uint32_t prompt, output;
	/* set once sessions are known: the kvsim session and turn, whether it
	 * is the session's last, its time in ns from the log's first row, and
	 * the row of the session's turn before it (NULL: none) */
	uint64_t sess_no;
	uint32_t turn_no;
	int last;
	int64_t ns;
	const struct row *prev;
};

struct log {
	const char *path;
	struct row *rows;
	size_t n, cap;
	int col[N_COLS]; /* the header's column of each field */
	int n_header;
	/* the first cross-row error (the least line), if any */
	uint64_t err_line;
	char err[600];
};

static int fail(char *err, size_t errlen, const char *path, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(char *err, size_t errlen, const char *path, uint64_t line, const char *fmt, ...)
{
	char what[500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%.900s:%llu: %s", path, (unsigned long long)line, what);
	return -1;
}

/* Splits line at commas into at most max fields, each trimmed of blanks
 * and of one pair of double quotes (no quoted commas). Their count. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line; n < max;) {
		char *c = strchr(p, ',');
		if (c)
			*c = 0;
		p += strspn(p, " \t");
		size_t len = strlen(p);
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			p[--len] = 0;
		if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
			p[len - 1] = 0;
			p++;
		}
		f[n++] = p;
		if (!c)
			break;
		p = c + 1;
	}
	return n;
}

static int parse_header(struct log *lg, char *line, struct timport_result *res, char *err,
			size_t errlen)
{
	char *f[64];
	if (!strncmp(line, "\xef\xbb\xbf", 3)) /* a UTF-8 byte order mark */
		line += 3;
	lg->n_header = split(line, f, 64);
	for (int c = 0; c < N_COLS; c++)
		lg->col[c] = -1;
	for (int i = 0; i < lg->n_header; i++) {
		int c = 0;
		while (c < N_COLS && strcmp(f[i], col_names[c]))
			c++;
		if (c == N_COLS) {
			size_t len = strlen(res->extra_columns);
			snprintf(res->extra_columns + len, sizeof res->extra_columns - len, "%s%.40s",
				 len ? "," : "", f[i]);
			continue;
		}
		if (lg->col[c] >= 0)
			return fail(err, errlen, lg->path, 1, "column \"%s\" appears twice in the header",
				    col_names[c]);
		lg->col[c] = i;
	}
	for (int c = 0; c < N_COLS; c++)
		if (lg->col[c] < 0)
			return fail(err, errlen, lg->path, 1,
				    "missing column \"%s\" (the header must name timestamp_s, "
				    "session_id, turn, prompt_tokens and output_tokens, in any order)",
				    col_names[c]);
	return 0;
}

/* An integer field in [lo, hi]; what says what is wrong. */
static int get_int(const char *s, long long lo, long long hi, long long *v, const char **what)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (!*s || *end || errno) {
		*what = "expected an integer";
		return -1;
	}
	if (x < lo) {
		*what = x < 0 ? "expected a count of tokens, got a negative number" : "expected at least 1";
		return -1;
	}
	if (x > hi) {
		*what = "too large";
		return -1;
	}
	*v = x;
	return 0;
}

static int parse_row(struct log *lg, char *line, uint64_t ln, char *err, size_t errlen)
{
	char *f[64];
	int n = split(line, f, 64);
	if (n < lg->n_header)
		return fail(err, errlen, lg->path, ln, "%d fields; the header has %d columns", n,
			    lg->n_header);
	if (lg->n == lg->cap) {
		size_t nc = lg->cap ? lg->cap * 2 : 256;
		struct row *nr = realloc(lg->rows, nc * sizeof *nr);
		if (!nr)
			return fail(err, errlen, lg->path, ln, "out of memory");
		lg->rows = nr;
		lg->cap = nc;
	}
	struct row *r = &lg->rows[lg->n];
	memset(r, 0, sizeof *r);
	r->line = ln;
	const char *ts = f[lg->col[COL_TS]], *what = NULL;
	char *end;
	r->ts = strtod(ts, &end);
	if (!*ts || *end || !isfinite(r->ts))
		return fail(err, errlen, lg->path, ln, "timestamp_s \"%.40s\": expected a number of "
						       "seconds", ts);
	const char *sid = f[lg->col[COL_SESSION]];
	if (!*sid)
		return fail(err, errlen, lg->path, ln, "session_id is empty");
	long long v[3];
	static const int cols[3] = {COL_TURN, COL_PROMPT, COL_OUTPUT};
	for (int i = 0; i < 3; i++) {
		const char *s = f[lg->col[cols[i]]];
		if (get_int(s, i == 0 ? 0 : 1, i == 0 ? 1000000000LL : MAX_TOKENS, &v[i], &what))
			return fail(err, errlen, lg->path, ln, "%s \"%.40s\": %s%s", col_names[cols[i]],
				    s, what, i == 0 ? " (0 to 1e9)" : " (1 to 1e8)");
	}
	r->turn = v[0];
	r->prompt = (uint32_t)v[1];
	r->output = (uint32_t)v[2];
	if (!(r->session = strdup(sid)))
		return fail(err, errlen, lg->path, ln, "out of memory");
	lg->n++;
	return 0;
}

static int read_log(struct log *lg, struct timport_result *res, char *err, size_t errlen)
{
	FILE *f = fopen(lg->path, "rb");
	if (!f) {
		snprintf(err, errlen, "%.900s: %s", lg->path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t cap = 0;
	ssize_t got;
	uint64_t ln = 0;
	int rc = 0, header = 0;
	while (rc == 0 && (got = getline(&buf, &cap, f)) >= 0) {
		ln++;
		size_t len = (size_t)got;
		if (memchr(buf, 0, len)) {
			rc = fail(err, errlen, lg->path, ln, "binary data (a NUL byte); expected a CSV "
							     "line");
			break;
		}
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = 0;
		if (strspn(buf, " \t") == len)
			continue; /* blank lines separate nothing */
		if (!header) {
			header = 1;
			rc = parse_header(lg, buf, res, err, errlen);
		} else {
			rc = parse_row(lg, buf, ln, err, errlen);
		}
	}
	free(buf);
	fclose(f);
	if (rc == 0 && !lg->n) {
		snprintf(err, errlen, "%.900s: no rows after the header (empty file?)", lg->path);
		rc = -1;
	}
	return rc;
}

/* Keeps the cross-row error of the least line. */
static void cross_error(struct log *lg, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cross_error(struct log *lg, uint64_t line, const char *fmt, ...)
{
	if (lg->err_line && lg->err_line <= line)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lg->err, sizeof lg->err, fmt, ap);
	va_end(ap);
	lg->err_line = line;
}

static int by_session(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	int c = strcmp(x->session, y->session);
	if (c)
		return c;
	if (x->turn != y->turn)
		return x->turn < y->turn ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Output order: time, then session, then turn (a session's turns keep
 * their order on equal times). */
static int by_time(const void *a, const void *b)
{
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	if (x->sess_no != y->sess_no)
		return x->sess_no < y->sess_no ? -1 : 1;
	return x->turn_no < y->turn_no ? -1 : x->turn_no > y->turn_no;
}

struct sess {
	double first_ts;
	uint64_t first_line;
	size_t start, len; /* its rows in the by-session order */
};

static int by_first_turn(const void *a, const void *b)
{
	const struct sess *x = a, *y = b;
	if (x->first_ts != y->first_ts)
		return x->first_ts < y->first_ts ? -1 : 1;
	return x->first_line < y->first_line ? -1 : x->first_line > y->first_line;
}

static void warn_at(uint64_t *count, uint64_t *first, uint64_t line)
{
	if (!*count || line < *first)
		*first = line;
	(*count)++;
}

/* One session's rows at[0..n), in turn order: errors and warnings. */
static void check_session(struct log *lg, struct row *const *at, size_t n,
			  struct timport_result *res)
{
	for (size_t k = 1; k < n; k++) {
		const struct row *p = at[k - 1], *r = at[k];
		if (r->turn == p->turn)
			cross_error(lg, r->line, "session \"%.100s\" turn %lld appears twice (line %llu "
						 "too)", r->session, r->turn,
				    (unsigned long long)p->line);
		else if (r->ts < p->ts)
			cross_error(lg, r->line,
				    "session \"%.100s\" turn %lld at %.9g s comes before its turn %lld "
				    "(line %llu) at %.9g s",
				    r->session, r->turn, r->ts, p->turn, (unsigned long long)p->line,
				    p->ts);
		if (r->turn != p->turn + 1)
			warn_at(&res->gaps, &res->gap_line, r->line);
		if ((uint64_t)r->prompt < (uint64_t)p->prompt + p->output)
			warn_at(&res->shrunk, &res->shrunk_line, r->line);
	}
}

/* Sessions and their numbers, turns, times; 0 or -1 with err. */
static int number_sessions(struct log *lg, struct timport_result *res, char *err, size_t errlen)
{
	size_t n = lg->n, ns = 0;
	struct row **idx = malloc(n * sizeof *idx);
	struct sess *ss = malloc(n * sizeof *ss);
	int rc = -1;
	if (!idx || !ss) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	double t0 = lg->rows[0].ts;
	for (size_t i = 0; i < n; i++) {
		idx[i] = &lg->rows[i];
		if (lg->rows[i].ts < t0)
			t0 = lg->rows[i].ts;
	}
	qsort(idx, n, sizeof *idx, by_session);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && !strcmp(idx[j]->session, idx[i]->session))
			j++;
		check_session(lg, idx + i, j - i, res);
		const struct row *first = idx[i];
		ss[ns++] = (struct sess){first->ts, first->line, i, j - i};
		if (j - i > res->max_turns)
			res->max_turns = j - i;
		i = j;
	}
	if (lg->err_line) {
		fail(err, errlen, lg->path, lg->err_line, "%s", lg->err);
		goto done;
	}
	qsort(ss, ns, sizeof *ss, by_first_turn);
	for (size_t s = 0; s < ns; s++)
		for (size_t k = 0; k < ss[s].len; k++) {
			struct row *r = idx[ss[s].start + k];
			r->sess_no = s + 1;
			r->turn_no = (uint32_t)k + 1;
			r->last = k + 1 == ss[s].len;
			r->prev = k ? idx[ss[s].start + k - 1] : NULL;
			if (cfg_time_ns(r->ts - t0, 1e9, &r->ns)) {
				fail(err, errlen, lg->path, r->line,
				     "timestamp_s %.16g is %.16g s after the log's first; expected at "
				     "most %.0f s (about 126 years)",
				     r->ts, r->ts - t0, (double)CFG_TIME_MAX_NS * 1e-9);
				goto done;
			}
		}
	res->sessions = ns;
	res->requests = n;
	rc = 0;
done:
	free(idx);
	free(ss);
	return rc;
}

/* The per-session block ids of its latest turn written. */
struct ids {
	uint64_t *id;
	uint32_t n;
};

/* Writes the rows in time order to f. 0, or -1 out of memory. */
static int write_rows(struct log *lg, FILE *f, uint32_t B, struct timport_result *res)
{
	size_t n = lg->n;
	struct row **order = malloc(n * sizeof *order);
	struct ids *last = calloc(res->sessions + 1, sizeof *last);
	int rc = -1;
	if (!order || !last)
		goto done;
	for (size_t i = 0; i < n; i++)
		order[i] = &lg->rows[i];
	qsort(order, n, sizeof *order, by_time);
	uint64_t next_id = 1;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = order[i];
		struct ids *s = &last[r->sess_no];
		uint32_t nb = (uint32_t)(((uint64_t)r->prompt + r->output) / B);
		uint32_t share = r->prompt / B < s->n ? r->prompt / B : s->n;
		uint64_t *id = malloc((nb ? nb : 1) * sizeof *id);
		if (!id)
			goto done;
		if (share)
			memcpy(id, s->id, share * sizeof *id);
		for (uint32_t b = share; b < nb; b++)
			id[b] = next_id++;
		free(s->id);
		s->id = id;
		s->n = nb;
		res->blocks += nb;
		res->prompt_blocks += r->prompt / B;
		res->shared_blocks += share;
		struct request q;
		memset(&q, 0, sizeof q);
		q.session = r->sess_no;
		q.turn = r->turn_no;
		q.last_turn = r->last;
		q.arrival_ns = r->ns;
		q.prompt_tokens = r->prompt;
		q.output_tokens = r->output;
		q.hashes = id;
		q.n_hashes = nb;
		trace_write_kvsim(f, &q, B, r->prev ? r->ns - r->prev->ns : 0);
	}
	res->fresh_blocks = next_id - 1;
	rc = 0;
done:
	if (last)
		for (uint64_t s = 0; s <= res->sessions; s++)
			free(last[s].id);
	free(last);
	free(order);
	return rc;
}

int timport_run(const char *in, const char *out, uint32_t block_tokens, struct timport_result *res,
		char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	res->block_tokens = block_tokens ? block_tokens : CFG_KV_BLOCK_TOKENS;
	struct log lg = {.path = in};
	struct afile f = {0};
	int rc = -1;
	if (read_log(&lg, res, err, errlen) || number_sessions(&lg, res, err, errlen))
		goto done;
	if (afile_open(&f, out, err, errlen))
		goto done;
	if (write_rows(&lg, f.f, res->block_tokens, res)) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	if (afile_commit(&f, err, errlen))
		goto done;
	rc = 0;
done:
	afile_discard(&f);
	for (size_t i = 0; i < lg.n; i++)
		free(lg.rows[i].session);
	free(lg.rows);
	return rc;
}
