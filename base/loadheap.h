/* loadheap: moved to policies/loadheap.h (it reads the router's node views); this forward stays until sim/sim_int.h includes that. */
#ifndef KVSIM_LOADHEAP_H
#define KVSIM_LOADHEAP_H

#include "policies/loadheap.h"

#endif
