/* complete: `kvsim completion bash`, a bash completion script written from the option tables. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "policies/policy.h"
#include "sim/catalog.h"

/* The functions every generated script starts with. */
static const char prologue[] =
    "# bash completion for kvsim: source <(kvsim completion bash), or save it as\n"
    "# /etc/bash_completion.d/kvsim. Written from kvsim's own option tables.\n"
    "\n"
    "# _kvsim_words WORDS CUR: WORDS that CUR begins; in a comma list, the last item.\n"
    "_kvsim_words() {\n"
    "\tlocal pre=\n"
    "\t[[ $2 == *,* ]] && pre=${2%,*},\n"
    "\tCOMPREPLY=($(compgen -P \"$pre\" -W \"$1\" -- \"${2##*,}\"))\n"
    "}\n"
    "\n"
    "# _kvsim_value HOW CUR: files (@file), folders (@dir) or words.\n"
    "_kvsim_value() {\n"
    "\tcase $1 in\n"
    "\t@file) COMPREPLY=($(compgen -f -- \"$2\")) ;;\n"
    "\t@dir) COMPREPLY=($(compgen -d -- \"$2\")) ;;\n"
    "\t*) _kvsim_words \"$1\" \"$2\" ;;\n"
    "\tesac\n"
    "}\n"
    "\n"
    "_kvsim() {\n"
    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "\tlocal n=$COMP_CWORD cmd=${COMP_WORDS[1]} opts= pos= val=\n"
    "\tCOMPREPLY=()\n"
    "\t# --opt=VALUE: bash splits the word at '='\n"
    "\tif [[ $cur == = ]]; then\n"
    "\t\tcur=\n"
    "\telif [[ $prev == = ]]; then\n"
    "\t\tprev=${COMP_WORDS[COMP_CWORD-2]}\n"
    "\tfi\n";

static const char epilogue[] =
    "\t*) return ;;\n"
    "\tesac\n"
    "\t# val: how to complete the value prev asks for ('-': nothing to offer)\n"
    "\tif [[ $val == - ]]; then\n"
    "\t\treturn\n"
    "\telif [[ -n $val ]]; then\n"
    "\t\t_kvsim_value \"$val\" \"$cur\"\n"
    "\telif [[ $cur == -* ]]; then\n"
    "\t\t_kvsim_words \"$opts\" \"$cur\"\n"
    "\telif [[ -n $pos ]]; then\n"
    "\t\t_kvsim_value \"$pos\" \"$cur\"\n"
    "\tfi\n"
    "}\n"
    "complete -o filenames -F _kvsim kvsim\n";

/* How a value completes, as the script's words: the registry's policies,
 * the catalog's GPUs and models, the command names, or the table's own. */
static void put_how(FILE *f, const char *how, const struct cli_ctx *cx, const struct catalog *cat)
{
	char words[4096] = "";
	if (!strcmp(how, "@policy") || !strcmp(how, "@policies")) {
		size_t n;
		const struct pol_ops *const *all = pol_all(&n);
		for (size_t i = 0; i < n && strlen(words) + 64 < sizeof words; i++)
			snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
				 i ? " " : "", all[i]->name);
		if (!strcmp(how, "@policies"))
			strcat(words, " all");
	} else if (!strcmp(how, "@gpu") || !strcmp(how, "@model")) {
		catalog_names(cat, how[1] == 'g' ? "gpus" : "models", words, sizeof words);
		for (char *c = words; (c = strchr(c, ',')); c++)
			*c = ' '; /* "a, b" */
	} else if (!strcmp(how, "@command")) {
		for (size_t i = 0; i < cx->n_all; i++)
			snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
				 i ? " " : "", cx->all[i]->name);
	} else {
		snprintf(words, sizeof words, "%s", how);
	}
	fprintf(f, "\"%s\"", words);
}

/* One command's case: its options, its positionals, the values its
 * options take. */
static void put_command(FILE *f, const struct cli_cmd *cmd, const struct cli_ctx *cx,
			const struct catalog *cat)
{
	fprintf(f, "\t\"%s\")\n\t\topts=\"", cmd->name);
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		fprintf(f, "--%s ", o->name);
		if (o->short_name)
			fprintf(f, "-%c ", o->short_name);
	}
	fputs("--help -h\"\n", f);
	if (cmd->pos_complete) {
		fputs("\t\tpos=", f);
		put_how(f, cmd->pos_complete, cx, cat);
		fputc('\n', f);
	}
	int any = 0;
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		if (!o->arg)
			continue;
		fprintf(f, "%s\t\t--%s", any++ ? "" : "\t\tcase $prev in\n", o->name);
		if (o->short_name)
			fprintf(f, " | -%c", o->short_name);
		fputs(") val=", f);
		if (o->complete)
			put_how(f, o->complete, cx, cat);
		else
			fputc('-', f);
		fputs(" ;;\n", f);
	}
	if (any)
		fputs("\t\tesac\n", f);
	fputs("\t\t;;\n", f);
}

static void put_script(FILE *f, const struct cli_ctx *cx, const struct catalog *cat)
{
	fputs(prologue, f);
	fputs("\tif ((n == 1)); then\n\t\t_kvsim_words ", f);
	put_how(f, "@command", cx, cat);
	fputs(" \"$cur\"\n\t\treturn\n\tfi\n", f);
	/* A family's subcommand is the second word. */
	fputs("\tcase $cmd in\n", f);
	for (size_t i = 0; i < cx->n_all; i++) {
		const struct cli_cmd *c = cx->all[i];
		if (!c->subs)
			continue;
		fprintf(f, "\t%s)\n\t\tif ((n == 2)); then\n\t\t\t_kvsim_words \"", c->name);
		size_t skip = strlen(c->name) + 1;
		for (const struct cli_cmd *const *s = c->subs; *s; s++)
			fprintf(f, "%s%s", s == c->subs ? "" : " ", (*s)->name + skip);
		fputs("\" \"$cur\"\n\t\t\treturn\n\t\tfi\n\t\tcmd=\"$cmd ${COMP_WORDS[2]}\" ;;\n", f);
	}
	fputs("\tesac\n\tcase $cmd in\n", f);
	for (size_t i = 0; i < cx->n_all; i++) {
		const struct cli_cmd *one[2];
		for (const struct cli_cmd *const *c = cli_leaves(cx->all[i], one); *c; c++)
			put_command(f, *c, cx, cat);
	}
	fputs(epilogue, f);
}

static int cmd_completion(const struct cli_ctx *cx, int argc, char **argv)
{
	struct cli_args a;
	int end = cli_parse_positionals(cx, argc, argv, &a);
	if (end != CLI_END)
		return cli_end_code(end);
	if (a.n_pos != 1 || strcmp(a.pos[0], "bash"))
		return cli_misuse(cx->cmd, "expected a shell: bash");
	struct catalog cat;
	char err[512];
	if (catalog_load_builtin(&cat, err, sizeof err)) {
		fprintf(stderr, "kvsim: %s\n", err);
		return CLI_INTERNAL;
	}
	put_script(stdout, cx, &cat);
	catalog_free(&cat);
	return CLI_OK;
}

const struct cli_cmd cli_completion_cmd = {
    .name = "completion",
    .args = "bash",
    .summary = "print a bash completion script for kvsim",
    .run = cmd_completion,
    .about = "Prints a bash completion script for kvsim's commands, subcommands, options and\n"
	     "their values (policy, GPU and model names, formats). Load it with\n"
	     "  source <(kvsim completion bash)\n"
	     "or save it as /etc/bash_completion.d/kvsim.\n",
    .pos_complete = "bash",
};
