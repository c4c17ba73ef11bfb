/* main: the kvsim command line: the command table, dispatch and help (docs/design.md, section 7). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "cli/cli.h"
#include "base/hugepages.h"
#include "sim/sim.h"

static int cmd_help(const struct cli_ctx *cx, int argc, char **argv);

static const struct cli_cmd help_cmd = {
    .name = "help",
    .args = "[COMMAND]",
    .summary = "this list, or a command's usage (as COMMAND --help)",
    .run = cmd_help,
    .about = "Without COMMAND, lists the commands with their one-line summaries (as 'kvsim\n"
	     "--help'); with one (a family and its subcommand: 'kvsim help trace stats'),\n"
	     "prints that command's usage, description and options, as 'kvsim COMMAND --help'.\n",
    .pos_complete = "@command",
};

/* Every command: name, what runs it and its one-line summary (the first
 * fields of each), in the order kvsim --help lists them. Dispatch, help
 * and the completion script all read this table. */
static const struct cli_cmd *const commands[] = {
    &cli_run_cmd,     &cli_compare_cmd, &cli_validate_cmd,	 &cli_list_cmd,
    &cli_sweep_cmd,   &cli_plan_cmd,    &cli_plot_cmd,	 &cli_diff_cmd,
    &cli_trace_cmd,   &cli_cost_cmd,    &cli_calibrate_cmd, &cli_version_cmd,
    &cli_completion_cmd, &help_cmd,
};

static void main_usage(FILE *f, const struct cli_ctx *cx)
{
	fputs("kvsim: a discrete-event simulator of GPU clusters serving LLMs\n"
	      "\n"
	      "usage: kvsim COMMAND [ARGS]\n"
	      "\n"
	      "commands:\n",
	      f);
	cli_list_commands(f, cx->all, cx->n_all);
	fputs("\n"
	      "No SCENARIO means the embedded default (workloads/scenarios/default.json).\n"
	      "'kvsim COMMAND --help' describes each command. Options are GNU style: --opt=VALUE\n"
	      "or --opt VALUE, short aliases (-o DIR, -p P, -s PATH=VALUE, -q, -j N), and '--'\n"
	      "ends them. Exit codes: 0 ok; 1 a regression (diff) or nothing meeting the SLOs\n"
	      "(plan); 2 bad usage or bad input (the message names the file, line or JSON\n"
	      "path); 3 internal error (out of memory, I/O).\n",
	      f);
}

static const struct cli_cmd *find(const struct cli_cmd *const *cmds, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cmds[i]->name, name))
			return cmds[i];
	return NULL;
}

/* kvsim help [COMMAND [SUBCOMMAND]] */
static int cmd_help(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_args a;
	int end = cli_parse_positionals(cx, argc, argv, &a);
	if (end != CLI_END)
		return cli_end_code(end);
	if (a.n_pos == 0) {
		main_usage(stdout, cx);
		return CLI_OK;
	}
	const struct cli_cmd *c = find(cx->all, cx->n_all, a.pos[0]);
	if (!c)
		return cli_misuse(cx->cmd, "no command \"%s\"", a.pos[0]);
	int used = 1; /* the arguments that name the command */
	if (c->subs && a.n_pos > 1) {
		size_t skip = strlen(c->name) + 1;
		const struct cli_cmd *const *s = c->subs;
		while (*s && strcmp((*s)->name + skip, a.pos[1]))
			s++;
		if (!*s)
			return cli_misuse(cx->cmd, "no command \"%s %s\"", c->name, a.pos[1]);
		c = *s;
		used = 2;
	}
	if (a.n_pos > used)
		return cli_misuse(cx->cmd, "unexpected argument %s", a.pos[used]);
	cli_usage(stdout, c);
	return CLI_OK;
}

/* How every command ends: an interrupt (SIGINT, SIGTERM) is exit 128 +
 * the signal with one line, after the command has removed its
 * temporaries; output lost on stdout (a full disk, /dev/full) is exit 3. */
static int main_finish(int rc)
{
	int sig = intr_caught();
	if (sig) {
		fprintf(stderr, "kvsim: interrupted by %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
		return 128 + sig;
	}
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "kvsim: write error on standard output: %s\n",
			strerror(errno ? errno : EIO));
		return CLI_INTERNAL;
	}
	return rc;
}

int main(int argc, char **argv)
{
	hp_reexec(argv); /* huge pages for the heap: see base/hugepages.h */
	/* GSL's default handler aborts; kvsim checks its inputs instead. */
	gsl_set_error_handler_off();
	/* A file-size limit makes a write fail (EFBIG), reported like a full
	 * disk, instead of killing the process with a half-written file. */
	signal(SIGXFSZ, SIG_IGN);
	intr_catch();
	struct cli_ctx cx = {NULL, commands, sizeof commands / sizeof *commands};
	if (argc < 2) {
		main_usage(stderr, &cx);
		return CLI_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h"))
		name = "help";
	else if (!strcmp(name, "--version"))
		name = "version";
	cx.cmd = find(commands, cx.n_all, name);
	if (!cx.cmd) {
		fprintf(stderr, "kvsim: unknown command \"%s\"\n\n", name);
		main_usage(stderr, &cx);
		return CLI_USAGE;
	}
	return main_finish(cx.cmd->run(&cx, argc - 1, argv + 1));
}
