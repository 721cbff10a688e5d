/**
 * A worker: the "sandbox" that executes runs and may die at any instant. It registers itself,
 * heartbeats, takes runnable runs, keeps their run leases alive and hands them back when told to stop.
 *
 * One execution per run: each take of a run raises its `attempts`, and that number fences the execution's
 * renewals, finish and release, so a copy that lost the run (taken over while it stalled) can neither keep
 * it alive nor re-queue it under its successor. A worker never takes a run it still has in hand: stalled past
 * its lease and woken up, it finds its own run "free" and would otherwise run it twice beside itself.
 *
 * Pause, cancel, a takeover and a drain all stop a run the same way: the step in hand finishes and commits,
 * and the next one is not started. Aborting a side effect halfway is the one outcome worse than either.
 *
 * Noticing a dead peer: a run lease only passes after WAYBILL_RUN_LEASE_MS, which must be long enough that a
 * busy worker (an event loop blocked for seconds) is never taken over. Proof does better than a timeout, and
 * a blocked worker still has both proofs of life:
 * - on the same machine (one kernel, one pid namespace: lib/store/machine.ts), its pid: gone (or a zombie),
 *   the dead worker's claims are released and its runs resume at the next beat;
 * - elsewhere, where the store can tell (PostgreSQL: a session lock each worker holds), the lock: seen held
 *   once, then free on LIVENESS_BEATS beats in a row while the peer's heartbeat did not move. Both, because a
 *   live worker that lost its connection has no lock for a moment; it also cannot heartbeat meanwhile, and it
 *   has its lock back within a beat of its connection.
 * Without either (SQLite across machines, a peer this worker never saw alive), the lease is the only
 * evidence, and the fencing token covers a worker that was merely paused.
 *
 * Idle, it sleeps until the store wakes it (store.subscribeWakes: PostgreSQL's NOTIFY from the transaction that
 * queued a run, SQLite's watcher), a slot of its own frees, or its poll timer fires: every idlePollMs while wakes
 * are delivered, for what nothing announces (a run lease passing, a sleep coming due), every pollMs while they
 * are not. A wake that arrives while it picks is kept, and it picks once more.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { Checkpoint } from '../checkpoint/checkpoint';
import { every, systemClock, type Clock } from '../clock';
import { LeaseLostError, RunInterruptedError, RunParkedError, RunRejectedError } from '../errors';
import { DEFAULT_LOG_KEEP } from '../store/log-lines';
import type { RunRow, RunStore, Store, Wake, WorkerRow } from '../store/types';
import { RunContext } from './context';
import { DEFAULT_RETRY, resolvePolicy, type ResolvedRetryPolicy } from './retry-policy';
import { silentLogger, type Logger } from './log';
import { RunLogWriter } from './run-log';
import { machineId, pidAlive } from '../store/machine';
import { pruneWorkersEvery, startPruning } from './prune';
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
  /** How often an idle worker looks for a runnable run while the store delivers no wakes (250 ms). */
  pollMs?: number;
  /**
   * How often it looks while the store does deliver them (WAYBILL_IDLE_POLL_MS, 2 s): a wake comes when a run is
   * queued, so this only catches what no commit announces, a run lease passing or a sleep's time coming.
   */
  idlePollMs?: number;
  heartbeatMs?: number;
  /**
   * Rows of workers stopped or silent longer than this are pruned (WAYBILL_WORKER_RETENTION, 24 h), at start
   * and then hourly (or as often as the retention, when shorter).
   */
  workerRetentionMs?: number;
  /**
   * The steps' defaults under every workflow's own policy: attempts, and the full-jitter backoff's first and
   * largest wait. A workflow's `retry` and a step's options override them.
   */
  retry?: { maxAttempts?: number; baseMs?: number; maxMs?: number };
  log?: Logger;
  /** Prune finished runs older than olderThanMs, at start and then every everyMs (an hour by default). */
  prune?: { olderThanMs: number; everyMs?: number };
  /** Once the worker's row exists and before it takes a run: where `waybill worker` publishes its workflows. */
  onRegistered?: (workerId: string) => Promise<void>;
  /** Take only this run (the drill's workers, which must leave every other run alone). */
  onlyRun?: string;
  /** The lines each run's log keeps in the store (WAYBILL_RUN_LOG_LINES); 2,000 by default. */
  runLogLines?: number;
  /**
   * The control plane's address, handed to the programs command workflows spawn (`waybill worker --url`, else
   * WAYBILL_URL): they checkpoint through its HTTP protocol.
   */
  programUrl?: string;
  /**
   * Heartbeats, idle polls, run-lease renewals, step retries' backoff and the checkpoint's timers run on it.
   * Give the store's own clock (a test's ManualClock); the system clock by default.
   */
  clock?: Clock;
}

export class Worker {
  readonly id: string;
  readonly host = hostname();
  readonly machine = machineId();
  private readonly draining = new AbortController();
  private readonly active = new Set<Promise<void>>();
  /** The runs being executed here now: never taken again until their execution ends. */
  private readonly inHand = new Set<string>();
  /** What each peer's proof of life looked like at our recent beats (see the header). */
  private readonly sightings = new Map<string, Sighting>();
  private beating = false;
  /**
   * Why the idle loop should look again now (a wake, a slot freed), set since its last pick began: a wake that
   * comes while a pick runs is not lost, the loop picks once more.
   */
  private pending = false;
  private wakeUp: (() => void) | null = null;
  private wakesLive = false;
  private asleep: 'listening' | 'polling' | null = null;
  private readonly woken = { notified: 0, polled: 0 };
  /** When the last pick began (monotonic): a wait that came due since then is looked for again at once. */
  private lookedAt = 0;
  private readonly clock: Clock;
  private readonly o: Required<
    Omit<WorkerOptions, 'id' | 'retry' | 'prune' | 'onRegistered' | 'onlyRun' | 'clock' | 'programUrl'>
  > & {
    retry: ResolvedRetryPolicy;
    prune?: WorkerOptions['prune'];
    onRegistered?: WorkerOptions['onRegistered'];
    onlyRun?: string;
    programUrl?: string;
  };
  /** The runs' logs, batched into the store (run-log.ts): one writer for every run this worker executes. */
  private readonly runLogs: RunLogWriter;

  constructor(options: WorkerOptions) {
    this.id = options.id ?? `${this.host}-${process.pid}-${randomBytes(2).toString('hex')}`;
    this.clock = options.clock ?? systemClock;
    const { clock: _clock, ...rest } = options;
    this.o = {
      concurrency: 1,
      runLeaseMs: 30_000,
      claimLeaseMs: 30_000,
      claimTtlMs: 30_000,
      pollMs: 250,
      idlePollMs: 2000,
      heartbeatMs: 1000,
      runLogLines: DEFAULT_LOG_KEEP,
      workerRetentionMs: 24 * 3_600_000,
      log: silentLogger,
      ...stripUndefined(rest),
      retry: resolvePolicy(DEFAULT_RETRY, {
        maxAttempts: options.retry?.maxAttempts,
        backoff: { initialMs: options.retry?.baseMs, maxMs: options.retry?.maxMs, jitter: true },
      }),
    };
    this.runLogs = new RunLogWriter(this.o.store, {
      keep: this.o.runLogLines,
      clock: this.clock,
      log: this.o.log.child({ workerId: this.id }),
    });
  }

  /** Runs until stop() is called; resolves once every run in hand was finished or handed back. */
  async run(): Promise<void> {
    const { store, log } = this.o;
    await store.registerWorker({
      id: this.id,
      host: this.host,
      pid: process.pid,
      machine: this.machine,
      slots: this.o.concurrency,
    });
    // A worker that could not say what it serves stops at once, and says so on its row.
    await this.o.onRegistered?.(this.id).catch(async (error) => {
      await store.stopWorker(this.id).catch(() => {});
      throw error;
    });
    const liveness = await store.holdLiveness(this.id);
    const unsubscribe = store.subscribeWakes((wake) => this.onWake(wake));
    // A decision made in this process (the dashboard's, a test's) wakes the loop at once, with no round trip.
    const unsubscribeLocal = store.onLocalWake(() => this.wake());
    log.info('worker started', { workerId: this.id, concurrency: this.o.concurrency });
    const stopBeating = every(this.clock, this.o.heartbeatMs, () => void this.beat());
    await this.beat();
    const pruning = this.o.prune
      ? startPruning(this.o.store, this.o.prune, log.child({ workerId: this.id }), this.draining.signal, this.clock)
      : null;
    const workerPruning = pruneWorkersEvery(this.o.store, this.o.workerRetentionMs, log, this.clock);
    try {
      while (!this.draining.signal.aborted) {
        if (this.active.size < this.o.concurrency) {
          this.pending = false;
          if (await this.takeOne()) continue;
        }
        await this.idle();
      }
      await Promise.allSettled([...this.active]);
    } finally {
      // The runs' last lines before the worker's row says it stopped: a reader then has them all.
      await this.runLogs.close();
      stopBeating();
      unsubscribe();
      unsubscribeLocal();
      // A prune stops between batches when the worker drains; each batch is its own transaction.
      await Promise.all([pruning?.stop(), workerPruning.stop()]);
      await store.stopWorker(this.id).catch(() => {});
      await liveness.release().catch(() => {});
      log.info('worker stopped', { workerId: this.id });
    }
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
    return { ...this.woken };
  }

  /** Whether the store delivers wakes now: the idle loop then looks at idlePollMs, else at pollMs. */
  get listening(): boolean {
    return this.wakesLive;
  }

  /**
   * What the idle loop is doing: asleep until a wake (or its idlePollMs poll), asleep until its pollMs poll
   * (no wakes delivered), or null: picking, or every slot busy and a pick about to follow.
   */
  get sleeping(): 'listening' | 'polling' | null {
    return this.asleep;
  }

  private onWake(wake: Wake): void {
    if (wake.kind === 'runnable') {
      // A run of a workflow served elsewhere: another worker's to take.
      if (wake.workflow !== undefined && !this.o.registry.has(wake.workflow)) return;
      this.woken.notified++;
    } else {
      // `lost`: the long sleep in progress must end, to poll at the short interval; `listening`: look now.
      this.wakesLive = wake.kind === 'listening';
    }
    this.wake();
  }

  /**
   * Something may be runnable now (a decision queued a parked run, a slot came free): the idle loop looks at
   * once instead of at its next poll. Safe to call at any time, from anywhere; a wake with nothing to take
   * costs one empty pick.
   */
  wake(): void {
    this.pending = true;
    this.wakeUp?.();
  }

  /**
   * Until a wake, a slot freed, the poll timer or the drain; at once if one of the first two came meanwhile. The
   * poll is cut short by the first wait due ahead (a sleep's end, a timeout) while a slot is free, so a run parked
   * for an hour wakes on time however long the poll: no notification can announce a time coming. Nothing spins:
   * a wait due before the pick's look is one this worker could not take, and nextWakeIn skips it; one that came
   * due since is looked for again at once.
   */
  private async idle(): Promise<void> {
    // Consumed here too: with every slot busy the loop does not pick, and must not spin on a wake it cannot use.
    if (this.pending) {
      this.pending = false;
      return;
    }
    const done = new AbortController();
    const woken = new Promise<'woken'>((resolve) => {
      this.wakeUp = () => resolve('woken');
    });
    let ms = (this.wakesLive ? this.o.idlePollMs : this.o.pollMs) * (0.5 + Math.random());
    if (this.active.size < this.o.concurrency) {
      // A wait that came due between the pick's look and this read would otherwise be slept past: it counts.
      const sinceMs = this.clock.monotonic() - this.lookedAt;
      const due = await this.o.store
        .nextWakeIn({ workflows: this.o.registry.names(), runId: this.o.onlyRun, sinceMs })
        .catch(() => null);
      if (due !== null) ms = Math.min(ms, due);
    }
    const timer = this.clock.sleep(ms, AbortSignal.any([done.signal, this.draining.signal])).then(
      () => 'polled' as const,
      () => 'stopped' as const,
    );
    this.asleep = this.wakesLive ? 'listening' : 'polling';
    const how = await Promise.race([woken, timer]);
    this.asleep = null;
    this.wakeUp = null;
    done.abort();
    if (how === 'polled') this.woken.polled++;
  }

  private async takeOne(): Promise<boolean> {
    this.lookedAt = this.clock.monotonic();
    try {
      const run = await this.o.store.claimRun({
        workerId: this.id,
        leaseMs: this.o.runLeaseMs,
        workflows: this.o.registry.names(),
        holding: [...this.inHand],
        runId: this.o.onlyRun,
      });
      if (!run) return false;
      this.inHand.add(run.id);
      // execute() reports its own failures; a store error while handing back must not kill the worker.
      const done: Promise<void> = this.execute(run)
        .catch((error) =>
          this.o.log.error('run bookkeeping failed', { runId: run.id, workerId: this.id, error: String(error) }),
        )
        .finally(() => {
          this.active.delete(done);
          this.inHand.delete(run.id);
          // A slot is free (and a run parked here may have left a due time): the loop looks now.
          this.wake();
        });
      this.active.add(done);
      return true;
    } catch (error) {
      this.o.log.warn('could not take a run', { workerId: this.id, error: String(error) });
      return false;
    }
  }

  private async beat(): Promise<void> {
    // One beat at a time: sightings are counted per beat, and a slow store must not make three of one.
    if (this.beating) return;
    this.beating = true;
    const { store, log } = this.o;
    try {
      if (!(await store.heartbeatWorker(this.id))) await this.registerAgain();
      const peers = (await store.listWorkers({ notStopped: true })).filter((peer) => peer.id !== this.id);
      const here = peers.filter((peer) => this.onThisMachine(peer));
      for (const peer of here) {
        if (pidAlive(peer.pid)) continue;
        await this.declareDead(peer, `pid ${peer.pid} is gone on ${peer.host}`);
      }
      const elsewhere = peers.filter((peer) => !this.onThisMachine(peer));
      const life = await store.livenessOf(elsewhere.map((peer) => peer.id));
      for (const id of this.sightings.keys()) if (!life.has(id)) this.sightings.delete(id);
      for (const peer of elsewhere) {
        if (this.lostItsLife(peer, life.get(peer.id) ?? 'unknown')) {
          await this.declareDead(peer, `its liveness lock is free and it has not beaten for ${LIVENESS_BEATS} beats`);
        }
      }
    } catch (error) {
      log.warn('heartbeat failed', { workerId: this.id, error: String(error) });
    } finally {
      this.beating = false;
    }
  }

  /**
   * Our row is gone: pruned while this process was silent past the retention (stopped for a day, then continued).
   * Peers judge us by it, and the start form by what it says we serve: written again, and published again.
   */
  private async registerAgain(): Promise<void> {
    const { store, log } = this.o;
    await store.registerWorker({
      id: this.id,
      host: this.host,
      pid: process.pid,
      machine: this.machine,
      slots: this.o.concurrency,
    });
    await this.o.onRegistered?.(this.id);
    log.warn('worker row was pruned while this worker was silent; registered again', { workerId: this.id });
  }

  private async declareDead(peer: WorkerRow, reason: string): Promise<void> {
    const released = await this.o.store.markWorkerDead(peer.id, reason);
    this.sightings.delete(peer.id);
    this.o.log.warn('peer worker died; its runs resume now', {
      workerId: this.id,
      peer: peer.id,
      reason,
      releasedClaims: released,
    });
  }

  /** Proof by pid is only possible where the pid lives; a peer of unknown machine (older rows) never qualifies. */
  private onThisMachine(peer: WorkerRow): boolean {
    return this.machine !== null && peer.machine === this.machine;
  }

  /**
   * Seen holding its lock once, then free with its heartbeat unmoved for LIVENESS_BEATS of our beats in a row.
   * A peer never seen holding one (a worker of an older Waybill, or one dead before we looked) is left to its lease.
   */
  private lostItsLife(peer: WorkerRow, life: 'held' | 'free' | 'unknown'): boolean {
    const seen = this.sightings.get(peer.id);
    if (life === 'held') {
      this.sightings.set(peer.id, { everHeld: true, freeBeats: 0, heartbeatAt: peer.heartbeatAt });
      return false;
    }
    if (life === 'unknown' || !seen?.everHeld) return false;
    const freeBeats = seen.heartbeatAt === peer.heartbeatAt ? seen.freeBeats + 1 : 1;
    this.sightings.set(peer.id, { everHeld: true, freeBeats, heartbeatAt: peer.heartbeatAt });
    return freeBeats >= LIVENESS_BEATS;
  }

  private async execute(run: RunRow): Promise<void> {
    const { store, registry } = this.o;
    const log = this.o.log.child({ runId: run.id, workflow: run.workflow, workerId: this.id });
    // The fence: this take's attempt number. A later take (by anyone, this worker id included) raises it.
    const attempt = run.attempts;
    const interrupted = new AbortController();
    const stopRenewing = every(this.clock, Math.min(this.o.runLeaseMs / 3, this.o.heartbeatMs), async () => {
      const lease = await store
        .renewRunLease(run.id, this.id, this.o.runLeaseMs, attempt)
        .catch(() => ({ held: true, status: null }));
      if (!lease.held) {
        interrupted.abort(
          new RunInterruptedError(
            run.id,
            lease.status === 'running' ? 'it was taken over' : `it is ${lease.status ?? 'gone'}`,
          ),
        );
      }
      // Renewing at the heartbeat, not at a third of the lease, is what makes pause and cancel felt within
      // a second: the renewal is where the worker learns the run's status.
    });
    // Checked before each step and while a step waits for another holder, never inside a side effect.
    const stop = AbortSignal.any([interrupted.signal, this.draining.signal]);
    const checkpoint = new Checkpoint(store, run.id, {
      workerId: this.id,
      leaseMs: this.o.claimLeaseMs,
      claimTtlMs: this.o.claimTtlMs,
      clock: this.clock,
      fence: attempt,
    });
    try {
      const workflow = registry.get(run.workflow);
      const input = registry.parseInput(run.workflow, JSON.parse(run.inputJson));
      await fillRunTotal(store, run, this.id, workflow, input);
      const retry = resolvePolicy(this.o.retry, { maxAttempts: workflow.maxAttempts }, workflow.retry);
      const ctx = new RunContext(
        run.id,
        checkpoint,
        stop,
        log,
        retry,
        this.clock,
        { store, workerId: this.id, attempt, clock: this.clock },
        { runLog: this.runLogs.forRun(run.id, this.id, attempt), controlPlaneUrl: this.o.programUrl },
      );
      log.info('run started', { attempt });
      // However the workflow ends, a claim its last step took ahead for a step it did not run goes back before
      // the run does: left, it would sit out its lease and then look like a side effect in doubt.
      const output = await workflow.run(ctx, input).finally(() => checkpoint.releaseAhead().catch(() => undefined));
      if (
        await store.finishRun(
          run.id,
          this.id,
          { status: 'completed', outputJson: JSON.stringify(output) ?? 'null' },
          attempt,
        )
      ) {
        log.info('run completed');
      } else {
        await store.releaseRun(run.id, this.id, attempt);
        log.warn('run finished its steps but was cancelled or taken over meanwhile');
      }
    } catch (error) {
      if (error instanceof RunParkedError) {
        // Parked at a durable wait: the run is `waiting` and owns nothing; this release only drops our bookkeeping.
        await store.releaseRun(run.id, this.id, attempt);
        log.info('run waiting', { wait: error.waitName });
      } else if (error instanceof RunRejectedError) {
        await store.finishRun(run.id, this.id, { status: 'rejected', error: error.note }, attempt);
        log.info('run rejected', { note: error.note });
      } else if (stop.aborted || error instanceof LeaseLostError) {
        await store.releaseRun(run.id, this.id, attempt);
        const reason = stop.aborted ? (stop.reason as Error | undefined)?.message : String(error);
        // A pause is a pause: the step in hand committed, nothing failed, and the timeline has the operator's event.
        log.info('run stopped after its step in hand', { reason });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        await store.finishRun(run.id, this.id, { status: 'failed', error: message }, attempt);
        log.error('run failed', { error: message });
      }
    } finally {
      stopRenewing();
    }
  }
}

/** Beats in a row a peer's lock must be seen free, its heartbeat unmoved, before it is called dead. */
const LIVENESS_BEATS = 3;

interface Sighting {
  everHeld: boolean;
  freeBeats: number;
  heartbeatAt: number;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
