/**
 * The article's experiment, run for real: a run of N notify steps, two worker processes, the one executing
 * step K killed with SIGKILL mid-execute, the other resuming (and, with several kills, a fresh worker started
 * for each one killed). Everything reported is counted from the store and the outbox, not inferred.
 *
 * The drill keeps to itself, whatever store it is given: its run is of a workflow only its own workers serve
 * (`waybill-drill`, the notify workflow under another name), its workers take that run and no other, and the
 * only processes it signals are the ones it started. The caller chooses the store: lib/cli/drill.ts gives it a
 * throwaway one unless told to work in place.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checkpoint } from '../checkpoint/checkpoint';
import { WaybillError } from '../errors';
import type { CommittedRow, RunStore, StepEvent, Store } from '../store/contract';
import { granularityAdvice } from './advice';
import { startRun } from './runs';
import { defineWorkflow, type WorkflowDefinition, WorkflowRegistry } from './workflow';
import { type NotifyInput, notifyWorkflow } from './workflows/notify';
import { type Delivery, readDeliveries } from './workflows/outbox';

export const DRILL_WORKFLOW = 'waybill-drill';
const OUTBOX = 'outbox.jsonl';

/**
 * The drill's workflow: notify, under a name no user's worker serves, so none takes the drill's run. Its
 * outbox is a path inside `dataDir`, as notify requires; the drill gives its workers a data directory of its own.
 */
export function drillWorkflow(dataDir: string): WorkflowDefinition<NotifyInput> {
  return defineWorkflow({ ...notifyWorkflow({ dataDir }), name: DRILL_WORKFLOW });
}

export interface DrillOptions {
  store: Store & RunStore;
  steps: number;
  /** The first kill's step; further kills are spread evenly over the steps after it. */
  killAt: number;
  kills: number;
  latencyMs: number;
  claimTtlMs: number;
  /** Starts one worker process with the given id, serving only the given run, with `dataDir` as WAYBILL_DATA_DIR. */
  spawnWorker: (id: string, runId: string, dataDir: string) => ChildProcess;
  onProgress?: (phase: 'running' | 'killed' | 'resumed', step: number) => void;
}

/** One kill and the recovery after it, each time measured from the SIGKILL. */
export interface KillReport {
  step: number;
  worker: string;
  /** The survivor's beat found the pid gone and expired the dead worker's claims (null: it never did). */
  releasedMs: number | null;
  /** The survivor took the run over. */
  takenMs: number | null;
  /** The first step begun by another worker: the recovery. */
  resumedMs: number;
  /** The first step another worker committed from the kill on: killAt itself, or the next one (see below). */
  resumedAtStep: number;
}

export interface DrillReport {
  runId: string;
  steps: number;
  killAt: number;
  killedWorker: string;
  kills: KillReport[];
  committed: number;
  lost: number;
  stepsRedone: number;
  /**
   * Side effects taken twice: a key the receiver delivered twice, or a step run again after an execution by a
   * worker that was not killed. Either breaks exactly-once; the drill fails on it.
   */
  executedTwice: number;
  /**
   * Steps run again because a worker was killed after its delivery and before its commit, the one window no
   * store can close, and refused by the receiver, which had the step's key: exactly-once kept by the key.
   */
  inDoubtRedone: number;
  duplicatesRefused: number;
  skipped: number;
  stepMs: number;
  saveMs: number;
  redoSaveRatio: number;
  /** The median of the kills' resumedMs; recoveryMaxMs their worst. */
  recoveryMs: number;
  recoveryMaxMs: number;
  advice: string;
}

export async function drill(o: DrillOptions): Promise<DrillReport> {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-drill-'));
  // The workers' data directory is the drill's own, and the outbox a path inside it, as notify requires.
  const outbox = join(dir, OUTBOX);
  const workers = new Map<string, ChildProcess>();
  let generation = 0;
  const all: ChildProcess[] = [];
  try {
    const run = await startRun(o.store, new WorkflowRegistry([drillWorkflow(dir)]), {
      workflow: DRILL_WORKFLOW,
      input: { count: o.steps, outbox: OUTBOX, latencyMs: o.latencyMs },
      id: `drill-${new Date()
        .toISOString()
        .replace(/[^0-9]/g, '')
        .slice(0, 14)}-${process.pid}`,
    });
    const spawnOne = () => {
      const id = `drill-${process.pid}-w${generation++}`;
      const child = o.spawnWorker(id, run.id, dir);
      workers.set(id, child);
      all.push(child);
    };
    spawnOne();
    spawnOne();

    const killed: { step: number; worker: string; atMs: number }[] = [];
    for (const planned of killSteps(o)) {
      // Never at or before a step already killed at: a late first kill may overtake the next planned one.
      const from = Math.max(planned, (killed.at(-1)?.step ?? -1) + 1);
      const kill = await killMidExecute(o, run.id, from, workers);
      killed.push(kill);
      o.onProgress?.('killed', kill.step);
      spawnOne();
    }
    await waitForEnd(o, run.id);

    const committed = await o.store.listCommitted(run.id, { limit: o.steps + 1 });
    const events = await o.store.listEvents(run.id, { limit: 100_000 });
    const redone = new Set(events.filter((e) => e.outcome === 'expired' && e.step !== null).map((e) => e.step));
    const twice = reexecutions(readDeliveries(outbox), new Set(killed.map((k) => k.worker)));
    const kills = killed.map((k) => recovery(k, committed, events));
    const stepMs = median(committed.map((c) => c.durationMs ?? 0));
    const saveMs = await measureSave(o.store, run.id);
    const ratio = stepMs / saveMs;
    const progress = await o.store.loadProgress(run.id);
    const resumed = kills.map((k) => k.resumedMs);
    return {
      runId: run.id,
      steps: o.steps,
      killAt: o.killAt,
      killedWorker: killed[0]!.worker,
      kills,
      committed: committed.length,
      lost: o.steps - committed.length,
      stepsRedone: redone.size,
      executedTwice: twice.unexplained,
      inDoubtRedone: twice.inDoubt,
      duplicatesRefused: twice.refused,
      skipped: progress?.skipped ?? 0,
      stepMs,
      saveMs,
      redoSaveRatio: ratio,
      recoveryMs: median(resumed),
      recoveryMaxMs: Math.max(...resumed),
      advice: granularityAdvice(ratio),
    };
  } finally {
    await Promise.all(all.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Every execution after a key's first, sorted by cause. A step is in doubt, and may run again, only when every
 * earlier execution was a killed worker's and the receiver refused them all but the first (as the group commit
 * crash test holds); anything else is a side effect run twice.
 */
export function reexecutions(
  deliveries: Delivery[],
  killed: Set<string>,
): { inDoubt: number; unexplained: number; refused: number } {
  const byKey = new Map<string, Delivery[]>();
  for (const d of deliveries) {
    const executions = byKey.get(d.key);
    if (executions) executions.push(d);
    else byKey.set(d.key, [d]);
  }
  let inDoubt = 0;
  let unexplained = 0;
  for (const executions of byKey.values()) {
    const again = executions.length - 1;
    if (again === 0) continue;
    const delivered = executions.filter((d) => d.status === 'delivered').length;
    const killedEarlier = executions.slice(0, -1).every((d) => d.worker !== null && killed.has(d.worker));
    if (delivered === 1 && killedEarlier) inDoubt += again;
    else unexplained += again;
  }
  return { inDoubt, unexplained, refused: deliveries.filter((d) => d.status === 'duplicate').length };
}

/** killAt, then the rest spread evenly over the steps after it, all before the last step. */
function killSteps(o: DrillOptions): number[] {
  const gap = (o.steps - o.killAt) / o.kills;
  return Array.from({ length: o.kills }, (_, i) => o.killAt + Math.floor(i * gap));
}

/**
 * What the store says happened after one kill. The first step the others committed from the kill on is
 * usually the step killed itself; but a kill that lands as the worker sends that step's commit lets the commit
 * through (it was already on the wire), and the step left in doubt is the next one, claimed in that commit.
 */
function recovery(
  k: { step: number; worker: string; atMs: number },
  committed: CommittedRow[],
  events: StepEvent[],
): KillReport {
  const after = (atS: number) => atS * 1000 - k.atMs;
  const begun = (c: CommittedRow) => c.committedAt * 1000 - (c.durationMs ?? 0);
  const resumedAt = committed
    .filter((c) => c.step !== null && c.step >= k.step && c.workerId !== k.worker && begun(c) >= k.atMs)
    .sort((a, b) => begun(a) - begun(b))[0];
  if (!resumedAt)
    throw new WaybillError('DRILL_FAILED', `no step from ${k.step} on was committed by another worker after the kill`);
  const released = events.find((e) => e.outcome === 'expired' && e.detail?.startsWith(`worker ${k.worker} died`));
  const taken = events.find((e) => e.outcome === 'expired' && e.detail?.startsWith(`run lease of ${k.worker} `));
  return {
    step: k.step,
    worker: k.worker,
    releasedMs: released ? after(released.at) : null,
    takenMs: taken ? after(taken.at) : null,
    resumedMs: begun(resumedAt) - k.atMs,
    resumedAtStep: resumedAt.step!,
  };
}

/**
 * Watches the claims until a step from `step` on is claimed by one of our workers, then SIGKILLs that worker.
 * Usually it is `step` itself; on a loaded machine one poll can take longer than a step (20 ms by default),
 * so the kill lands on the first step from there that the drill sees in flight, and the report names it.
 */
async function killMidExecute(
  o: DrillOptions,
  runId: string,
  step: number,
  workers: Map<string, ChildProcess>,
): Promise<{ step: number; worker: string; atMs: number }> {
  let lastStep = -1;
  for (;;) {
    const claims = await o.store.listClaims({ runId, claimTtlMs: o.claimTtlMs });
    const target = claims
      .filter((c) => c.step !== null && c.step >= step && c.workerId)
      .sort((a, b) => a.step! - b.step!)[0];
    if (target) {
      const child = workers.get(target.workerId!);
      // Only our own workers serve the drill's workflow; anything else holding its claim is not ours to kill.
      if (!child)
        throw new WaybillError(
          'DRILL_FAILED',
          `step ${target.step} is held by ${target.workerId}, which the drill did not start`,
        );
      child.kill('SIGKILL');
      const atMs = Date.now();
      workers.delete(target.workerId!);
      return { step: target.step!, worker: target.workerId!, atMs };
    }
    const progress = await o.store.loadProgress(runId);
    if ((progress?.step ?? 0) >= o.steps) {
      throw new WaybillError(
        'DRILL_FAILED',
        `the run finished before a step from ${step} on could be caught mid-execute; raise --latency-ms`,
      );
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
      throw new WaybillError(
        'DRILL_FAILED',
        `no progress past step ${step} for 60 s after the kill: no worker resumed the run`,
      );
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
