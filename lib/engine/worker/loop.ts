/**
 * A worker: the "sandbox" that executes runs and may die at any instant. It registers itself, heartbeats
 * (liveness.ts), takes runnable runs into its slots, executes each (execute.ts), sleeps while it has nothing to
 * take (idle.ts), and hands its runs back when told to stop. Between runs it keeps the store: schedules,
 * webhooks, prunes, and the metrics tally (tally.ts).
 *
 * One execution per run: each take of a run raises its `attempts`, the fence of that execution. A worker never
 * takes a run it still has in hand: stalled past its lease and woken up, it finds its own run "free" and would
 * otherwise run it twice beside itself.
 */

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Clock, every, systemClock } from '../../clock';
import type { RunLimits } from '../../domain/run-limits';
import { RunInterruptedError } from '../../errors';
import { machineId } from '../../machine';
import { flushTraces } from '../../tracing';
import type { Logger } from '../log';
import { pruneWorkersEvery, startPruning } from '../prune';
import { RunLogWriter } from '../run-log';
import { fireSchedules } from '../schedules/fire';
import { WebhookDispatcher } from '../webhooks/dispatch';
import { execute } from './execute';
import { Idle } from './idle';
import { Heartbeat } from './liveness';
import { WorkerMetrics } from './metrics';
import { type ResolvedOptions, resolveOptions, type WorkerOptions, type WorkerSelf } from './options';
import { advanceTallyEvery } from './tally';

export class Worker {
  readonly id: string;
  readonly host = hostname();
  readonly machine = machineId();
  private readonly clock: Clock;
  private readonly o: ResolvedOptions;
  /** What it measures of itself (metrics.ts), served by health.ts. */
  readonly metrics: WorkerMetrics;
  /** What the worker's parts (heartbeat, idle wait, executions) see of it. */
  private readonly self: WorkerSelf;
  private readonly draining = new AbortController();
  private readonly active = new Set<Promise<void>>();
  /** The runs being executed here now: never taken again until their execution ends. */
  private readonly inHand = new Set<string>();
  private readonly beats: Heartbeat;
  private readonly idle: Idle;
  /** The runs' logs, batched into the store (run-log.ts): one writer for every run this worker executes. */
  private readonly runLogs: RunLogWriter;
  /**
   * Its workflows' own concurrency and rate limits; undefined when none has any. The pick holds runs back by a
   * workflow's latest publication in the store, and by these only for a workflow the store has none of.
   */
  private readonly limits: Record<string, RunLimits> | undefined;

  constructor(options: WorkerOptions) {
    this.id = options.id ?? `${this.host}-${process.pid}-${randomBytes(2).toString('hex')}`;
    this.clock = options.clock ?? systemClock;
    const resolved = resolveOptions(options);
    // Bound once: every line this worker writes names it (lib/engine/log.ts), and none names it twice.
    this.o = { ...resolved, log: resolved.log.child({ workerId: this.id }) };
    this.metrics = options.metrics ?? new WorkerMetrics({ defaultMetrics: false });
    this.metrics.runsInHand(0, this.o.concurrency);
    this.self = {
      id: this.id,
      host: this.host,
      machine: this.machine,
      clock: this.clock,
      o: this.o,
      metrics: this.metrics,
    };
    this.runLogs = new RunLogWriter(this.o.store, {
      keep: this.o.runLogLines,
      clock: this.clock,
      log: this.o.log,
    });
    const limits = this.o.registry.limits();
    this.limits = Object.keys(limits).length > 0 ? limits : undefined;
    this.beats = new Heartbeat(this.self);
    this.idle = new Idle(this.self, this.draining.signal, () => this.active.size < this.o.concurrency);
  }

  /** Runs until stop() is called; resolves once every run in hand was finished or handed back. */
  async run(): Promise<void> {
    const { store, log } = this.o;
    await this.beats.register();
    const liveness = await store.holdLiveness(this.id);
    const unsubscribe = store.subscribeWakes((wake) => this.idle.onWake(wake));
    // A decision made in this process (the dashboard's, a test's) wakes the loop at once, with no round trip.
    const unsubscribeLocal = store.onLocalWake(() => this.wake());
    log.info('worker started', { concurrency: this.o.concurrency });
    const stopBeating = every(this.clock, this.o.heartbeatMs, () => void this.beats.beat());
    await this.beats.beat();
    const stopFiring = every(this.clock, this.o.scheduleMs, () => void this.fireSchedules());
    await this.fireSchedules();
    // Every worker posts the alert webhooks' outbox; the store hands each delivery to one of them at a time.
    const dispatcher =
      this.o.webhooks === false
        ? null
        : new WebhookDispatcher({
            ...this.o.webhooks,
            store,
            owner: this.id,
            clock: this.clock,
            log: log.child({ workerId: this.id }),
          });
    dispatcher?.start();
    const pruning = this.o.prune
      ? startPruning(this.o.store, this.o.prune, log, this.draining.signal, this.clock)
      : null;
    const workerPruning = pruneWorkersEvery(this.o.store, this.o.workerRetentionMs, log, this.clock);
    const tallying = advanceTallyEvery(this.o.store, log, this.clock);
    try {
      while (!this.draining.signal.aborted) {
        if (this.active.size < this.o.concurrency) {
          this.idle.picking();
          if (await this.takeOne()) continue;
        }
        await this.idle.sleep();
      }
      await Promise.allSettled([...this.active]);
    } finally {
      // The runs' last lines before the worker's row says it stopped: a reader then has them all.
      await this.runLogs.close();
      stopBeating();
      stopFiring();
      await dispatcher?.stop();
      unsubscribe();
      unsubscribeLocal();
      // A prune stops between batches when the worker drains; each batch is its own transaction.
      await Promise.all([pruning?.stop(), workerPruning.stop(), tallying.stop()]);
      await store.stopWorker(this.id).catch(() => {});
      await liveness.release().catch(() => {});
      await flushTraces().catch(() => {});
      log.info('worker stopped');
    }
  }

  /**
   * When its heartbeat last reached the store (ms since the epoch, on its clock), null before the first; and
   * how often it beats. A worker whose beats stopped landing is not ready (health.ts): its peers will soon
   * take its runs, and a commit it makes meanwhile only waits.
   */
  get heartbeat(): { lastAt: number | null; everyMs: number } {
    return { lastAt: this.beats.lastAt, everyMs: this.o.heartbeatMs };
  }

  /** Whether stop() was called: a draining worker takes no run, and says it is not ready. */
  get stopping(): boolean {
    return this.draining.signal.aborted;
  }

  /** The worker's logger: the one it was given, with its `workerId` bound. */
  get log(): Logger {
    return this.o.log;
  }

  /** Drain: the step in hand finishes, runs are handed back, run() resolves. */
  stop(): void {
    this.draining.abort(new RunInterruptedError('*', 'the worker is draining'));
  }

  /**
   * How the idle loop was woken so far: `notified` counts the wakes the store delivered for what this worker
   * serves (a run queued, a worker marked dead), `polled` the looks its timer made. What the tests count to prove
   * a pick came from a notification and not from the fallback poll.
   */
  get wakes(): { notified: number; polled: number } {
    return this.idle.wakes;
  }

  /** Whether the store delivers wakes now: the idle loop then looks at idlePollMs, else at pollMs. */
  get listening(): boolean {
    return this.idle.listening;
  }

  /**
   * What the idle loop is doing: asleep until a wake (or its idlePollMs poll), asleep until its pollMs poll
   * (no wakes delivered), or null: picking, or every slot busy and a pick about to follow.
   */
  get sleeping(): 'listening' | 'polling' | null {
    return this.idle.sleeping;
  }

  /**
   * Something may be runnable now (a decision queued a parked run, a slot came free): the idle loop looks at
   * once instead of at its next poll. Safe to call at any time, from anywhere; a wake with nothing to take
   * costs one empty pick.
   */
  wake(): void {
    this.idle.wake();
  }

  private firing = false;

  /**
   * Fires the schedules due (lib/engine/schedules): every worker does, and the store makes one run of each
   * tick however many fire it. One firing at a time, as a slow store must not stack them.
   */
  private async fireSchedules(): Promise<void> {
    if (this.firing || this.draining.signal.aborted) return;
    this.firing = true;
    try {
      const { fired } = await fireSchedules(this.o.store, this.o.log);
      if (fired.some((f) => f.created)) this.wake();
    } catch (error) {
      this.o.log.warn('could not fire schedules', { error: String(error) });
    } finally {
      this.firing = false;
    }
  }

  private async takeOne(): Promise<boolean> {
    try {
      const run = await this.o.store.claimRun({
        workerId: this.id,
        leaseMs: this.o.runLeaseMs,
        workflows: this.o.registry.names(),
        holding: [...this.inHand],
        runId: this.o.onlyRun,
        limits: this.limits,
      });
      if (!run) return false;
      this.inHand.add(run.id);
      this.metrics.runsInHand(this.inHand.size, this.o.concurrency);
      // execute() reports its own failures; a store error while handing back must not kill the worker.
      const done: Promise<void> = execute(this.self, run, { draining: this.draining.signal, runLogs: this.runLogs })
        .catch((error) =>
          this.o.log.error('run bookkeeping failed', { runId: run.id, workflow: run.workflow, error: String(error) }),
        )
        .finally(() => {
          this.active.delete(done);
          this.inHand.delete(run.id);
          this.metrics.runsInHand(this.inHand.size, this.o.concurrency);
          // A slot is free (and a run parked here may have left a due time): the loop looks now.
          this.wake();
        });
      this.active.add(done);
      return true;
    } catch (error) {
      this.o.log.warn('could not take a run', { error: String(error) });
      return false;
    }
  }
}
