/**
 * The article's experiment, run for real: a `notify` run of N steps on the configured store, two worker
 * processes, the one executing step K killed with SIGKILL mid-execute, the other resuming. Everything
 * reported is counted from the store and the outbox, not inferred.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checkpoint } from '../checkpoint/checkpoint';
import { WaybillError } from '../errors';
import type { RunStore, Store } from '../store/types';
import { granularityAdvice } from './advice';
import { startRun } from './runs';
import { readOutbox } from './workflows/outbox';
import type { WorkflowRegistry } from './workflow';

export interface DrillOptions {
  store: Store & RunStore;
  registry: WorkflowRegistry;
  steps: number;
  killAt: number;
  latencyMs: number;
  claimTtlMs: number;
  /** How to start one worker process with the given id, its data directory (WAYBILL_DATA_DIR) `dataDir`. */
  spawnWorker: (id: string, dataDir: string) => ChildProcess;
  onProgress?: (phase: 'running' | 'killed' | 'resumed', step: number) => void;
}

export interface DrillReport {
  runId: string;
  steps: number;
  killAt: number;
  killedWorker: string;
  committed: number;
  lost: number;
  stepsRedone: number;
  executedTwice: number;
  duplicatesRefused: number;
  skipped: number;
  stepMs: number;
  saveMs: number;
  redoSaveRatio: number;
  recoveryMs: number;
  advice: string;
}

export async function drill(o: DrillOptions): Promise<DrillReport> {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-drill-'));
  // The workers' data directory is the drill's own, and the outbox a path inside it, as notify requires.
  const outbox = join(dir, 'outbox.jsonl');
  const workers = [o.spawnWorker(`drill-a-${process.pid}`, dir), o.spawnWorker(`drill-b-${process.pid}`, dir)];
  try {
    const run = await startRun(o.store, o.registry, {
      workflow: 'notify', input: { count: o.steps, outbox: 'outbox.jsonl', latencyMs: o.latencyMs },
      id: `drill-${new Date().toISOString().replace(/[^0-9]/g, '').slice(0, 14)}-${process.pid}`,
    });
    const killed = await killMidExecute(o, run.id);
    o.onProgress?.('killed', o.killAt);
    await waitForEnd(o, run.id);

    const committed = await o.store.listCommitted(run.id, { limit: o.steps + 1 });
    const events = await o.store.listEvents(run.id, { limit: 100_000 });
    const redone = new Set(events.filter((e) => e.outcome === 'expired' && e.step !== null).map((e) => e.step));
    const mail = readOutbox(outbox);
    // The first step the surviving worker committed from the kill on. Usually step killAt itself; but a kill
    // that lands as the worker sends killAt's commit lets that commit through (it was already on the wire),
    // and the step left in doubt is the next one, claimed in that commit.
    const resumedAt = committed.find((c) => c.step !== null && c.step >= o.killAt && c.workerId !== killed.workerId);
    if (!resumedAt) throw new WaybillError('DRILL_FAILED', `no step from ${o.killAt} on was committed by another worker after the kill`);
    const stepMs = median(committed.map((c) => c.durationMs ?? 0));
    const saveMs = await measureSave(o.store, run.id);
    const ratio = stepMs / saveMs;
    const progress = await o.store.loadProgress(run.id);
    return {
      runId: run.id, steps: o.steps, killAt: o.killAt, killedWorker: killed.workerId,
      committed: committed.length, lost: o.steps - committed.length, stepsRedone: redone.size,
      executedTwice: mail.duplicates + (mail.delivered - mail.byKey.size), duplicatesRefused: mail.duplicates,
      skipped: progress?.skipped ?? 0, stepMs, saveMs, redoSaveRatio: ratio,
      recoveryMs: resumedAt.committedAt * 1000 - (resumedAt.durationMs ?? 0) - killed.atMs,
      advice: granularityAdvice(ratio),
    };
  } finally {
    await Promise.all(workers.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Watches the claims table until step killAt is claimed, then SIGKILLs the worker holding it. */
async function killMidExecute(o: DrillOptions, runId: string): Promise<{ workerId: string; atMs: number }> {
  let lastStep = -1;
  for (;;) {
    const claims = await o.store.listClaims({ runId, claimTtlMs: o.claimTtlMs });
    const target = claims.find((c) => c.step === o.killAt && c.workerId);
    if (target) {
      const worker = (await o.store.listWorkers()).find((w) => w.id === target.workerId);
      if (!worker) throw new WaybillError('DRILL_FAILED', `worker ${target.workerId} holds step ${o.killAt} but is not registered`);
      process.kill(worker.pid, 'SIGKILL');
      return { workerId: worker.id, atMs: Date.now() };
    }
    const progress = await o.store.loadProgress(runId);
    if ((progress?.step ?? 0) > o.killAt) {
      throw new WaybillError('DRILL_FAILED', `step ${o.killAt} finished before it could be caught mid-execute; raise --latency-ms`);
    }
    if (progress && progress.step !== lastStep) o.onProgress?.('running', (lastStep = progress.step));
    await sleep(1);
  }
}

/** Waits for completion; a run that makes no progress for a minute is reported, not waited on forever. */
async function waitForEnd(o: DrillOptions, runId: string): Promise<void> {
  let last = { step: -1, atMs: Date.now() };
  for (;;) {
    const run = await o.store.getRun(runId);
    if (run?.status === 'completed') return;
    if (run?.status !== 'running' && run?.status !== 'queued') {
      throw new WaybillError('DRILL_FAILED', `the drill run ended ${run?.status ?? 'missing'}: ${run?.error ?? ''}`);
    }
    const step = (await o.store.loadProgress(runId))?.step ?? 0;
    if (step !== last.step) last = { step, atMs: Date.now() };
    else if (Date.now() - last.atMs > 60_000) {
      throw new WaybillError('DRILL_FAILED', `no progress past step ${step} for 60 s after the kill: no worker resumed the run`);
    }
    o.onProgress?.('resumed', step);
    await sleep(100);
  }
}

/** The cost of one save: the run's final map written again, unchanged, a few dozen times. */
async function measureSave(store: Store, runId: string): Promise<number> {
  const checkpoint = new Checkpoint(store, runId);
  const { step, state } = await checkpoint.load();
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const started = performance.now();
    await checkpoint.saveProgress(step, state);
    times.push(performance.now() - started);
  }
  return median(times);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.floor(sorted.length / 2)]!;
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
