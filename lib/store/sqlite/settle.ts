/**
 * The commits' side of committed_fresh (committed-rows.ts): a step's row goes in fresh, and once SETTLE_EVERY have
 * gone in on this connection since its last settle, the commit's transaction settles every fresh row, of
 * whichever runs, into committed_run_step.
 */
import { FRESH } from './committed-rows';
import type { SqliteConnection } from './connection';
import { statement } from './statement';

/** Fresh rows settled together: the trade between committed_fresh's size and a settle's leaves per run. */
export const SETTLE_EVERY = 2048;

/** Moves every fresh row into committed_run_step: the rows of the last SETTLE_EVERY commits, of whichever runs. */
const settle = statement<Record<string, never>>(
  `UPDATE committed INDEXED BY committed_fresh SET fresh = NULL WHERE ${FRESH()}`,
);

const freshCount = statement<Record<string, never>, { n: number }>(
  `SELECT count(*) AS n FROM committed INDEXED BY committed_fresh WHERE ${FRESH()}`,
);

/**
 * `committed()` after each fresh row a transaction inserts; the settle rides in that transaction. Counted per
 * connection, from the rows fresh when it opened: a worker killed and started again before its SETTLE_EVERY-th
 * commit takes up the count it left, so a fleet of short-lived workers still settles. A row a rolled-back
 * transaction inserted is counted all the same, which only brings a settle forward; a settle rolled back with its
 * batch (a request in it refused) waits for the next SETTLE_EVERY, so the fresh rows are at most twice as many
 * meanwhile. Another process's settle moves this one's rows too: each settles whatever is fresh.
 */
export function freshRows(c: SqliteConnection): { committed(): void } {
  let since = freshCount.on(c.db).get({})!.n;
  const update = settle.on(c.db);
  return {
    committed() {
      if (++since < SETTLE_EVERY) return;
      update.run({});
      since = 0;
    },
  };
}
