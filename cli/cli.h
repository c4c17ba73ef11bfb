/* cli: what the commands share: their tables, GNU option parsing, usage, scenario loading. */
#ifndef KVSIM_CLI_H
#define KVSIM_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

struct cJSON;
struct scenario;
struct met_summary;

/* Exit codes of every command (docs/design.md, section 7). */
enum cli_exit { CLI_OK = 0, CLI_NOT_MET = 1, CLI_USAGE = 2, CLI_INTERNAL = 3 };

/* cli_opt.flags: how the usage line shows the option. */
enum { CLI_REQUIRED = 1, CLI_REPEAT = 2 };

/* One option of a command. A command's table of these is the one place the
 * option is written: it drives getopt_long (--name VALUE, --name=VALUE, -x
 * VALUE, -xVALUE), the usage line, the option list of --help and the bash
 * completion. A table ends with a row whose name is NULL. */
struct cli_opt {
	int id;            /* what cli_next returns for it: > 0, unique in the table */
	const char *name;  /* the long name, without the dashes */
	char short_name;   /* the one-letter alias, 0 for none */
	const char *arg;   /* the value's name in the usage ("DIR"); NULL: a flag */
	const char *help;  /* what it does: one paragraph, wrapped when printed */
	/* How completion offers its value: "@file", "@dir", "@policy", "@gpu",
	 * "@model", "@profile", or words ("bf16 fp8"); NULL: nothing to offer.
	 * "@file" and "@dir" also tell the parser that the value is a path,
	 * which must not be empty. */
	const char *complete;
	unsigned flags; /* CLI_REQUIRED, CLI_REPEAT */
};

struct cli_ctx;

/* A command: its name, what runs it, its one-line summary, its table. */
struct cli_cmd {
	const char *name;    /* "run", or "trace stats" for a subcommand */
	const char *args;    /* its positional arguments in the usage: "[SCENARIO.json]" */
	const char *summary; /* one line for 'kvsim --help' */
	/* Runs the command on argv[1..argc) (argv[0] is its name); returns the
	 * exit code. */
	int (*run)(const struct cli_ctx *cx, int argc, char **argv);
	const struct cli_opt *opts; /* NULL: no option but --help */
	const char *about;          /* the paragraphs under the usage line, or NULL */
	const char *also;           /* further usage lines ("kvsim sweep --merge DIR"), or NULL */
	const char *pos_complete;   /* completion of the positionals, as cli_opt.complete */
	const struct cli_cmd *const *subs; /* subcommands, NULL-terminated; NULL: none */
};

/* What a command runs with: itself and every command (for the completion
 * script and for "--x belongs to 'kvsim y'"). */
struct cli_ctx {
	const struct cli_cmd *cmd;
	const struct cli_cmd *const *all;
	size_t n_all;
};

/* Option ids that several commands share (cli_common_opt takes them); a
 * command's own ids start at CLI_OPT_OWN. */
enum cli_common_id {
	OPT_POLICY = 1,
	OPT_POLICIES,
	OPT_SET,
	OPT_SEED,
	OPT_OUT,
	OPT_CATALOG,
	OPT_QUIET,
	OPT_AUDIT,
	OPT_TRACE_EVENTS,
	OPT_NO_PERF,
	OPT_PLOT,
	OPT_REPORT,
	CLI_OPT_OWN = 32
};

/* Rows that several tables share, written once. */
#define CLI_ROW_POLICY(help) {OPT_POLICY, "policy", 'p', "P", help, "@policy", 0}
#define CLI_ROW_SET                                                                        \
	{OPT_SET, "set", 's', "PATH=VALUE",                                                 \
	 "override a scenario key, e.g. --set cluster.nodes=16, or a list item's, e.g. "    \
	 "--set cluster.pools[1].nodes=4 (VALUE is JSON if it parses as JSON, else a "       \
	 "string)",                                                                         \
	 NULL, CLI_REPEAT}
#define CLI_ROW_SEED {OPT_SEED, "seed", 0, "N", "override the scenario seed", NULL, 0}
#define CLI_ROW_OUT(help) {OPT_OUT, "out", 'o', "DIR", help, "@dir", 0}
#define CLI_ROW_CATALOG                                                                   \
	{OPT_CATALOG, "catalog", 0, "FILE",                                                \
	 "merge {\"gpus\":{..},\"models\":{..},\"links\":{..}} over the built-in catalogs", \
	 "@file", 0}
#define CLI_ROW_QUIET(help) {OPT_QUIET, "quiet", 'q', NULL, help, NULL, 0}

#define CLI_MAX_OPTS 40
/* Checked where a table is defined: it fits struct cli_args. */
#define CLI_TABLE_FITS(t)                                           \
	_Static_assert(sizeof(t) / sizeof *(t) <= CLI_MAX_OPTS + 1, \
		       #t " has more than CLI_MAX_OPTS options")
#define CLI_MAX_POS 8
#define CLI_MAX_SETS 256

/* The parse of one command line (getopt_long underneath: options and
 * positionals in any order, "--" ends the options). */
struct cli_args {
	const struct cli_ctx *cx;
	int argc;
	char **argv;
	const char *pos[CLI_MAX_POS]; /* the positional arguments, in order */
	int n_pos;
	struct option lo[CLI_MAX_OPTS + 2]; /* getopt_long's tables, from the command's */
	char so[3 * CLI_MAX_OPTS + 8];
};

/* cli_next's ends: the arguments are done, --help was printed (stdout),
 * a usage error was reported (stderr). */
enum { CLI_END = 0, CLI_HELP = -1, CLI_BAD = -2 };

void cli_begin(struct cli_args *a, const struct cli_ctx *cx, int argc, char **argv);
/* The next option: its id, with *val its value (NULL for a flag), or one of
 * CLI_END, CLI_HELP, CLI_BAD. */
int cli_next(struct cli_args *a, const char **val);
/* Parses a command that has no option but --help: cli_next's end, with
 * the positionals in a->pos. */
int cli_parse_positionals(const struct cli_ctx *cx, int argc, char **argv, struct cli_args *a);
/* The exit code for cli_next's end: CLI_OK after --help, CLI_USAGE after
 * an error. */
int cli_end_code(int end);

/* The usage: synopsis, about, the options. */
void cli_usage(FILE *f, const struct cli_cmd *cmd);
/* "kvsim CMD: <message>" and where the usage is, on stderr; returns
 * CLI_USAGE. */
int cli_misuse(const struct cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* One line per command, subcommands one by one: name, arguments, summary
 * (kvsim --help). */
void cli_list_commands(FILE *f, const struct cli_cmd *const *all, size_t n);
/* The commands cmd stands for: its subcommands, or itself (in one). */
const struct cli_cmd *const *cli_leaves(const struct cli_cmd *cmd, const struct cli_cmd *one[2]);
/* Runs the subcommand that argv[1] names (trace stats, trace gen). */
int cli_run_sub(const struct cli_ctx *cx, int argc, char **argv);

/* The options that run, compare, validate, sweep, plan and trace gen share. */
struct cli_common {
	const char *scenario; /* NULL: the embedded default */
	const char *policy;
	const char *policies;
	const char *out;
	const char *catalog;
	long long seed; /* --seed, when has_seed */
	int has_seed;
	const char *trace_events;
	const char *sets[CLI_MAX_SETS];
	int n_sets;
	int quiet, no_perf, plot, report, audit;
};

/* Takes option id into o: 1 when it is a shared one, 0 when not (the
 * command's own), -1 after reporting as cmd (too many --set, a bad --seed). */
int cli_common_opt(const struct cli_cmd *cmd, struct cli_common *o, int id, const char *val);
/* The positionals of a: at most one, the scenario, into o; CLI_END, or
 * CLI_BAD after reporting. */
int cli_scenario_arg(const struct cli_ctx *cx, const struct cli_args *a, struct cli_common *o);
/* Parses a command whose options are all shared ones, with at most one
 * positional (the scenario). CLI_END to go on, else cli_next's end. */
int cli_parse_common(const struct cli_ctx *cx, int argc, char **argv, struct cli_common *o);

/* Points router.policy at name; its params come from
 * router.policy_params.<name> unless it is the scenario's own policy. */
int cli_select_policy(struct cJSON *root, const char *name, char *err, size_t errlen);
/* Reads the scenario tree with --set and --seed applied. 0, or -1 with err
 * (*root NULL). Caller frees with cJSON_Delete. */
int cli_load_tree(const struct cli_common *o, struct cJSON **root, char *err, size_t errlen);
/* cli_load_tree, then --policy; NULL after reporting an error. */
struct cJSON *cli_load_tree_with_policy(const struct cli_common *o);
/* Loads and validates the scenario root holds; 0, or -1 after reporting.
 * Caller frees with cfg_scenario_free. */
int cli_load_scenario(const struct cli_common *o, const struct cJSON *root, struct scenario *s);
/* The scenario the options name (file, --set, --seed, --policy), loaded and
 * validated; 0, or -1 after reporting. Caller frees with cfg_scenario_free. */
int cli_load_from_opts(const struct cli_common *o, struct scenario *s);

/* The value of list option opt ("--gpus"): items separated by commas,
 * the blanks around each dropped, empty ones skipped, copied into buf
 * (len bytes) with items pointing there. Returns how many (at least one),
 * or -1 after reporting as cmd: no item ("expected a comma-separated list
 * of WHAT"), more than cap items, or a value too long for buf. */
int cli_list(const struct cli_cmd *cmd, const char *opt, const char *what, const char *val,
	     char *buf, size_t len, const char **items, int cap);
/* val as a whole number in [min, max], all of it decimal digits (a '-'
 * first when min < 0): no blank, no sign, nothing after. 0, or -1. */
int cli_parse_int(const char *val, long long min, long long max, long long *out);
/* val as a finite number (strtod's syntax), all of it, without leading
 * blanks. 0, or -1. */
int cli_parse_num(const char *val, double *out);
/* "kvsim CMD: OPT: expected WHAT, got \"VAL\"" (or "got an empty value")
 * and the --help line; returns CLI_USAGE. */
int cli_bad_value(const struct cli_cmd *cmd, const char *opt, const char *what, const char *val);

/* The command families (cli/run.c, info.c, trace.c, sweep.c, plan.c,
 * cost.c, complete.c). */
extern const struct cli_cmd cli_run_cmd, cli_compare_cmd, cli_validate_cmd;
extern const struct cli_cmd cli_list_cmd, cli_diff_cmd, cli_plot_cmd, cli_version_cmd;
extern const struct cli_cmd cli_trace_cmd, cli_sweep_cmd, cli_plan_cmd;
extern const struct cli_cmd cli_cost_cmd, cli_calibrate_cmd, cli_completion_cmd;

#endif
