/**
 * `waybill seed-demo`: writes a synthetic history (finished, running, failed and paused runs, their
 * committed steps and events, orphaned claims) for trying the dashboard at scale. Flags are checked here;
 * the rows are lib/store/seed's, inserted in bulk on the backend's own connection.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { openBackend } from '../store/index';
import { type SeedReport, seedDemo as seed } from '../store/seed/index';
import { check, count, flags, GLOBAL_OPTIONS } from './args';
import type { Cli } from './context';
import { bar, LiveBlock } from './format';

const prefixSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, 'letters, digits, _ . - (at most 40), starting with a letter or digit');

export async function seedDemo(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        runs: { type: 'string' },
        steps: { type: 'string' },
        'big-run-steps': { type: 'string' },
        prefix: { type: 'string' },
      },
    }),
  );
  const options = {
    runs: values.runs === undefined ? 100 : check(count(1_000_000), values.runs, '--runs'),
    steps: values.steps === undefined ? 50 : check(count(100_000), values.steps, '--steps'),
    bigRunSteps:
      values['big-run-steps'] === undefined ? 0 : check(count(10_000_000), values['big-run-steps'], '--big-run-steps'),
    prefix: values.prefix === undefined ? 'seed' : check(prefixSchema, values.prefix, '--prefix'),
  };
  const live = cli.tty && !values.json ? new LiveBlock(cli.stderr) : null;
  const started = performance.now();
  let lastLine = 0;
  const cfg = cli.config();
  // The backend itself, not only the Store: the seed writes in bulk on its connection.
  const store = await openBackend(values.db ?? cfg.DATABASE_URL, { synchronous: cfg.WAYBILL_SQLITE_SYNC });
  let report: SeedReport;
  try {
    report = await seed(store, options, (done, total) => {
      if (live) live.update([`seeding ${bar(done, total)} committed rows`]);
      else if (!values.json && performance.now() - lastLine > 5000) {
        // Not a terminal (a log file, CI): a plain line every few seconds instead of a redrawn bar.
        lastLine = performance.now();
        cli.err(`seeding: ${done}/${total} committed rows`);
      }
    });
  } finally {
    await store.close();
  }
  live?.done();
  const seconds = (performance.now() - started) / 1000;
  if (values.json) {
    cli.json({ ...report, seconds: Math.round(seconds * 100) / 100 });
    return 0;
  }
  const s = report.byStatus;
  cli.out(
    `seeded ${report.runs} runs (${s.completed} completed, ${s.running} running, ${s.failed} failed, ${s.paused} paused), ` +
      `${report.committed} committed steps, ${report.events} events, ${report.claims} claims (${report.orphanedClaims} orphaned), ` +
      `${report.workers} workers in ${seconds.toFixed(1)} s`,
  );
  return 0;
}
