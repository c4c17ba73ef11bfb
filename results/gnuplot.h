/* gnuplot: runs gnuplot on a script, drawing one file whole or not at all. */
#ifndef KVSIM_GNUPLOT_H
#define KVSIM_GNUPLOT_H

#include <stddef.h>
#include <sys/types.h>

/* A gnuplot drawing one file, started by gnuplot_start and awaited by
 * gnuplot_finish. */
struct gp_job {
	pid_t pid;
	int log;
	char tmp[4600];
	const char *out;
};

/* Starts gnuplot on plot/common.gp + script with the variables in vars
 * (pairs of name, value, NULL-ended; values quoted as strings), fmt
 * ("png" or "svg") and out, drawing out through a temporary name. 0, or 3
 * with err (nothing left running). */
int gnuplot_start(struct gp_job *j, const char *script, const char *const *vars,
		  const char *out, const char *fmt, char *err, size_t errlen);
/* Waits for j's gnuplot and puts its file in place; on failure err has
 * gnuplot's last words. 0, or 3 with err. */
int gnuplot_finish(struct gp_job *j, char *err, size_t errlen);

#endif
