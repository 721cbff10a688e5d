/**
 * `waybill seed-demo`: writes a synthetic history (finished, running, failed and paused runs, their
 * committed steps and events, orphaned claims) for trying the dashboard at scale. Flags are checked here;
 * the rows are lib/store/seed.ts's, inserted in bulk by the backend.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { WaybillError } from '../errors';
import type { SeedStore } from '../store/seed';
import type { Store } from '../store/types';
import { GLOBAL_OPTIONS, check, count, flags } from './args';
import { withStore, type Cli } from './context';
import { LiveBlock, bar } from './format';

const prefixSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/, 'letters, digits, _ . - (at most 40), starting with a letter or digit');

export async function seedDemo(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() => parseArgs({
    args, strict: true,
    options: { ...GLOBAL_OPTIONS, runs: { type: 'string' }, steps: { type: 'string' }, 'big-run-steps': { type: 'string' }, prefix: { type: 'string' } },
  }));
  const options = {
    runs: values.runs === undefined ? 100 : check(count(1_000_000), values.runs, '--runs'),
    steps: values.steps === undefined ? 50 : check(count(100_000), values.steps, '--steps'),
    bigRunSteps: values['big-run-steps'] === undefined ? 0 : check(count(10_000_000), values['big-run-steps'], '--big-run-steps'),
    prefix: values.prefix === undefined ? 'seed' : check(prefixSchema, values.prefix, '--prefix'),
  };
  const live = cli.tty && !values.json ? new LiveBlock(cli.stderr) : null;
  const started = performance.now();
  let lastLine = 0;
  const report = await withStore(cli, values.db, (store) => seedStore(store).seedDemo(options, (done, total) => {
    if (live) live.update([`seeding ${bar(done, total)} committed rows`]);
    else if (!values.json && performance.now() - lastLine > 5000) {
      // Not a terminal (a log file, CI): a plain line every few seconds instead of a redrawn bar.
      lastLine = performance.now();
      cli.err(`seeding: ${done}/${total} committed rows`);
    }
  }));
  live?.done();
  const seconds = (performance.now() - started) / 1000;
  if (values.json) {
    cli.json({ ...report, seconds: Math.round(seconds * 100) / 100 });
    return 0;
  }
  const s = report.byStatus;
  cli.out(`seeded ${report.runs} runs (${s.completed} completed, ${s.running} running, ${s.failed} failed, ${s.paused} paused), ` +
    `${report.committed} committed steps, ${report.events} events, ${report.claims} claims (${report.orphanedClaims} orphaned), ` +
    `${report.workers} workers in ${seconds.toFixed(1)} s`);
  return 0;
}

function seedStore(store: Store): Store & SeedStore {
  if (typeof (store as Partial<SeedStore>).seedDemo !== 'function') {
    throw new WaybillError('UNSUPPORTED', `the ${store.dialect} store cannot seed`);
  }
  return store as Store & SeedStore;
}
