/**
 * One execution of one run: its checkpoint and context, the workflow (a command workflow's program included)
 * from the top, and the run handed back by how it ended.
 *
 * The fence is the take's `attempts`: it fences the execution's renewals, finish and release, so a copy that lost
 * the run (taken over while it stalled) can neither keep it alive nor re-queue it under its successor.
 *
 * Pause, cancel, a takeover and a drain all stop a run the same way: the step in hand finishes and commits,
 * and the next one is not started. Aborting a side effect halfway is the one outcome worse than either.
 */
import { Checkpoint } from '../../checkpoint/checkpoint';
import { LeaseLostError, RunParkedError, RunRejectedError } from '../../errors';
import type { RunRow, RunStore } from '../../store/contract';
import { startSpan } from '../../tracing';
import { WorkflowCatalog } from '../catalog';
import type { Family } from '../children';
import { RunContext } from '../context';
import { resolvePolicy } from '../retry-policy';
import type { RunLogWriter } from '../run-log';
import { startRun } from '../runs';
import { fillRunBudget, fillRunTotal } from '../workflow';
import { keepRunLease } from './liveness';
import type { WorkerSelf } from './options';

function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make();
    return made;
  };
}

export async function execute(
  self: WorkerSelf,
  run: RunRow,
  { draining, runLogs }: { draining: AbortSignal; runLogs: RunLogWriter },
): Promise<void> {
  const { store, registry } = self.o;
  // The worker's logger names the worker already; each line of this execution names the run too.
  const untraced = self.o.log.child({ runId: run.id, workflow: run.workflow });
  // The fence: this take's attempt number. A later take (by anyone, this worker id included) raises it.
  const attempt = run.attempts;
  const lease = keepRunLease(self, run.id, attempt);
  // Checked before each step and while a step waits for another holder, never inside a side effect.
  const stop = AbortSignal.any([lease.interrupted, draining]);
  // One span per execution: a child of the run's trace context, or the root of a new trace that the run keeps, so
  // every later execution (on any worker) continues it.
  const span = await startSpan('run', {
    parent: run.traceparent,
    attributes: { 'waybill.run_id': run.id, 'waybill.workflow': run.workflow, 'waybill.execution': attempt },
  });
  // A trace context that could not be kept is worth less than the run: the next execution starts a trace anew.
  if (span && run.traceparent === null) await store.keepTraceparent(run.id, span.traceparent).catch(() => undefined);
  let spanError: unknown;
  // Traced, each line of the execution names its trace, so a log pipeline joins the lines to the spans.
  const log = span ? untraced.child({ traceId: span.traceparent.split('-')[1] }) : untraced;
  const checkpoint = new Checkpoint(store, run.id, {
    workerId: self.id,
    leaseMs: self.o.claimLeaseMs,
    claimTtlMs: self.o.claimTtlMs,
    clock: self.clock,
    fence: attempt,
    onCommitted: (ms) => self.metrics.commitTook(ms),
  });
  try {
    const workflow = registry.get(run.workflow);
    const input = registry.parseInput(run.workflow, JSON.parse(run.inputJson));
    await fillRunTotal(store, run, self.id, workflow, input);
    await fillRunBudget(store, run, workflow);
    const retry = resolvePolicy(self.o.retry, { maxAttempts: workflow.maxAttempts }, workflow.retry);
    const ctx = new RunContext(
      run.id,
      checkpoint,
      stop,
      log,
      retry,
      self.clock,
      { store, workerId: self.id, attempt, clock: self.clock },
      {
        runLog: runLogs.forRun(run.id, self.id, attempt),
        controlPlaneUrl: self.o.programUrl,
        traceparent: span?.traceparent,
        streams: store,
        usage: { store, prices: self.o.prices },
        tags: store,
        // A child may be of any workflow some worker serves: this worker's own, checked by their code, or one
        // another published. Read when the run first starts a child, once.
        family: once(async (): Promise<Family> => {
          const workflows = await WorkflowCatalog.load(store, registry);
          return { start: (request) => startRun(store, workflows, request), getRun: (id) => store.getRun(id) };
        }),
      },
    );
    log.info('run started', { attempt });
    // However the workflow ends, a claim its last step took ahead for a step it did not run goes back before
    // the run does: left, it would sit out its lease and then look like a side effect in doubt.
    const output = await workflow.run(ctx, input).finally(() => checkpoint.releaseAhead().catch(() => undefined));
    if (
      await store.finishRun(
        run.id,
        self.id,
        { status: 'completed', outputJson: JSON.stringify(output) ?? 'null' },
        attempt,
      )
    ) {
      log.info('run completed');
      span?.set({ 'waybill.run.outcome': 'completed' });
    } else {
      await store.releaseRun(run.id, self.id, attempt);
      log.warn('run finished its steps but was cancelled or taken over meanwhile');
    }
  } catch (error) {
    if (error instanceof RunParkedError) {
      // Parked at a durable wait: the run is `waiting` and owns nothing; this release only drops our bookkeeping.
      await store.releaseRun(run.id, self.id, attempt);
      log.info('run waiting', { wait: error.waitName });
      span?.set({ 'waybill.run.outcome': 'waiting' });
    } else if (error instanceof RunRejectedError) {
      await store.finishRun(run.id, self.id, { status: 'rejected', error: error.note }, attempt);
      log.info('run rejected', { note: error.note });
      span?.set({ 'waybill.run.outcome': 'rejected' });
    } else if (stop.aborted || error instanceof LeaseLostError) {
      await store.releaseRun(run.id, self.id, attempt);
      const reason = stop.aborted ? (stop.reason as Error | undefined)?.message : String(error);
      // A pause is a pause: the step in hand committed, nothing failed, and the timeline has the operator's event.
      log.info('run stopped after its step in hand', { reason });
      span?.set({ 'waybill.run.outcome': 'stopped' });
    } else if (await stoppedMeanwhile(store, run.id)) {
      // Paused (or cancelled) while its step failed, before the heartbeat told us: the gateway pauses a run at
      // its budget and then refuses the call, so the step's error is the pause's doing. Stopped, not failed:
      // resumed, the step runs again.
      await store.releaseRun(run.id, self.id, attempt);
      log.info('run stopped: its step failed while the run was paused or cancelled', { error: String(error) });
      span?.set({ 'waybill.run.outcome': 'stopped' });
    } else {
      const message = error instanceof Error ? error.message : String(error);
      await store.finishRun(run.id, self.id, { status: 'failed', error: message }, attempt);
      log.error('run failed', { error: message });
      span?.set({ 'waybill.run.outcome': 'failed' });
      spanError = error;
    }
  } finally {
    lease.stop();
    span?.end(spanError);
  }
}

/** Whether the run was paused or cancelled; a store that cannot say leaves the failure standing. */
async function stoppedMeanwhile(store: Pick<RunStore, 'getRun'>, runId: string): Promise<boolean> {
  const status = (await store.getRun(runId).catch(() => null))?.status;
  return status === 'paused' || status === 'cancelled';
}
