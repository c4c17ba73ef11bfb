/* check_latency_fig: the latency tails' and the cluster timeline's data, against hand-computed files. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/latency_fig.h"
#include "tests/helpers.h"
#include "tests/suites.h"

/* A private folder per test process (Check forks each test). */
static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/kvsim_check_latency_fig.%ld", (long)getpid());
	mkdir(dir, 0755);
	char pol[128];
	snprintf(pol, sizeof pol, "%s/p", dir);
	mkdir(pol, 0755);
}

static void write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static char *read_back(const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return th_slurp(path);
}

static const char *const header =
    "id,status,arrival_s,output_tokens,ttft_s,tpot_s,e2e_s\n";

/* Five TTFTs and a shed request: every value a row, the k-th smallest of
 * n with (n - k + 1) / n of the requests at or above it, then the p99. */
START_TEST(ccdf_small_sample_exact)
{
	make_dir();
	char csv[512];
	snprintf(csv, sizeof csv, "%s%s", header,
		 "1,completed,0,5,0.5,,1\n2,completed,0,5,0.1,,1\n3,completed,0,5,0.3,,1\n"
		 "4,shed,0,0,,,\n5,completed,0,5,0.2,,1\n6,completed,0,5,0.4,,1\n");
	write_file("p/requests.csv", csv);
	char out[128], err[256] = "";
	snprintf(out, sizeof out, "%s/ttft.dat", dir);
	double p99 = 0.496; /* 0.4 + 0.96 x 0.1: GSL's p99 of the five */
	ck_assert_int_eq(res_write_ccdf(dir, "p", "ttft_s", &p99, out, err, sizeof err), 0);
	char *got = read_back("ttft.dat");
	ck_assert_str_eq(got, "# ttft_s: value, fraction of requests at or above it; one block "
			      "per policy, then each policy's p99\n"
			      "# p\nvalue_s,fraction_at_or_above\n"
			      "0.1,1\n0.2,0.8\n0.3,0.6\n0.4,0.4\n0.5,0.2\n"
			      "\n\n# p99 per policy\np99_s,fraction_at_or_above\n0.496,0.01\n");
	free(got);
}
END_TEST

/* 10,000 values 1..10000: at most RES_CCDF_POINTS rows; the first is the
 * smallest with all requests, the slowest twenty are each a row (the log
 * spaced ranks: 10000^(1/149) = 1.064 apart, closer than one request up to
 * m = 16), the last the largest with 1/n. */
START_TEST(ccdf_keeps_the_tail)
{
	make_dir();
	char path[256];
	snprintf(path, sizeof path, "%s/p/requests.csv", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(header, f);
	for (int i = 10000; i >= 1; i--)
		fprintf(f, "%d,completed,0,1,%d,,1\n", i, i);
	fclose(f);
	char out[128], err[256] = "";
	snprintf(out, sizeof out, "%s/ttft.dat", dir);
	double p99 = 9900.01;
	ck_assert_int_eq(res_write_ccdf(dir, "p", "ttft_s", &p99, out, err, sizeof err), 0);
	char *got = read_back("ttft.dat");
	int rows = 0;
	double v[RES_CCDF_POINTS + 8], frac[RES_CCDF_POINTS + 8];
	char *line = strstr(got, "value_s,fraction_at_or_above\n") + 29;
	while (line && *line && *line != '\n' && rows < RES_CCDF_POINTS + 8) {
		ck_assert_int_eq(sscanf(line, "%lf,%lf", &v[rows], &frac[rows]), 2);
		rows++;
		line = strchr(line, '\n') + 1;
	}
	ck_assert_int_le(rows, RES_CCDF_POINTS);
	ck_assert_int_ge(rows, RES_CCDF_POINTS * 4 / 5);
	ck_assert_double_eq(v[0], 1);
	ck_assert_double_eq(frac[0], 1);
	for (int m = 1; m <= 16; m++) {
		ck_assert_double_eq(v[rows - m], 10001 - m);
		ck_assert_double_eq_tol(frac[rows - m], m / 10000.0, 1e-12);
	}
	free(got);
}
END_TEST

/* Three requests over 2.5 s: buckets of 1 s (a run under 40 s). Bucket 0:
 * first tokens at 0.5 (TTFT 0.3) and 0.5 (0.1), p99 0.1 + 0.99 x 0.2 =
 * 0.298, request 2 done (4 tokens); bucket 1: no first token, request 1
 * done (10 tokens); bucket 2 ends with the shed request's arrival at 2.5:
 * rates over its half second, nothing done. */
START_TEST(cluster_buckets_exact)
{
	make_dir();
	char csv[512];
	snprintf(csv, sizeof csv, "%s%s", header,
		 "1,completed,0.2,10,0.3,0.1,1.5\n2,completed,0.4,4,0.1,0.1,0.5\n"
		 "3,shed,2.5,0,,,\n");
	write_file("p/requests.csv", csv);
	char out[128], err[256] = "";
	snprintf(out, sizeof out, "%s/cluster.dat", dir);
	const char *const pol[] = {"p"};
	double width = 0;
	ck_assert_int_eq(res_write_cluster(dir, pol, 1, out, &width, err, sizeof err), 0);
	ck_assert_double_eq(width, 1);
	char *got = read_back("cluster.dat");
	ck_assert_str_eq(got, "# the cluster per 1 s: TTFT p99 of the first tokens in the bucket, "
			      "requests and output tokens completed per second; one block per "
			      "policy\n# p\nstart_s,ttft_p99_s,requests_per_s,output_tokens_per_s\n"
			      "0,0.298,1,4\n1,nan,1,10\n2,nan,0,0\n");
	free(got);
}
END_TEST

/* The same with the run ending at 2.4 s: the last bucket, 0.4 s of the
 * run, under half a bucket, is left out. */
START_TEST(cluster_short_last_bucket_left_out)
{
	make_dir();
	char csv[512];
	snprintf(csv, sizeof csv, "%s%s", header,
		 "1,completed,0.2,10,0.3,0.1,1.5\n2,completed,0.4,4,0.1,0.1,0.5\n"
		 "3,shed,2.4,0,,,\n");
	write_file("p/requests.csv", csv);
	char out[128], err[256] = "";
	snprintf(out, sizeof out, "%s/cluster.dat", dir);
	const char *const pol[] = {"p"};
	double width = 0;
	ck_assert_int_eq(res_write_cluster(dir, pol, 1, out, &width, err, sizeof err), 0);
	char *got = read_back("cluster.dat");
	ck_assert_ptr_nonnull(strstr(got, "\n0,0.298,1,4\n1,nan,1,10\n"));
	ck_assert_ptr_null(strstr(got, "\n2,"));
	free(got);
}
END_TEST

/* The bucket width: a minute from 20 minutes on, else the widest of 30,
 * 15, 10, 5, 2, 1 s that still makes 20 buckets. */
START_TEST(cluster_width_from_the_horizon)
{
	static const double ends[] = {1200, 1199, 600, 599, 300, 200, 100, 99, 40, 39};
	static const double want[] = {60, 30, 30, 15, 15, 10, 5, 2, 2, 1};
	const char *const pol[] = {"p"};
	for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
		make_dir();
		char csv[512], out[128], err[256] = "";
		snprintf(csv, sizeof csv, "%s1,shed,%g,0,,,\n", header, ends[i]);
		write_file("p/requests.csv", csv);
		snprintf(out, sizeof out, "%s/cluster.dat", dir);
		double width = 0;
		ck_assert_int_eq(res_write_cluster(dir, pol, 1, out, &width, err, sizeof err), 0);
		ck_assert_msg(width == want[i], "end %g s: width %g, want %g", ends[i], width,
			      want[i]);
	}
}
END_TEST

/* A damaged requests.csv: exit 2, the file and line named, no file left. */
START_TEST(damaged_input_named)
{
	make_dir();
	char csv[512];
	snprintf(csv, sizeof csv, "%s1,completed,0.2,10,abc,0.1,1.5\n", header);
	write_file("p/requests.csv", csv);
	char out[128], err[256] = "", want[256];
	snprintf(out, sizeof out, "%s/ttft.dat", dir);
	double p99 = 0;
	ck_assert_int_eq(res_write_ccdf(dir, "p", "ttft_s", &p99, out, err, sizeof err), 2);
	snprintf(want, sizeof want, "%s/p/requests.csv:2: ttft_s: expected a number, got \"abc\"",
		 dir);
	ck_assert_str_eq(err, want);
	ck_assert_int_ne(access(out, F_OK), 0);
}
END_TEST

/* The folder of the test, removed after it. */
static void remove_dir(void)
{
	char cmd[128];
	if (dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		ck_assert_int_eq(system(cmd), 0);
	}
}

Suite *latency_fig_suite(void)
{
	Suite *s = suite_create("latency_fig");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, NULL, remove_dir);
	tcase_add_test(tc, ccdf_small_sample_exact);
	tcase_add_test(tc, ccdf_keeps_the_tail);
	tcase_add_test(tc, cluster_buckets_exact);
	tcase_add_test(tc, cluster_short_last_bucket_left_out);
	tcase_add_test(tc, cluster_width_from_the_horizon);
	tcase_add_test(tc, damaged_input_named);
	suite_add_tcase(s, tc);
	return s;
}
