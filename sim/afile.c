/* afile: a file written under a temporary name and renamed into place when complete. */
#include "sim/afile.h"

#include <unistd.h>

int afile_open(struct afile *a, const char *path, char *err, size_t errlen)
{
	snprintf(a->path, sizeof a->path, "%s", path);
	snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", path, (long)getpid());
	a->f = fopen(a->tmp, "w");
	if (!a->f) {
		snprintf(err, errlen, "%s: cannot create", a->tmp);
		a->tmp[0] = 0;
		return -1;
	}
	return 0;
}

int afile_commit(struct afile *a, char *err, size_t errlen)
{
	int bad = ferror(a->f);
	bad |= fclose(a->f) != 0;
	a->f = NULL;
	if (bad || rename(a->tmp, a->path) != 0) {
		snprintf(err, errlen, "%s: write failed", a->path);
		unlink(a->tmp);
		a->tmp[0] = 0;
		return -1;
	}
	a->tmp[0] = 0;
	return 0;
}

void afile_discard(struct afile *a)
{
	if (a->f)
		fclose(a->f);
	a->f = NULL;
	if (a->tmp[0])
		unlink(a->tmp);
	a->tmp[0] = 0;
}
