/* about: the build's version string. */
#ifndef KVSIM_ABOUT_H
#define KVSIM_ABOUT_H

/* "0.1.0+gCOMMIT" (static). */
const char *kvsim_version(void);
#define KVSIM_VERSION_STRING kvsim_version()

#endif
