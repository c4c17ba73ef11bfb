/* noise: when two figures differ beyond the noise of the seeds (docs/outputs.md, The verdict). */
#ifndef KVSIM_NOISE_H
#define KVSIM_NOISE_H

struct res_metric;

/* One column's figure over the seeds it ran: one seed is min = median =
 * max (docs/outputs.md, The verdict). */
struct res_spread {
	double min, median, max;
};

/* The noise floor of a headline figure for one seed: a difference within
 * abs + rel x |the baseline's figure| is noise (docs/outputs.md gives each
 * floor's reasoning). NULL for a row with no floor of its own (5%). */
struct res_noise {
	const char *path;
	double abs, rel;
};
const struct res_noise *res_noise_of(const char *path);

/* Whether figure a differs from figure b beyond noise: where either ran
 * more than one seed (min < max), their [min, max] ranges are apart; with
 * one seed each, the medians differ by more than m's noise floor against
 * b. 0 when either has no figure. */
int res_material(const struct res_metric *m, const struct res_spread *a,
		 const struct res_spread *b);

#endif
