/* helpers: building scenarios and running them inside the tests. */
#ifndef KVSIM_TEST_HELPERS_H
#define KVSIM_TEST_HELPERS_H

#include "config/config.h"

/* Parses json (plus optional --set style assignments, NULL-terminated) into
 * s; fails the test on any error. */
void th_scenario(const char *json, const char *const *sets, struct scenario *s);
/* Like th_scenario but returns the loader's status and error text. */
int th_scenario_err(const char *json, struct scenario *s, char *err, size_t errlen);

/* The whole file as a NUL-terminated string (fails the test if unreadable);
 * caller frees. */
char *th_slurp(const char *path);
/* summary.json at path without its "perf" member (wall time, events: what
 * differs between runs of the same results), printed; caller frees. */
char *th_summary_without_perf(const char *path);

#endif
