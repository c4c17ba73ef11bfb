/* about: the build's version string. */
#include "base/about.h"

#include "version.h" /* generated: build/version.h */

const char *kvsim_version(void)
{
	return KVSIM_VERSION;
}
