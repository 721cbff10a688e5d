/**
 * `waybill drill`: the article's experiment with real worker processes and a real SIGKILL. Flags are parsed
 * here; the experiment itself is lib/engine/drill.ts.
 *
 * Where it runs: a throwaway store beside the configured one (`--db`, else DATABASE_URL) — a temporary SQLite
 * file, or a temporary schema on the same PostgreSQL server, so the figures are that server's — removed
 * afterwards. `--in-place` runs it in the configured store itself (its run stays there, as history); even then
 * its workers take only its run, no other worker takes that run, and it kills only processes it started.
 */
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { type DrillReport, drill as runDrill } from '../engine/drill';
import { UsageError } from '../errors';
import { packagePath } from '../package-root';
import { check, count, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, withStoreMigrating } from './context';
import { bar, LiveBlock } from './format';
import { scratchStoreBeside } from './scratch-store';

export async function drill(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        steps: { type: 'string' },
        'kill-at': { type: 'string' },
        'latency-ms': { type: 'string' },
        kills: { type: 'string' },
        'in-place': { type: 'boolean' },
      },
    }),
  );
  const steps = values.steps === undefined ? 1000 : check(count(1_000_000), values.steps, '--steps');
  const killAt =
    values['kill-at'] === undefined
      ? Math.min(620, Math.floor(steps * 0.62))
      : check(z.string().regex(/^\d+$/, 'must be a whole number').transform(Number), values['kill-at'], '--kill-at');
  const latencyMs =
    values['latency-ms'] === undefined ? 20 : check(count(60_000), values['latency-ms'], '--latency-ms');
  const kills = values.kills === undefined ? 1 : check(count(1000), values.kills, '--kills');
  if (killAt >= steps) throw new UsageError(`--kill-at: must be below --steps (${steps})`);
  if (steps - killAt < kills)
    throw new UsageError(`--kills: at most ${steps - killAt} kills fit between --kill-at and --steps`);
  const cfg = cli.config();
  const configured = values.db ?? cfg.DATABASE_URL;
  const scratch = values['in-place'] ? null : await scratchStoreBeside(configured, 'waybill_drill');
  const db = scratch?.url ?? configured;
  const live = cli.tty && !values.json ? new LiveBlock(cli.stderr) : null;

  let report: DrillReport;
  try {
    report = await withStoreMigrating(cli, db, (store) =>
      runDrill({
        store: store,
        steps,
        killAt,
        kills,
        latencyMs,
        claimTtlMs: cfg.WAYBILL_CLAIM_TTL_MS,
        spawnWorker: (id, runId, dataDir) =>
          spawn(
            process.execPath,
            [packagePath('bin', 'waybill.mjs'), 'worker', '--db', db, '--id', id, '--drill', runId],
            {
              stdio: 'ignore',
              env: { ...process.env, WAYBILL_DATA_DIR: dataDir },
            },
          ),
        onProgress: (phase, step) => live?.update([`${phase.padEnd(8)} ${bar(step, steps)}`]),
      }),
    );
  } finally {
    live?.done();
    await scratch?.remove();
  }
  const where = scratch
    ? `a throwaway store (${scratch.where}, removed)`
    : `the store itself (${configured.replace(/\/\/[^@/]*@/, '//')})`;
  if (values.json) cli.json({ ...report, store: where });
  else cli.out(describe(report, where, cfg));
  return report.lost === 0 && report.executedTwice === 0 ? 0 : 1;
}

function describe(r: DrillReport, where: string, cfg: ReturnType<Cli['config']>): string {
  const ms = (v: number | null) => (v === null ? '—' : `${Math.round(v)} ms`);
  const each = r.kills.map(
    (k) =>
      `    step ${k.step}: ${k.worker} killed; claims expired ${ms(k.releasedMs)}, run taken ${ms(k.takenMs)},` +
      ` step ${k.resumedAtStep} begun ${ms(k.resumedMs)}`,
  );
  return [
    `drill ${r.runId} on ${where}`,
    `  ${r.steps} steps, ${r.kills.length === 1 ? `worker ${r.killedWorker} killed (SIGKILL) mid-execute at step ${r.killAt}` : `${r.kills.length} workers killed (SIGKILL) mid-execute from step ${r.killAt} on`}`,
    `  committed         ${r.committed} (lost ${r.lost})`,
    `  steps redone      ${r.stepsRedone}`,
    `  executed twice    ${r.executedTwice}`,
    `  redone in doubt   ${r.inDoubtRedone} (killed between delivery and commit; the receiver refused ${r.duplicatesRefused} by key)`,
    `  skipped on resume ${r.skipped}`,
    `  recovery          ${ms(r.recoveryMs)}${r.kills.length > 1 ? ` median, ${ms(r.recoveryMaxMs)} worst` : ''}, from the kill to the first step begun by another worker:`,
    ...each,
    `                    (the survivor's heartbeat, every ${cfg.WAYBILL_HEARTBEAT_MS} ms, finds the dead pid; without that proof,`,
    `                    e.g. a worker on another machine, the run lease (${cfg.WAYBILL_RUN_LEASE_MS} ms) and claim lease (${cfg.WAYBILL_LEASE_MS} ms) decide)`,
    `  redo ÷ save       ${r.redoSaveRatio.toFixed(1)} (a step ${r.stepMs.toFixed(2)} ms, a save ${r.saveMs.toFixed(3)} ms)`,
    `  advice            ${r.advice}`,
  ].join('\n');
}
