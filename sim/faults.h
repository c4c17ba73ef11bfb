/* faults: the fault schedule: crashes, slow-downs, link faults, cooling. */
#ifndef KVSIM_FAULTS_H
#define KVSIM_FAULTS_H

#include <stdint.h>

struct sim;
struct event;

/* Schedules every fault's start and end events. 0, or -1 (no memory). */
int faults_schedule(struct sim *s);
void faults_ev_fault(struct sim *s, const struct event *ev);

#endif
