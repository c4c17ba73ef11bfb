/* cost: `kvsim cost` and `kvsim calibrate`. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "cli/cli.h"
#include "experiments/fits.h"
#include "experiments/iteration.h"

enum {
	O_GPU = CLI_OPT_OWN,
	O_MODEL,
	O_TP,
	O_DTYPE,
	O_PREFILL,
	O_CACHED,
	O_DECODE_BATCH,
	O_CONTEXT,
	O_COST_MODEL,
	O_PROFILES,
	O_JSON
};

static const struct cli_opt cost_opts[] = {
    {O_GPU, "gpu", 0, "G", "the GPU type (kvsim list gpus)", "@gpu", CLI_REQUIRED},
    {O_MODEL, "model", 0, "M", "the model (kvsim list models), or a Hugging Face config.json",
     "@model", CLI_REQUIRED},
    {O_TP, "tp", 0, "N", "GPUs per replica, tensor-parallel (default 1)", NULL, 0},
    {O_DTYPE, "dtype", 0, "bf16|fp8", "weights and KV precision (default bf16)", "bf16 fp8", 0},
    {O_PREFILL, "prefill", 0, "TOKENS", "new prompt tokens in the batch (default 0)", NULL, 0},
    {O_CACHED, "cached", 0, "TOKENS", "prompt tokens before them, already cached", NULL, 0},
    {O_DECODE_BATCH, "decode-batch", 0, "B", "decodes in the batch (needs --context)", NULL, 0},
    {O_CONTEXT, "context", 0, "K", "the tokens each decode attends over", NULL, 0},
    {O_COST_MODEL, "cost-model", 0, "roofline|profile|fixed",
     "the cost model (default: the GPU's calibrated roofline)", "roofline profile fixed", 0},
    {O_PROFILES, "profiles", 0, "DIR",
     "Vidur profiles for --cost-model profile (default data/profiles/vidur)", "@dir", 0},
    CLI_ROW_CATALOG,
    {O_JSON, "json", 0, NULL, "print JSON", NULL, 0},
    {0},
};
CLI_TABLE_FITS(cost_opts);

static const struct cli_opt calibrate_opts[] = {
    {O_PROFILES, "profiles", 0, "DIR", "the Vidur profiles (default data/profiles/vidur)",
     "@dir", 0},
    {O_GPU, "gpu", 0, "PROFILE", "fit this GPU's profile folder only (a100, h100)", "@profile",
     0},
    {O_JSON, "json", 0, NULL, "print the fitted values only, as JSON", NULL, 0},
    {0},
};
CLI_TABLE_FITS(calibrate_opts);

/* A whole-number option's value into *out; 0, or -1 after reporting. */
static int parse_count(const struct cli_cmd *cmd, int id, const char *s, double *out)
{
	const struct cli_opt *o = cost_opts;
	while (o->id != id)
		o++;
	double v;
	if (cli_parse_num(s, &v) || v < 0 || v > 1e9 || v != floor(v)) {
		char opt[64];
		snprintf(opt, sizeof opt, "--%s", o->name);
		cli_bad_value(cmd, opt, "a whole number >= 0", s);
		return -1;
	}
	*out = v;
	return 0;
}

/* The options into c; CLI_END to go on, else cli_next's end. */
static int parse_cost(const struct cli_ctx *cx, int argc, char **argv, struct iter_query *c)
{
	const char *v;
	int id, bad = 0;
	struct cli_args a;
	cli_begin(&a, cx, argc, argv);
	while (!bad && (id = cli_next(&a, &v)) > 0) {
		switch (id) {
		case O_GPU: c->gpu = v; break;
		case O_MODEL: c->model = v; break;
		case O_TP: {
			long long tp;
			if (cli_parse_int(v, 1, INT_MAX, &tp)) {
				cli_bad_value(cx->cmd, "--tp", "a whole number >= 1", v);
				bad = 1;
			}
			c->tp = v;
			break;
		}
		case O_DTYPE: c->dtype = v; break;
		case O_COST_MODEL: c->kind = v; break;
		case O_PROFILES: c->profiles = v; break;
		case OPT_CATALOG: c->catalog = v; break;
		case O_PREFILL: bad = parse_count(cx->cmd, id, v, &c->prefill); break;
		case O_CACHED: bad = parse_count(cx->cmd, id, v, &c->cached); break;
		case O_DECODE_BATCH: bad = parse_count(cx->cmd, id, v, &c->batch); break;
		case O_CONTEXT:
			bad = parse_count(cx->cmd, id, v, &c->context);
			c->have_ctx = 1;
			break;
		case O_JSON: c->json = 1; break;
		}
	}
	if (bad)
		return CLI_BAD;
	if (id != CLI_END)
		return id;
	if (a.n_pos)
		cli_misuse(cx->cmd, "unexpected argument %s", a.pos[0]);
	else if (!c->gpu || !c->model)
		cli_misuse(cx->cmd, "give --gpu and --model");
	else if (c->batch > 0 && !c->have_ctx)
		fprintf(stderr, "kvsim cost: --decode-batch needs --context\n");
	else if (c->prefill == 0 && c->batch == 0)
		fprintf(stderr, "kvsim cost: nothing to run: give --prefill and/or --decode-batch\n");
	else
		return CLI_END;
	return CLI_BAD;
}

static int cmd_cost(const struct cli_ctx *cx, int argc, char **argv)
{
	struct iter_query c = {.tp = "1", .dtype = "bf16"};
	int end = parse_cost(cx, argc, argv, &c);
	if (end != CLI_END)
		return cli_end_code(end);
	return iter_report(&c);
}

static int cmd_calibrate(const struct cli_ctx *cx, int argc, char **argv)
{
	const char *dir = "data/profiles/vidur", *only = NULL, *v;
	int json = 0, id;
	struct cli_args args;
	cli_begin(&args, cx, argc, argv);
	while ((id = cli_next(&args, &v)) > 0) {
		switch (id) {
		case O_PROFILES: dir = v; break;
		case O_GPU: only = v; break;
		case O_JSON: json = 1; break;
		}
	}
	if (id != CLI_END)
		return cli_end_code(id);
	if (args.n_pos)
		return cli_misuse(cx->cmd, "unexpected argument %s", args.pos[0]);
	return fits_report(dir, only, json);
}

const struct cli_cmd cli_cost_cmd = {
    .name = "cost",
    .args = "",
    .summary = "one iteration's predicted time, term by term",
    .run = cmd_cost,
    .opts = cost_opts,
    .about =
	"Prints the predicted time of one engine iteration of a replica (tp GPUs of type\n"
	"G serving model M): a prefill of TOKENS new tokens after CACHED cached ones,\n"
	"plus B decodes each attending over K tokens. The time is split into compute\n"
	"of the linear layers (FLOPs / (peak x mfu)), memory (weights / (HBM bandwidth x\n"
	"mbu)), their smooth maximum (or, with --cost-model profile, the measured\n"
	"layers), per-kernel cost, attention (calibrated, or measured with --cost-model\n"
	"profile), tensor-parallel communication and the engine's CPU overhead, and\n"
	"names the bound that dominates; then one GPU's power while the iteration runs\n"
	"(the energy model: idle power + (TDP - idle) x utilisation).\n",
};

const struct cli_cmd cli_calibrate_cmd = {
    .name = "calibrate",
    .args = "",
    .summary = "fit the roofline to measured operator profiles",
    .run = cmd_calibrate,
    .opts = calibrate_opts,
    .about =
	"Fits the roofline's mfu, mbu, knee and per-kernel overhead, per GPU, to the\n"
	"measured linear-operator times in DIR/compute/<gpu>/<org>/<model>/mlp.csv (Vidur\n"
	"format), by least squares of the relative error (GSL); the intra-server\n"
	"all-reduce lines to DIR/network/<gpu>_dgx/all_reduce.csv; the attention model\n"
	"of each backend to the attention tables beside mlp.csv (attention.csv or\n"
	"attention_sample.csv); and, without --gpu, the engine's CPU time per iteration\n"
	"and the FP8 efficiencies to the published figures in model/published.c. Prints\n"
	"the fitted values (the catalog's entries come from here) and the errors.\n",
};
