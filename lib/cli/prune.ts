/**
 * `waybill prune --older-than 30d`: deletes the committed rows, events, progress and runs row of finished
 * runs older than the limit, in batches (lib/store/shared/prune.ts), and says what it removed. Ctrl-C stops it
 * between batches: what was removed stays removed, the rest is left for the next prune.
 */
import { parseArgs } from 'node:util';
import { retention } from '../control';
import { describeCounts } from '../control/retention';
import { UsageError } from '../errors';
import { rowsIn } from '../store/shared/prune';
import { check, count, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, callerOf, withControl } from './context';
import { bar, LiveBlock } from './format';

export async function prune(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        'older-than': { type: 'string' },
        'dry-run': { type: 'boolean' },
        'include-external': { type: 'boolean' },
        force: { type: 'boolean' },
        'batch-size': { type: 'string' },
        reason: { type: 'string' },
      },
    }),
  );
  const olderThan = values['older-than'];
  if (olderThan === undefined) throw new UsageError('missing --older-than DURATION (e.g. 30d)');
  const batchSize =
    values['batch-size'] === undefined ? undefined : check(count(100_000), values['batch-size'], '--batch-size');
  const caller = callerOf(cli, values.as);

  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  let report: retention.PruneReport;
  try {
    report = await withControl(cli, values.db, async (deps) => {
      let total = 0;
      let live: LiveBlock | null = null;
      let lastLine = Date.now();
      const done = await retention.prune(
        deps,
        caller,
        {
          olderThan,
          force: Boolean(values.force),
          includeExternal: Boolean(values['include-external']),
          batchSize,
          dryRun: Boolean(values['dry-run']),
          reason: values.reason,
        },
        {
          nowMs: Date.now(),
          signal: interrupted.signal,
          onPlan: (plan) => {
            total = rowsIn(plan);
            live = cli.tty && !values.json && total > 0 ? new LiveBlock(cli.stderr) : null;
          },
          onBatch: (soFar) => {
            // Rows removed may pass the plan's total when runs finished past the limit meanwhile.
            const removed = Math.min(rowsIn(soFar), total);
            if (live) live.update([`pruning ${bar(removed, total)}`]);
            else if (!values.json && Date.now() - lastLine >= 3000) {
              cli.err(`pruning: ${removed}/${total} rows`);
              lastLine = Date.now();
            }
          },
        },
      );
      (live as LiveBlock | null)?.done();
      return done;
    });
  } finally {
    process.off('SIGINT', onSigint);
  }

  if (values.json) cli.json(report);
  else
    cli.out(
      report.dryRun
        ? `would prune ${describeCounts(report, olderThan)}`
        : `${report.interrupted ? 'interrupted; pruned so far' : 'pruned'} ${describeCounts(report, olderThan)}`,
    );
  return report.interrupted ? 130 : 0;
}
