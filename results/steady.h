/* steady: whether a run reached a steady state, from its requests binned by time (docs/outputs.md, Steadiness). */
#ifndef KVSIM_STEADY_H
#define KVSIM_STEADY_H

#include <stdint.h>

struct request;

/* Time bins over the run: a bin starts 1 s wide and all double (pairs
 * merged) when a time falls past the last, so that memory stays flat
 * however long the run. TTFT per bin is a histogram of STEADY_HIST
 * log bins (STEADY_HIST_LO s, x STEADY_HIST_STEP each). */
#define STEADY_BINS 256
#define STEADY_HIST 200
#define STEADY_HIST_LO 1e-4
#define STEADY_HIST_STEP 1.1
struct met_steady {
	double bin_s;
	double last_arrival_s;
	uint32_t arrived[STEADY_BINS]; /* by arrival time */
	uint32_t ended[STEADY_BINS];   /* completed, shed or failed, by the time it ended */
	uint32_t shed[STEADY_BINS];    /* shed, by arrival time */
	uint32_t ttft[STEADY_BINS][STEADY_HIST]; /* completed, by arrival time */
};

/* The verdict and its evidence (summary.json "steady", "steady_reason",
 * "steadiness"). The window is the arrivals' span [0, last arrival]; its
 * first STEADY_WARMUP is warm-up, the rest two halves. */
#define STEADY_WARMUP 0.2
/* A half's TTFT p99 is compared with the other's only when both rest on at
 * least 10 requests above it (1,000 completed in each half): a p99 of a
 * few hundred is its few slowest requests, whatever the run's state. */
#define STEADY_TAIL_MIN 1000
struct met_steadiness {
	int known;  /* 0: too few requests or too short a run to tell (steady then) */
	int unsteady; /* 0: steady, or too little to tell */
	char reason[160];
	double warmup_s, window_s;          /* warm-up end, last arrival */
	double ttft_p99_first_s, ttft_p99_second_s; /* completed requests arriving in each half */
	double in_system_mid, in_system_end;          /* arrived, not yet ended, at the halves' border and at the window's end */
	double arrived_second, ended_second;          /* in the second half */
	double shed_share_second;                     /* shed among the second half's arrivals */
};

/* Records an ended request (REQ_DONE with its TTFT in s, else NaN);
 * 0, or -1 when memory runs out (*sp allocated on first use). */
int steady_record(struct met_steady **sp, const struct request *r, double ttft_s);
/* The verdict from the bins; slo_ttft_s sets the smallest TTFT rise that
 * counts. */
void steady_judge(const struct met_steady *s, double slo_ttft_s, struct met_steadiness *out);

#endif
