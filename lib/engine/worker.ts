/**
 * A worker: the "sandbox" that executes runs and may die at any instant. It registers itself,
 * heartbeats, takes runnable runs, keeps their run leases alive and hands them back when told to stop.
 *
 * Noticing a dead peer: a run lease only passes after WAYBILL_RUN_LEASE_MS, which must be long enough that a
 * busy worker (an event loop blocked for seconds) is never taken over. A peer on the same host can do better
 * with proof instead of a timeout: if the dead worker's pid is gone, its claims are released and its runs
 * resume at once. Across hosts, the lease is the only evidence, and the fencing token covers a worker that
 * was merely paused.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checkpoint } from '../checkpoint/checkpoint';
import { LeaseLostError, WaybillError } from '../errors';
import type { RunRow, RunStore, Store } from '../store/types';
import { RunContext, type RetryPolicy } from './context';
import { silentLogger, type Logger } from './log';
import { startPruning } from './prune';
import { fillRunTotal, type WorkflowRegistry } from './workflow';

export interface WorkerOptions {
  store: Store & RunStore;
  registry: WorkflowRegistry;
  id?: string;
  concurrency?: number;
  /** Run lease: how long a silent worker keeps its runs. Renewed every third of it. */
  runLeaseMs?: number;
  /** Step claim lease (Checkpoint leaseMs). */
  claimLeaseMs?: number;
  claimTtlMs?: number;
  pollMs?: number;
  heartbeatMs?: number;
  retry?: Partial<RetryPolicy>;
  log?: Logger;
  /** Prune finished runs older than olderThanMs, at start and then every everyMs (an hour by default). */
  prune?: { olderThanMs: number; everyMs?: number };
  /** Once the worker's row exists and before it takes a run: where `waybill worker` publishes its workflows. */
  onRegistered?: (workerId: string) => Promise<void>;
}

/** Why a run stopped without finishing: it was paused, cancelled or taken over, or the worker drains. */
export class RunInterruptedError extends WaybillError {
  constructor(runId: string, readonly reason: string) {
    super('RUN_INTERRUPTED', `run ${runId} interrupted: ${reason}`);
  }
}

export class Worker {
  readonly id: string;
  readonly host = hostname();
  private readonly draining = new AbortController();
  private readonly active = new Set<Promise<void>>();
  private readonly o: Required<Omit<WorkerOptions, 'id' | 'retry' | 'prune' | 'onRegistered'>> & {
    retry: RetryPolicy; prune?: WorkerOptions['prune']; onRegistered?: WorkerOptions['onRegistered'];
  };

  constructor(options: WorkerOptions) {
    this.id = options.id ?? `${this.host}-${process.pid}-${randomBytes(2).toString('hex')}`;
    this.o = {
      concurrency: 1, runLeaseMs: 30_000, claimLeaseMs: 30_000, claimTtlMs: 30_000, pollMs: 250, heartbeatMs: 1000,
      log: silentLogger, ...stripUndefined(options),
      retry: { maxAttempts: 3, baseMs: 200, maxMs: 10_000, ...options.retry },
    };
  }

  /** Runs until stop() is called; resolves once every run in hand was finished or handed back. */
  async run(): Promise<void> {
    const { store, log } = this.o;
    await store.registerWorker({ id: this.id, host: this.host, pid: process.pid });
    // A worker that could not say what it serves stops at once, and says so on its row.
    await this.o.onRegistered?.(this.id).catch(async (error) => {
      await store.stopWorker(this.id).catch(() => {});
      throw error;
    });
    log.info('worker started', { workerId: this.id, concurrency: this.o.concurrency });
    const heartbeat = setInterval(() => void this.beat(), this.o.heartbeatMs);
    await this.beat();
    const pruning = this.o.prune ? startPruning(this.o.store, this.o.prune, log.child({ workerId: this.id }), this.draining.signal) : null;
    try {
      while (!this.draining.signal.aborted) {
        if (this.active.size < this.o.concurrency && (await this.takeOne())) continue;
        await sleep(this.o.pollMs * (0.5 + Math.random()), undefined, { signal: this.draining.signal }).catch(() => {});
      }
      await Promise.allSettled([...this.active]);
    } finally {
      clearInterval(heartbeat);
      // A prune stops between batches when the worker drains; each batch is its own transaction.
      await pruning?.stop();
      await store.stopWorker(this.id).catch(() => {});
      log.info('worker stopped', { workerId: this.id });
    }
  }

  /** Drain: the step in hand finishes, runs are handed back, run() resolves. */
  stop(): void {
    this.draining.abort(new RunInterruptedError('*', 'the worker is draining'));
  }

  private async takeOne(): Promise<boolean> {
    try {
      const run = await this.o.store.claimRun({ workerId: this.id, leaseMs: this.o.runLeaseMs, workflows: this.o.registry.names() });
      if (!run) return false;
      // execute() reports its own failures; a store error while handing back must not kill the worker.
      const done: Promise<void> = this.execute(run)
        .catch((error) => this.o.log.error('run bookkeeping failed', { runId: run.id, workerId: this.id, error: String(error) }))
        .finally(() => this.active.delete(done));
      this.active.add(done);
      return true;
    } catch (error) {
      this.o.log.warn('could not take a run', { workerId: this.id, error: String(error) });
      return false;
    }
  }

  private async beat(): Promise<void> {
    const { store, log } = this.o;
    try {
      await store.heartbeatWorker(this.id);
      for (const peer of await store.listWorkers()) {
        if (peer.id === this.id || peer.host !== this.host || peer.stoppedAt !== null || pidAlive(peer.pid)) continue;
        const released = await store.markWorkerDead(peer.id, `pid ${peer.pid} is gone on ${this.host}`);
        log.warn('peer worker died; its runs resume now', { workerId: this.id, peer: peer.id, releasedClaims: released });
      }
    } catch (error) {
      log.warn('heartbeat failed', { workerId: this.id, error: String(error) });
    }
  }

  private async execute(run: RunRow): Promise<void> {
    const { store, registry } = this.o;
    const log = this.o.log.child({ runId: run.id, workflow: run.workflow, workerId: this.id });
    const interrupted = new AbortController();
    const renew = setInterval(async () => {
      const lease = await store.renewRunLease(run.id, this.id, this.o.runLeaseMs).catch(() => ({ held: true, status: null }));
      if (!lease.held) interrupted.abort(new RunInterruptedError(run.id, `it is ${lease.status ?? 'gone'}`));
      // Renewing at the heartbeat, not at a third of the lease, is what makes pause and cancel felt within
      // a second: the renewal is where the worker learns the run's status.
    }, Math.min(this.o.runLeaseMs / 3, this.o.heartbeatMs));
    const betweenSteps = AbortSignal.any([interrupted.signal, this.draining.signal]);
    const checkpoint = new Checkpoint(store, run.id, {
      workerId: this.id, leaseMs: this.o.claimLeaseMs, claimTtlMs: this.o.claimTtlMs,
    });
    try {
      const workflow = registry.get(run.workflow);
      const input = registry.parseInput(run.workflow, JSON.parse(run.inputJson));
      await fillRunTotal(store, run, this.id, workflow, input);
      const retry = { ...this.o.retry, maxAttempts: workflow.maxAttempts ?? this.o.retry.maxAttempts };
      const ctx = new RunContext(run.id, checkpoint, betweenSteps, log, retry, interrupted.signal);
      log.info('run started', { attempt: run.attempts });
      // However the workflow ends, a claim its last step took ahead for a step it did not run goes back before
      // the run does: left, it would sit out its lease and then look like a side effect in doubt.
      const output = await workflow.run(ctx, input).finally(() => checkpoint.releaseAhead().catch(() => undefined));
      if (await store.finishRun(run.id, this.id, { status: 'completed', outputJson: JSON.stringify(output) ?? 'null' })) {
        log.info('run completed');
      } else {
        await store.releaseRun(run.id, this.id);
        log.warn('run finished its steps but was cancelled or taken over meanwhile');
      }
    } catch (error) {
      if (betweenSteps.aborted || error instanceof LeaseLostError) {
        await store.releaseRun(run.id, this.id);
        log.info('run handed back', { reason: String(betweenSteps.reason?.message ?? error) });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        await store.finishRun(run.id, this.id, { status: 'failed', error: message });
        log.error('run failed', { error: message });
      }
    } finally {
      clearInterval(renew);
    }
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
