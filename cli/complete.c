/* complete: `kvsim completion bash`, a bash completion script written from the option tables. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "policies/policy.h"
#include "sim/sim.h"

/* The functions every generated script starts with. Replies go into
 * COMPREPLY line by line (mapfile), so that a file name with blanks stays
 * one reply. */
static const char prologue[] =
    "# bash completion for kvsim: source <(kvsim completion bash), or save it as\n"
    "# /etc/bash_completion.d/kvsim. Written from kvsim's own option tables.\n"
    "\n"
    "# _kvsim_words WORDS CUR: WORDS that CUR begins; in a comma list, the last item.\n"
    "# A word ending in '=' (ttft_p99=) takes its value right after: no space.\n"
    "_kvsim_words() {\n"
    "\tlocal pre= w\n"
    "\t[[ $2 == *,* ]] && pre=${2%,*},\n"
    "\tmapfile -t COMPREPLY < <(compgen -P \"$pre\" -W \"$1\" -- \"${2##*,}\")\n"
    "\tfor w in \"${COMPREPLY[@]}\"; do\n"
    "\t\t[[ $w == *= ]] && compopt -o nospace 2>/dev/null\n"
    "\tdone\n"
    "\treturn 0\n"
    "}\n"
    "\n"
    "# _kvsim_value HOW CUR: files (@file), folders (@dir) or words.\n"
    "_kvsim_value() {\n"
    "\tcase $1 in\n"
    "\t@file) mapfile -t COMPREPLY < <(compgen -f -- \"$2\") ;;\n"
    "\t@dir) mapfile -t COMPREPLY < <(compgen -d -- \"$2\") ;;\n"
    "\t*) _kvsim_words \"$1\" \"$2\" ;;\n"
    "\tesac\n"
    "}\n"
    "\n"
    "# _kvsim_scan FIRST VOPTS: of the words from FIRST to the one completed,\n"
    "# how many are positionals (npos), and whether '--' came (dd). VOPTS are\n"
    "# the options that take a value: the word after one is its value.\n"
    "_kvsim_scan() {\n"
    "\tlocal i=$1 w\n"
    "\tnpos=0 dd=\n"
    "\tfor ((; i < n; i++)); do\n"
    "\t\tw=${COMP_WORDS[i]}\n"
    "\t\tif [[ -n $dd ]]; then\n"
    "\t\t\t((npos++))\n"
    "\t\telif [[ $w == -- ]]; then\n"
    "\t\t\tdd=1\n"
    "\t\telif [[ $w == = ]]; then\n"
    "\t\t\t((i++)) # --opt=VALUE: bash made '=' a word; VALUE follows\n"
    "\t\telif [[ $w == -* ]]; then\n"
    "\t\t\t[[ \" $2 \" == *\" $w \"* && ${COMP_WORDS[i+1]} != = ]] && ((i++))\n"
    "\t\telse\n"
    "\t\t\t((npos++))\n"
    "\t\tfi\n"
    "\tdone\n"
    "}\n"
    "\n"
    "_kvsim() {\n"
    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "\tlocal n=$COMP_CWORD cmd=${COMP_WORDS[1]} first=2 opts= vopts= pos= maxpos=0 val=\n"
    "\tlocal npos dd\n"
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
    "\t_kvsim_scan \"$first\" \"$vopts\"\n"
    "\t# after '--' only positionals; val: how to complete the value prev\n"
    "\t# asks for ('-': nothing to offer)\n"
    "\tif [[ -z $dd && $val == - ]]; then\n"
    "\t\treturn\n"
    "\telif [[ -z $dd && -n $val ]]; then\n"
    "\t\t_kvsim_value \"$val\" \"$cur\"\n"
    "\telif [[ -z $dd && $cur == -* ]]; then\n"
    "\t\t_kvsim_words \"$opts\" \"$cur\"\n"
    "\telif [[ -n $pos ]] && ((npos < maxpos)); then\n"
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
	} else if (!strcmp(how, "@profile")) {
		for (size_t i = 0; i < cat->n_gpus; i++) {
			const char *p = cat->gpus[i].profile;
			int seen = !p[0];
			for (size_t h = 0; h < i && !seen; h++)
				seen = !strcmp(cat->gpus[h].profile, p);
			if (!seen && strlen(words) + strlen(p) + 2 < sizeof words)
				snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
					 words[0] ? " " : "", p);
		}
	} else if (!strcmp(how, "@command")) {
		for (size_t i = 0; i < cx->n_all; i++)
			snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s",
				 i ? " " : "", cx->all[i]->name);
	} else {
		snprintf(words, sizeof words, "%s", how);
	}
	fprintf(f, "\"%s\"", words);
}

/* How many positionals args shows ("BASE.json NEW.json": 2). */
static int count_words(const char *args)
{
	int n = 0;
	for (const char *p = args ? args : ""; *p;) {
		p += strspn(p, " ");
		size_t k = strcspn(p, " ");
		n += k > 0;
		p += k;
	}
	return n;
}

/* For each command family: head (a format taking its name), its
 * subcommands ("stats gen"), tail. */
static void put_families(FILE *f, const struct cli_ctx *cx, const char *head, const char *tail)
{
	for (size_t i = 0; i < cx->n_all; i++) {
		const struct cli_cmd *c = cx->all[i];
		if (!c->subs)
			continue;
		fprintf(f, head, c->name);
		size_t skip = strlen(c->name) + 1;
		for (const struct cli_cmd *const *s = c->subs; *s; s++)
			fprintf(f, "%s%s", s == c->subs ? "" : " ", (*s)->name + skip);
		fputs(tail, f);
	}
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
	fputs("--help -h\"\n\t\tvopts=\"", f);
	const char *sep = "";
	for (const struct cli_opt *o = cmd->opts; o && o->name; o++) {
		if (!o->arg)
			continue;
		fprintf(f, "%s--%s", sep, o->name);
		if (o->short_name)
			fprintf(f, " -%c", o->short_name);
		sep = " ";
	}
	fputs("\"\n", f);
	if (cmd->pos_complete) {
		fputs("\t\tpos=", f);
		put_how(f, cmd->pos_complete, cx, cat);
		fprintf(f, " maxpos=%d\n", count_words(cmd->args));
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
	/* A family's subcommand is the second word; after 'help FAMILY', the
	 * subcommands are the third. */
	fputs("\tcase $cmd in\n", f);
	put_families(f, cx, "\t%s)\n\t\tif ((n == 2)); then\n\t\t\t_kvsim_words \"",
		     "\" \"$cur\"\n\t\t\treturn\n\t\tfi\n\t\tcmd=\"$cmd ${COMP_WORDS[2]}\" first=3 ;;\n");
	fputs("\thelp)\n\t\tif ((n == 3)); then\n\t\t\tcase ${COMP_WORDS[2]} in\n", f);
	put_families(f, cx, "\t\t\t%s) _kvsim_words \"", "\" \"$cur\" ;;\n");
	fputs("\t\t\tesac\n\t\t\treturn\n\t\tfi ;;\n", f);
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
