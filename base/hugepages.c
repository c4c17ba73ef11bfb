/* hugepages: re-executes kvsim with glibc's malloc asked for huge pages. */
#include "base/hugepages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char TUNABLE[] = "glibc.malloc.hugetlb";

/* Where current sets the tunable (the text after its '='), or NULL. */
static const char *tunable_value(const char *current)
{
	size_t k = sizeof TUNABLE - 1;
	for (const char *p = current; p && *p;) {
		if (!strncmp(p, TUNABLE, k) && p[k] == '=')
			return p + k + 1;
		p = strchr(p, ':');
		p = p ? p + 1 : NULL;
	}
	return NULL;
}

int hp_tunables(const char *current, char *out, size_t n)
{
	if (tunable_value(current))
		return -1;
	int w = current && *current ? snprintf(out, n, "%s:%s=1", current, TUNABLE)
				    : snprintf(out, n, "%s=1", TUNABLE);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int opted_out(void)
{
	const char *v = getenv("KVSIM_HUGEPAGES");
	return v && !strcmp(v, "0");
}

/* Under valgrind an exec would leave its checks behind. */
static int under_valgrind(void)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload");
}

void hp_reexec(char **argv)
{
	if (getenv("KVSIM_REEXEC")) {
		unsetenv("KVSIM_REEXEC"); /* a kvsim this one starts decides anew */
		return;
	}
	if (opted_out() || under_valgrind())
		return;
	const char *cur = getenv("GLIBC_TUNABLES");
	char *old = cur ? strdup(cur) : NULL;
	char val[4096];
	if ((cur && !old) || hp_tunables(old, val, sizeof val)) {
		free(old);
		return;
	}
	if (!setenv("GLIBC_TUNABLES", val, 1) && !setenv("KVSIM_REEXEC", "1", 1)) {
		/* by its path, so that ps and perf still name it kvsim (after
		 * an exec of /proc/self/exe they say "exe"); the link itself
		 * if the path is gone (a binary rebuilt since it started) */
		char path[4096];
		ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
		if (k > 0) {
			path[k] = 0;
			execv(path, argv);
		}
		execv("/proc/self/exe", argv);
	}
	/* exec failed (no /proc, say): go on as we are */
	if (old)
		setenv("GLIBC_TUNABLES", old, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv("KVSIM_REEXEC");
	free(old);
}

void hp_describe(char *out, size_t n)
{
	const char *v = tunable_value(getenv("GLIBC_TUNABLES"));
	char thp[64] = "unknown";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		char line[128];
		if (fgets(line, sizeof line, f)) {
			char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
			if (a && b)
				snprintf(thp, sizeof thp, "%.*s", (int)(b - a - 1), a + 1);
		}
		fclose(f);
	}
	if (v)
		snprintf(out, n, "%s=%.*s, THP %s", TUNABLE, (int)strcspn(v, ":"), v, thp);
	else
		snprintf(out, n, "off (%s), THP %s",
			 opted_out()	    ? "KVSIM_HUGEPAGES=0"
			 : under_valgrind() ? "under valgrind"
					    : "could not restart with the tunable",
			 thp);
}
