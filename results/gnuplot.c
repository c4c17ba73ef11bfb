/* gnuplot: runs gnuplot on a script, drawing one file whole or not at all. */
#include "results/gnuplot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/embedded.h"

/* A gnuplot single-quoted string: a quote is written twice. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* The last non-blank line of what gnuplot said on fd (its error), trimmed
 * into buf. */
static void last_words(int fd, char *buf, size_t len)
{
	char text[4096];
	buf[0] = 0;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof text - 1 ? size - (off_t)sizeof text + 1 : 0;
	ssize_t n = pread(fd, text, sizeof text - 1, from);
	if (n <= 0)
		return;
	text[n] = 0;
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\r'))
		text[--n] = 0;
	char *line = strrchr(text, '\n');
	line = line ? line + 1 : text;
	line += strspn(line, " \t^");
	snprintf(buf, len, ": %.200s", line);
}


/* Starts gnuplot on common.gp + script with the variables in vars (pairs
 * of name, value; values quoted as strings), drawing out through a
 * temporary name: out appears whole or not at all. What gnuplot prints
 * goes to a scratch file, never to kvsim's stdout; its last line is the
 * message when it fails. 0, or 3 with err (nothing left running). */
int gnuplot_start(struct gp_job *j, const char *script, const char *const *vars,
			 const char *out, const char *fmt, char *err, size_t errlen)
{
	char log_path[] = "/tmp/kvsim-gnuplot-XXXXXX";
	j->out = out;
	snprintf(j->tmp, sizeof j->tmp, "%.4400s.tmp.%ld", out, (long)getpid());
	int log = mkstemp(log_path), in[2] = {-1, -1};
	if (log < 0 || pipe(in)) {
		snprintf(err, errlen, "cannot run gnuplot: %s", strerror(errno));
		if (log >= 0) {
			unlink(log_path);
			close(log);
		}
		return 3;
	}
	unlink(log_path);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(log, 1);
		dup2(log, 2);
		close(in[0]);
		close(in[1]);
		close(log);
		execlp("gnuplot", "gnuplot", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	FILE *g = pid > 0 ? fdopen(in[1], "w") : NULL;
	if (!g) {
		snprintf(err, errlen, "cannot run gnuplot: %s", strerror(errno));
		close(in[1]);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		close(log);
		return 3;
	}
	for (; vars && vars[0]; vars += 2) {
		fprintf(g, "%s = ", vars[0]);
		put_quoted(g, vars[1]);
		fputc('\n', g);
	}
	fputs("fmt = ", g);
	put_quoted(g, fmt);
	fputs("\nout = ", g);
	put_quoted(g, j->tmp);
	/* figname: the SVG's name, which prefixes its element ids, so several
	 * SVGs inlined in one page keep distinct ids: "fig_" and the file's base
	 * name, anything but a letter or digit as '_'. */
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	fputs("\nfigname = \"fig_", g);
	for (const char *c = base; *c && strcmp(c, ".png") && strcmp(c, ".svg"); c++)
		fputc((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9')
			  ? *c
			  : '_',
		      g);
	fputs("\"\n", g);
	fputs(kv_plot_common, g);
	fputs(script, g);
	fputs("\nunset output\n", g);
	fclose(g);
	j->pid = pid;
	j->log = log;
	return 0;
}

/* Waits for j's gnuplot and puts its file in place. 0, or 3 with err. */
int gnuplot_finish(struct gp_job *j, char *err, size_t errlen)
{
	char said[256] = "";
	int st = 0;
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!ok)
		last_words(j->log, said, sizeof said);
	close(j->log);
	if (ok && rename(j->tmp, j->out) != 0) {
		snprintf(err, errlen, "%s: %s", j->out, strerror(errno));
		unlink(j->tmp);
		return 3;
	}
	if (!ok) {
		unlink(j->tmp);
		snprintf(err, errlen, "gnuplot failed drawing %s%s", j->out,
			 WIFEXITED(st) && WEXITSTATUS(st) == 127
			     ? " (gnuplot not found; make deps installs it)"
			     : said);
		return 3;
	}
	return 0;
}

