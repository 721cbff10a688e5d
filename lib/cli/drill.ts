/**
 * `waybill drill`: the article's experiment on the configured store, with real worker processes and a
 * real SIGKILL. Flags are parsed here; the experiment itself is lib/engine/drill.ts.
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { drill as runDrill, type DrillReport } from '../engine/drill';
import { GLOBAL_OPTIONS, UsageError, check, count, flags } from './args';
import { runStore, withStore, type Cli } from './context';
import { packagePath } from '../launch/paths';
import { LiveBlock, bar } from './format';

// Found from the package root: this file runs from lib/cli in a checkout and bundled into dist/ when installed.
const CLI_ENTRY = packagePath('bin', 'waybill.mjs');

export async function drill(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() => parseArgs({
    args, strict: true,
    options: { ...GLOBAL_OPTIONS, steps: { type: 'string' }, 'kill-at': { type: 'string' }, 'latency-ms': { type: 'string' } },
  }));
  const steps = values.steps === undefined ? 1000 : check(count(1_000_000), values.steps, '--steps');
  const killAt = values['kill-at'] === undefined ? Math.min(620, Math.floor(steps * 0.62)) : check(
    z.string().regex(/^\d+$/, 'must be a whole number').transform(Number), values['kill-at'], '--kill-at');
  const latencyMs = values['latency-ms'] === undefined ? 20 : check(count(60_000), values['latency-ms'], '--latency-ms');
  if (killAt >= steps) throw new UsageError(`--kill-at: must be below --steps (${steps})`);
  const cfg = cli.config();
  const db = values.db ?? cfg.DATABASE_URL;
  const registry = await cli.registry();
  const live = cli.tty && !values.json ? new LiveBlock(cli.stderr) : null;

  const report = await withStore(cli, values.db, (store) => runDrill({
    store: runStore(store), registry, steps, killAt, latencyMs, claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS,
    spawnWorker: (id, dataDir) => spawn(process.execPath, [CLI_ENTRY, 'worker', '--db', db, '--id', id],
      { stdio: 'ignore', env: { ...process.env, WAYBILL_DATA_DIR: dataDir } }),
    onProgress: (phase, step) => live?.update([`${phase.padEnd(8)} ${bar(step, steps)}`]),
  }));
  live?.done();
  if (values.json) cli.json(report);
  else cli.out(describe(report));
  return report.lost === 0 && report.executedTwice === 0 ? 0 : 1;
}

function describe(r: DrillReport): string {
  return [
    `drill ${r.runId}: ${r.steps} steps, worker ${r.killedWorker} killed (SIGKILL) mid-execute at step ${r.killAt}`,
    `  committed         ${r.committed} (lost ${r.lost})`,
    `  steps redone      ${r.stepsRedone}`,
    `  executed twice    ${r.executedTwice} (duplicates refused by the receiver: ${r.duplicatesRefused})`,
    `  skipped on resume ${r.skipped}`,
    `  recovery          ${Math.round(r.recoveryMs)} ms from the kill to the first step executed by another worker`,
    `  redo ÷ save       ${r.redoSaveRatio.toFixed(1)} (a step ${r.stepMs.toFixed(2)} ms, a save ${r.saveMs.toFixed(3)} ms)`,
    `  advice            ${r.advice}`,
  ].join('\n');
}
