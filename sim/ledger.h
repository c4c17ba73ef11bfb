/* ledger: the computed-before record (docs/design.md, section 6): which blocks some node computed before. */
#ifndef KVSIM_LEDGER_H
#define KVSIM_LEDGER_H

#include <stddef.h>
#include <stdint.h>

struct sim;
struct request;

/* The ledger's state (s->led), one empty tree (epoch 0); after the
 * workload is made (its epochs). 0, or -1 when memory runs out. */
int ledger_init(struct sim *s);
void ledger_free(struct sim *s);
/* Epochs forgotten, and the most blocks held at once. */
void ledger_stats(const struct sim *s, uint64_t *epochs_forgotten, size_t *blocks_peak);
/* r enters the system, from the source (from_source) or as a follow-up;
 * ledger_leave: it has left. */
void ledger_arrive(struct sim *s, const struct request *r, int from_source);
void ledger_leave(struct sim *s, const struct request *r);
/* node_hooks.on_blocks_computed, .computed_before, .computed_never */
void ledger_on_blocks_computed(void *ctx, struct request *r, uint32_t from, uint32_t to);
uint32_t ledger_computed_before(void *ctx, const struct request *r, uint32_t idx, uint32_t end);
uint32_t ledger_computed_never(void *ctx, const struct request *r, uint32_t idx, uint32_t end);

#endif
