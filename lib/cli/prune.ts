/**
 * `waybill prune --older-than 30d`: deletes the committed rows, events, progress and runs row of finished
 * runs older than the limit, in batches (lib/store/prune.ts), and says what it removed. Ctrl-C stops it
 * between batches: what was removed stays removed, the rest is left for the next prune.
 */
import { parseArgs } from 'node:util';
import { durationSchema, MIN_RETENTION_MS } from '../duration';
import { pruneAll, retentionStore, rowsIn } from '../store/prune';
import type { PruneCounts, PruneRequest } from '../store/types';
import { GLOBAL_OPTIONS, UsageError, check, count, flags } from './args';
import { withStore, type Cli } from './context';
import { LiveBlock, bar } from './format';

export async function prune(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() => parseArgs({
    args, strict: true,
    options: {
      ...GLOBAL_OPTIONS, 'older-than': { type: 'string' }, 'dry-run': { type: 'boolean' },
      'include-external': { type: 'boolean' }, force: { type: 'boolean' }, 'batch-size': { type: 'string' },
    },
  }));
  const olderThan = values['older-than'];
  if (olderThan === undefined) throw new UsageError('missing --older-than DURATION (e.g. 30d)');
  const olderThanMs = check(durationSchema, olderThan, '--older-than');
  if (olderThanMs < MIN_RETENTION_MS && !values.force) {
    throw new UsageError(`--older-than: ${olderThan} is under 24h, and a pruned idempotency key can no longer deduplicate a retry (--force to prune anyway)`);
  }
  const batchSize = values['batch-size'] === undefined ? 500 : check(count(100_000), values['batch-size'], '--batch-size');
  // This host's clock: against a limit of a day or more, seconds of skew from the database do not matter.
  const request: PruneRequest = { before: Date.now() / 1000 - olderThanMs / 1000, includeExternal: Boolean(values['include-external']), batchSize };
  const dryRun = Boolean(values['dry-run']);

  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  let counts: PruneCounts;
  try {
    counts = await withStore(cli, values.db, async (store) => {
      const retention = retentionStore(store);
      const plan = await retention.planPrune(request);
      if (dryRun) return plan;
      const total = rowsIn(plan);
      const live = cli.tty && !values.json && total > 0 ? new LiveBlock(cli.stderr) : null;
      let lastLine = Date.now();
      const removed = await pruneAll(retention, request, {
        signal: interrupted.signal,
        onBatch: (_, soFar) => {
          // Rows removed may pass the plan's total when runs finished past the limit meanwhile.
          const done = Math.min(rowsIn(soFar), total);
          if (live) live.update([`pruning ${bar(done, total)}`]);
          else if (!values.json && Date.now() - lastLine >= 3000) {
            cli.err(`pruning: ${done}/${total} rows`);
            lastLine = Date.now();
          }
        },
      });
      live?.done();
      return removed;
    });
  } finally {
    process.off('SIGINT', onSigint);
  }

  const stopped = interrupted.signal.aborted;
  if (values.json) cli.json({ dryRun, olderThan, before: request.before, includeExternal: request.includeExternal, interrupted: stopped, ...counts });
  else cli.out(describe(counts, olderThan, dryRun, stopped));
  return stopped ? 130 : 0;
}

function describe(c: PruneCounts, olderThan: string, dryRun: boolean, stopped: boolean): string {
  const what = `${c.runs} finished run(s)${c.external ? ` and ${c.external} outside client run(s)` : ''} older than ${olderThan}`;
  const rows = `${c.committed} committed, ${c.events} events, ${c.progress} progress rows`;
  if (dryRun) return `would prune ${what}: ${rows}`;
  return `${stopped ? 'interrupted; pruned so far' : 'pruned'} ${what}: ${rows}`;
}
