/* faults: the fault schedule: crashes, slow-downs, link faults, cooling. */
#ifndef KVSIM_FAULTS_H
#define KVSIM_FAULTS_H

#include <stdint.h>

struct sim;
struct event;

/* The faults' state (s->flt): faults in force, crashes so far; registers
 * the fault event kind and schedules every fault's start and end. 0, or
 * -1 (no memory). */
int faults_init(struct sim *s);
void faults_free(struct sim *s);
void faults_ev_fault(struct sim *s, const struct event *ev);

#endif
