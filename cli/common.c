/* common: option parsing over the commands' tables, their usage text, scenario loading. */
#define _GNU_SOURCE
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "policies/policy.h"
#include "sim/sim.h"

#define LINE_WIDTH 80
#define LIST_COLUMN 28 /* where kvsim --help's summaries start */
#define OPTION_COLUMN_MAX 28 /* where an option's help starts, at the most */
#define LONG_BASE 256 /* getopt_long's val for table row i: LONG_BASE + i */

void cli_begin(struct cli_args *a, const struct cli_ctx *cx, int argc, char **argv)
{
	memset(a, 0, sizeof *a);
	a->cx = cx;
	a->argc = argc;
	a->argv = argv;
	/* '-': positionals come back in order (whatever POSIXLY_CORRECT says);
	 * ':': a missing value is told apart from an unknown option. */
	char *s = a->so;
	*s++ = '-';
	*s++ = ':';
	int n = 0;
	for (const struct cli_opt *o = cx->cmd->opts; o && o->name; o++, n++) {
		if (n == CLI_MAX_OPTS) { /* CLI_TABLE_FITS catches it at compile time */
			fprintf(stderr, "kvsim %s: more than %d options in its table\n", cx->cmd->name,
				CLI_MAX_OPTS);
			abort();
		}
		a->lo[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					   LONG_BASE + n};
		if (o->short_name) {
			*s++ = o->short_name;
			if (o->arg)
				*s++ = ':';
		}
	}
	/* --help's val says which row it is, like the others: "--help=x" then
	 * comes back as a long option with a value (-h comes back as 'h'). */
	a->lo[n] = (struct option){"help", no_argument, NULL, LONG_BASE + n};
	*s++ = 'h';
	*s = 0;
	/* Start afresh, with this command's tables: glibc and musl reinitialise
	 * on optind = 0 (and reread the '-' and ':' of so); the BSDs and macOS
	 * take optreset. */
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || \
    defined(__OpenBSD__) || defined(__DragonFly__)
	optreset = 1;
	optind = 1;
#else
	optind = 0;
#endif
	opterr = 0;
}

static int add_pos(struct cli_args *a, const char *arg)
{
	if (a->n_pos == CLI_MAX_POS) {
		cli_misuse(a->cx->cmd, "too many arguments (%s)", arg);
		return -1;
	}
	a->pos[a->n_pos++] = arg;
	return 0;
}

static const struct cli_opt *find_long(const struct cli_cmd *cmd, const char *name, size_t len)
{
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len))
			return o;
	return NULL;
}

/* Appends item to the list in buf, ", " between items (cut when full). */
static void add_item(char *buf, size_t len, const char *fmt, const char *item)
{
	size_t used = strlen(buf);
	if (used)
		used += (size_t)snprintf(buf + used, len - used, ", ");
	if (used < len)
		snprintf(buf + used, len - used, fmt, item);
}

/* An option this command lacks: an ambiguous abbreviation, another
 * command's option, or unknown. */
static void report_unknown(const struct cli_args *a, const char *word)
{
	const struct cli_cmd *cmd = a->cx->cmd;
	int len = (int)strcspn(word, "=");
	const char *name = word + 2;
	size_t name_len = (size_t)len - 2;
	char list[512] = "";
	if (word[0] == '-' && word[1] == '-' && len == 2) { /* "--=x": no name at all */
		cli_misuse(cmd, "unknown option %s", word);
		return;
	}
	if (len < 3 || word[0] != '-' || word[1] != '-') {
		cli_misuse(cmd, "unknown option %.*s", len, word);
		return;
	}
	int n = 0;
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		if (!strncmp(o->name, name, name_len)) {
			add_item(list, sizeof list, "--%s", o->name);
			n++;
		}
	}
	if (n > 1) {
		cli_misuse(cmd, "ambiguous option %.*s (%s)", len, word, list);
		return;
	}
	list[0] = 0;
	for (size_t i = 0; i < a->cx->n_all; i++) {
		const struct cli_cmd *one[2];
		for (const struct cli_cmd *const *c = cli_leaves(a->cx->all[i], one); *c; c++)
			if (*c != cmd && find_long(*c, name, name_len))
				add_item(list, sizeof list, "'kvsim %s'", (*c)->name);
	}
	if (list[0])
		cli_misuse(cmd, "%.*s belongs to %s", len, word, list);
	else
		cli_misuse(cmd, "unknown option %.*s", len, word);
}

/* The option's value is a file or folder name. */
static int is_path(const struct cli_opt *o)
{
	return o->complete && (!strcmp(o->complete, "@file") || !strcmp(o->complete, "@dir"));
}

int cli_next(struct cli_args *a, const char **val)
{
	const struct cli_cmd *cmd = a->cx->cmd;
	for (;;) {
		int c = getopt_long(a->argc, a->argv, a->so, a->lo, NULL);
		if (c == -1) { /* the end, or "--": what follows is positional */
			for (; optind < a->argc; optind++)
				if (add_pos(a, a->argv[optind]))
					return CLI_BAD;
			return CLI_END;
		}
		if (c == 1) {
			if (add_pos(a, optarg))
				return CLI_BAD;
			continue;
		}
		const struct cli_opt *o = NULL;
		if (c >= LONG_BASE && cmd->opts && cmd->opts[c - LONG_BASE].name)
			o = &cmd->opts[c - LONG_BASE];
		for (const struct cli_opt *p = cmd->opts; !o && c < LONG_BASE && p && p->name; p++)
			if (p->short_name && p->short_name == c)
				o = p;
		if (o && o->arg && !optarg[0] && is_path(o)) {
			cli_misuse(cmd, "--%s: expected a %s, got an empty value", o->name,
				   strcmp(o->complete, "@dir") ? "file" : "folder");
			return CLI_BAD;
		}
		if (o) {
			*val = o->arg ? optarg : NULL;
			return o->id;
		}
		if (c == 'h' || (c >= LONG_BASE && !strcmp(a->lo[c - LONG_BASE].name, "help"))) {
			cli_usage(stdout, cmd);
			return CLI_HELP;
		}
		if (c == ':' && optopt >= LONG_BASE)
			cli_misuse(cmd, "--%s needs a value", a->lo[optopt - LONG_BASE].name);
		else if (c == ':')
			cli_misuse(cmd, "-%c needs a value", optopt);
		else if (optopt >= LONG_BASE)
			cli_misuse(cmd, "--%s takes no value", a->lo[optopt - LONG_BASE].name);
		else if (optopt)
			cli_misuse(cmd, "unknown option -%c", optopt);
		else
			report_unknown(a, a->argv[optind - 1]);
		return CLI_BAD;
	}
}

int cli_parse_positionals(const struct cli_ctx *cx, int argc, char **argv, struct cli_args *a)
{
	const char *v;
	cli_begin(a, cx, argc, argv);
	return cli_next(a, &v); /* no option of its own: the end */
}

int cli_end_code(int end)
{
	return end == CLI_HELP ? CLI_OK : CLI_USAGE;
}

/* Writes unit (one word, or a bracketed option) after a space, or at
 * column indent of a new line when it would pass LINE_WIDTH; at column
 * indent itself, without the space. */
static void put_unit(FILE *f, const char *unit, size_t len, int *col, int indent)
{
	if (*col != indent && *col + 1 + (int)len > LINE_WIDTH) {
		fprintf(f, "\n%*s", indent, "");
		*col = indent;
	}
	if (*col != indent) {
		fputc(' ', f);
		(*col)++;
	}
	fwrite(unit, 1, len, f);
	*col += (int)len;
}

/* Writes text word by word (put_unit). */
static void put_text(FILE *f, const char *text, int *col, int indent)
{
	for (const char *p = text; *p;) {
		p += strspn(p, " ");
		size_t n = strcspn(p, " ");
		if (n)
			put_unit(f, p, n, col, indent);
		p += n;
	}
}

/* The synopsis: name, positionals, every option (by its long name). */
static void put_synopsis(FILE *f, const struct cli_cmd *cmd)
{
	int col = fprintf(f, "usage: kvsim %s", cmd->name), indent = col + 1;
	if (cmd->args && cmd->args[0])
		put_unit(f, cmd->args, strlen(cmd->args), &col, indent);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		char u[128];
		int req = o->flags & CLI_REQUIRED;
		snprintf(u, sizeof u, "%s--%s%s%s%s%s", req ? "" : "[", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "", req ? "" : "]", o->flags & CLI_REPEAT ? "..." : "");
		put_unit(f, u, strlen(u), &col, indent);
	}
	fputc('\n', f);
	for (const char *p = cmd->also; p && *p;) {
		size_t n = strcspn(p, "\n");
		fprintf(f, "       %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

/* "  -o, --out DIR" or "      --seed N" into buf; returns its length. */
static int option_left(char *buf, size_t len, const char *name, char short_name, const char *arg)
{
	char s[8] = "    ";
	if (short_name)
		snprintf(s, sizeof s, "-%c, ", short_name);
	return snprintf(buf, len, "  %s--%s%s%s", s, name, arg ? " " : "", arg ? arg : "");
}

static void put_option(FILE *f, const char *name, char short_name, const char *arg,
		       const char *help, int width)
{
	char left[128];
	int col = option_left(left, sizeof left, name, short_name, arg);
	fputs(left, f);
	if (col + 2 > width) {
		fputc('\n', f);
		col = 0;
	}
	fprintf(f, "%*s", width - col, "");
	col = width;
	put_text(f, help, &col, width);
	fputc('\n', f);
}

const struct cli_cmd *const *cli_leaves(const struct cli_cmd *cmd, const struct cli_cmd *one[2])
{
	if (cmd->subs)
		return cmd->subs;
	one[0] = cmd;
	one[1] = NULL;
	return one;
}

/* One line per command: its name (less skip characters), its arguments,
 * its summary from LIST_COLUMN. */
static void put_list(FILE *f, const struct cli_cmd *const *cmds, size_t skip)
{
	for (; *cmds; cmds++) {
		const char *args = (*cmds)->args ? (*cmds)->args : "";
		char left[128];
		int col = snprintf(left, sizeof left, "  %s%s%s", (*cmds)->name + skip,
				   args[0] ? " " : "", args);
		fprintf(f, "%s%*s", left, col < LIST_COLUMN ? LIST_COLUMN - col : 1, "");
		col = col < LIST_COLUMN ? LIST_COLUMN : col + 1;
		put_text(f, (*cmds)->summary, &col, LIST_COLUMN);
		fputc('\n', f);
	}
}

void cli_usage(FILE *f, const struct cli_cmd *cmd)
{
	if (cmd->subs) {
		fprintf(f, "usage: kvsim %s SUBCOMMAND [ARGS]\n\n%s%ssubcommands:\n", cmd->name,
			cmd->about ? cmd->about : "", cmd->about ? "\n" : "");
		put_list(f, cmd->subs, strlen(cmd->name) + 1);
		fprintf(f, "\n'kvsim %s SUBCOMMAND --help' describes each.\n", cmd->name);
		return;
	}
	put_synopsis(f, cmd);
	if (cmd->about)
		fprintf(f, "\n%s", cmd->about);
	int width = 14;
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		char left[128];
		int n = option_left(left, sizeof left, o->name, o->short_name, o->arg) + 2;
		if (n > width && n <= OPTION_COLUMN_MAX)
			width = n;
	}
	fputs("\noptions:\n", f);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
		put_option(f, o->name, o->short_name, o->arg, o->help, width);
	put_option(f, "help", 'h', NULL, "print this help", width);
}

void cli_list_commands(FILE *f, const struct cli_cmd *const *all, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct cli_cmd *one[2];
		put_list(f, cli_leaves(all[i], one), 0);
	}
}

int cli_misuse(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kvsim %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'kvsim %s --help'.\n", cmd->name);
	return CLI_USAGE;
}

int cli_run_sub(const struct cli_ctx *cx, int argc, char **argv)
{
	const struct cli_cmd *cmd = cx->cmd;
	if (argc < 2) {
		cli_usage(stderr, cmd);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		cli_usage(stdout, cmd);
		return CLI_OK;
	}
	size_t skip = strlen(cmd->name) + 1;
	for (const struct cli_cmd *const *s = cmd->subs; *s; s++) {
		if (!strcmp((*s)->name + skip, argv[1])) {
			struct cli_ctx sub = {*s, cx->all, cx->n_all};
			return (*s)->run(&sub, argc - 1, argv + 1);
		}
	}
	return cli_misuse(cmd, "unknown subcommand \"%s\"", argv[1]);
}

int cli_common_opt(const struct cli_cmd *cmd, struct cli_common *o, int id, const char *val)
{
	switch (id) {
	case OPT_POLICY: o->policy = val; return 1;
	case OPT_POLICIES: o->policies = val; return 1;
	case OPT_OUT: o->out = val; return 1;
	case OPT_CATALOG: o->catalog = val; return 1;
	case OPT_TRACE_EVENTS: o->trace_events = val; return 1;
	case OPT_QUIET: o->quiet = 1; return 1;
	case OPT_NO_PERF: o->no_perf = 1; return 1;
	case OPT_AUDIT: o->audit = 1; return 1;
	case OPT_PLOT: o->plot = 1; return 1;
	case OPT_REPORT: o->plot = o->report = 1; return 1;
	case OPT_SEED:
		/* 2^53: every seed survives the JSON number it becomes */
		if (cli_parse_int(val, 0, 1LL << 53, &o->seed)) {
			cli_bad_value(cmd, "--seed", "an integer in [0, 2^53]", val);
			return -1;
		}
		o->has_seed = 1;
		return 1;
	case OPT_SET:
		if (o->n_sets == CLI_MAX_SETS) {
			cli_misuse(cmd, "too many --set options (at most %d)", CLI_MAX_SETS);
			return -1;
		}
		o->sets[o->n_sets++] = val;
		return 1;
	}
	return 0;
}

int cli_parse_common(const struct cli_ctx *cx, int argc, char **argv, struct cli_common *o)
{
	struct cli_args a;
	const char *v;
	int id;
	memset(o, 0, sizeof *o);
	cli_begin(&a, cx, argc, argv);
	while ((id = cli_next(&a, &v)) > 0)
		if (cli_common_opt(cx->cmd, o, id, v) <= 0)
			return CLI_BAD;
	return id == CLI_END ? cli_scenario_arg(cx, &a, o) : id;
}

int cli_scenario_arg(const struct cli_ctx *cx, const struct cli_args *a, struct cli_common *o)
{
	if (a->n_pos > 1) {
		cli_misuse(cx->cmd, "more than one scenario given (%s, %s)", a->pos[0], a->pos[1]);
		return CLI_BAD;
	}
	o->scenario = a->n_pos ? a->pos[0] : NULL;
	return CLI_END;
}

int cli_select_policy(cJSON *root, const char *name, char *err, size_t errlen)
{
	if (!pol_find(name)) {
		char known[512];
		pol_names(known, sizeof known);
		snprintf(err, errlen, "--policy: unknown policy \"%s\" (known: %s)", name,
			 known);
		return -1;
	}
	cJSON *router = cJSON_GetObjectItemCaseSensitive(root, "router");
	if (router && !cJSON_IsObject(router)) {
		snprintf(err, errlen, "router: expected an object");
		return -1;
	}
	if (!router)
		router = cJSON_AddObjectToObject(root, "router");
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(router, "policy");
	const char *own = cJSON_IsString(cur) ? cur->valuestring : "session_affinity";
	/* router.params is router.policy_params.<router.policy> (whose own
	 * keys win): moved there, it is still checked, and P's parameters
	 * come from router.policy_params.P (the loader applies them). */
	cJSON *params = strcmp(own, name) ? cJSON_DetachItemFromObjectCaseSensitive(router, "params")
					  : NULL;
	if (params) {
		cJSON *pp = cJSON_GetObjectItemCaseSensitive(router, "policy_params");
		if (!pp)
			pp = cJSON_AddObjectToObject(router, "policy_params");
		cJSON *mine = cJSON_IsObject(pp) ? cJSON_GetObjectItemCaseSensitive(pp, own) : NULL;
		if (!cJSON_IsObject(pp) || (mine && !cJSON_IsObject(mine)) || !cJSON_IsObject(params)) {
			cJSON_Delete(params); /* the loader reports the wrong type */
		} else if (!mine) {
			cJSON_AddItemToObject(pp, own, params);
		} else {
			for (cJSON *c = params->child; c; c = c->next) {
				cJSON *have = cJSON_GetObjectItemCaseSensitive(mine, c->string);
				if (!have) {
					cJSON_AddItemToObject(mine, c->string, cJSON_Duplicate(c, 1));
				} else if (mech_is_key(c->string) && cJSON_IsObject(have) &&
					   cJSON_IsObject(c)) {
					/* a mechanism's object (health) merges field by field */
					for (cJSON *f = c->child; f; f = f->next)
						if (!cJSON_GetObjectItemCaseSensitive(have, f->string))
							cJSON_AddItemToObject(have, f->string,
									      cJSON_Duplicate(f, 1));
				}
			}
			cJSON_Delete(params);
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(router, "policy");
	cJSON_AddStringToObject(router, "policy", name);
	return 0;
}

int cli_load_tree(const struct cli_common *o, cJSON **root, char *err, size_t errlen)
{
	if (cfg_read_json(o->scenario, root, err, errlen))
		return -1;
	for (int i = 0; i < o->n_sets; i++) {
		if (cfg_apply_set(*root, o->sets[i], err, errlen))
			goto fail;
	}
	if (o->has_seed) {
		cJSON_DeleteItemFromObjectCaseSensitive(*root, "seed");
		cJSON_AddNumberToObject(*root, "seed", (double)o->seed);
	}
	return 0;
fail:
	cJSON_Delete(*root);
	*root = NULL;
	return -1;
}

/* A --set of router.params (or a key under it) given with a --policy that
 * is not router.policy: those params are router.policy's, so the policy
 * named would never read them. 0, or -1 with err. */
static int params_for_another_policy(const struct cli_common *o, const cJSON *root, char *err,
				     size_t errlen)
{
	const cJSON *router = cJSON_GetObjectItemCaseSensitive(root, "router");
	const cJSON *cur = cJSON_IsObject(router) ? cJSON_GetObjectItemCaseSensitive(router, "policy")
						  : NULL;
	const char *own = cJSON_IsString(cur) ? cur->valuestring : "session_affinity";
	if (!o->policy || !strcmp(o->policy, own))
		return 0;
	for (int i = 0; i < o->n_sets; i++) {
		const char *a = o->sets[i];
		if (strncmp(a, "router.params", 13) || !strchr("=.[", a[13]))
			continue;
		const char *key = a[13] == '.' ? a + 14 : "KEY=VALUE";
		snprintf(err, errlen,
			 "--set %s: router.params are the params of router.policy (%s), and --policy "
			 "runs %s; set router.policy_params.%s.%s instead",
			 a, own, o->policy, o->policy, key);
		return -1;
	}
	return 0;
}

cJSON *cli_load_tree_with_policy(const struct cli_common *o)
{
	cJSON *root = NULL;
	char err[1024];
	if (cli_load_tree(o, &root, err, sizeof err) ||
	    params_for_another_policy(o, root, err, sizeof err) ||
	    (o->policy && cli_select_policy(root, o->policy, err, sizeof err))) {
		fprintf(stderr, "kvsim: %s\n", err);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int cli_load_scenario(const struct cli_common *o, const cJSON *root, struct scenario *s)
{
	char err[1024];
	int bad = cfg_scenario_load_from(s, root, o->catalog, o->scenario, err, sizeof err);
	if (!bad) {
		bad = sim_validate(s, err, sizeof err);
		if (bad)
			cfg_scenario_free(s);
	}
	if (bad) {
		fprintf(stderr, "kvsim: %s: %s\n",
			o->scenario ? o->scenario : "(embedded default scenario)", err);
		return -1;
	}
	return 0;
}

int cli_load_from_opts(const struct cli_common *o, struct scenario *s)
{
	cJSON *root = cli_load_tree_with_policy(o);
	if (!root)
		return -1;
	int bad = cli_load_scenario(o, root, s);
	cJSON_Delete(root);
	return bad;
}

int cli_list(const struct cli_cmd *cmd, const char *opt, const char *what, const char *val,
	     char *buf, size_t len, const char **items, int cap)
{
	if (strlen(val) >= len) {
		cli_misuse(cmd, "%s: the list is too long (at most %zu characters)", opt, len - 1);
		return -1;
	}
	memcpy(buf, val, strlen(val) + 1);
	int n = 0;
	for (char *p = buf, *next; p; p = next) {
		char *comma = strchr(p, ',');
		next = comma ? comma + 1 : NULL;
		if (comma)
			*comma = 0;
		while (isblank((unsigned char)*p))
			p++;
		size_t k = strlen(p);
		while (k && isblank((unsigned char)p[k - 1]))
			p[--k] = 0;
		if (!k)
			continue;
		if (n == cap) {
			cli_misuse(cmd, "%s: too many %s (at most %d)", opt, what, cap);
			return -1;
		}
		items[n++] = p;
	}
	if (n == 0)
		cli_misuse(cmd, "%s: expected a comma-separated list of %s", opt, what);
	return n ? n : -1;
}

int cli_parse_int(const char *val, long long min, long long max, long long *out)
{
	const char *d = val + (val[0] == '-' && min < 0);
	if (!isdigit((unsigned char)*d))
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(val, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_num(const char *val, double *out)
{
	if (!val[0] || isspace((unsigned char)val[0]))
		return -1;
	char *end;
	double v = strtod(val, &end);
	if (*end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int cli_bad_value(const struct cli_cmd *cmd, const char *opt, const char *what, const char *val)
{
	if (!val[0])
		return cli_misuse(cmd, "%s: expected %s, got an empty value", opt, what);
	return cli_misuse(cmd, "%s: expected %s, got \"%s\"", opt, what, val);
}
