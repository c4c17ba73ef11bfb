/* commands: kvsim subcommands that live outside main.c. */
#ifndef KVSIM_COMMANDS_H
#define KVSIM_COMMANDS_H

/* kvsim cost: one iteration's predicted time, term by term. */
int cmd_cost(int argc, char **argv);
/* kvsim calibrate: fit the roofline to the Vidur profiles. */
int cmd_calibrate(int argc, char **argv);

#endif
