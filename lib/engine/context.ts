/**
 * What a workflow sees of its run: exactly-once steps with retries, the map, a signal, a logger.
 * Each step runs under a retry policy (lib/engine/retry-policy.ts): its own options over its workflow's
 * `retry` over the worker's defaults. Errors that retrying cannot fix (a lost lease, a reused key, an abort,
 * a NonRetryableError) pass straight up; the others are retried until the policy's attempts are spent.
 */
import type { Checkpoint, RunOnceOptions, StepContext, StepResult } from '../checkpoint/checkpoint';
import { type Clock, systemClock } from '../clock';
import { LeaseLostError, NonRetryableError, RunParkedError, StepFailedError } from '../errors';
import type { RunTagStore, RunTags, StepStreamStore } from '../store/contract';
import { inSpan } from '../tracing';
import {
  awaitChild,
  awaitFirstChild,
  type ChildOptions,
  type ChildOutcome,
  childRunId,
  type Family,
  startChildRun,
  type WaitChildOptions,
} from './children';
import { type EventResult, type WaitForEventOptions, waitForEvent } from './events';
import type { Logger } from './log';
import {
  backoffMs,
  checkRetryPolicy,
  DEFAULT_RETRY,
  POLICY_FIELDS,
  type ResolvedRetryPolicy,
  type RetryPolicy,
  resolvePolicy,
  retryableUnder,
} from './retry-policy';
import { noRunLog, type RunLog } from './run-log';
import { childTags, type TagMethod, tagChange, writeTagChange } from './run-tags';
import { type StreamingStepContext, streamingStep } from './step-stream';
import { type UsageRecorder, type UsageReport, usageStep } from './step-usage';
import {
  type Approval,
  type ApprovalOptions,
  type Parking,
  type SignalResult,
  sleepUntil,
  waitForApproval,
  waitForSignal,
} from './waits';

export type { RetryPolicy } from './retry-policy';
export type { StreamingStepContext } from './step-stream';
export type { UsageRecorder, UsageReport } from './step-usage';

/** What ctx.step and ctx.runOnce take: the checkpoint's options (the run sets signal and attempt) and a retry policy. */
export type StepOptions = Omit<RunOnceOptions, 'signal' | 'attempt' | 'timeoutMs' | 'nextAttempt'> & RetryPolicy;

/** What a worker gives each run it executes besides the checkpoint (see RunContext's members). */
export interface RunHost {
  runLog?: RunLog;
  controlPlaneUrl?: string;
  /** The execution's run span (lib/tracing.ts): its steps' and waits' spans are its children. Absent: no tracing. */
  traceparent?: string;
  /** Where ctx.stream writes; absent, a step that streams is told so. */
  streams?: StepStreamStore;
  /** Where ctx.recordUsage writes, with the prices it costs a report by; absent, a step that reports is told so. */
  usage?: UsageRecorder;
  /** Where ctx.startChild starts runs, and which workflows it may start; absent, a run cannot have children. */
  family?: () => Promise<Family>;
  /** Where ctx.setTags, ctx.addTags and ctx.setMetadata write; absent, a run that calls them is told so. */
  tags?: RunTagStore;
}

export class RunContext {
  constructor(
    readonly runId: string,
    readonly checkpoint: Checkpoint,
    /**
     * Aborted when the run is paused, cancelled or taken over, or the worker drains. It stops the run between
     * steps (and a step still waiting for another holder's claim), never a side effect in flight: the step in
     * hand finishes and commits first.
     */
    readonly signal: AbortSignal,
    readonly log: Logger,
    /** The run's default policy: the worker's, under the workflow's own. */
    private readonly retry: ResolvedRetryPolicy = DEFAULT_RETRY,
    /** The retries' backoff and the steps' timeouts run on it (the worker's clock). */
    private readonly clock: Clock = systemClock,
    /** Durable waits (waits.ts): the store and this execution's fence. Absent: a context that cannot park. */
    private readonly parking?: Parking,
    /** What the worker hands a run besides: its log in the store, and the address its programs reach it at. */
    host: RunHost = {},
  ) {
    this.runLog = host.runLog ?? noRunLog;
    this.controlPlaneUrl = host.controlPlaneUrl;
    this.traceparent = host.traceparent;
    this.streams = host.streams;
    this.usage = host.usage;
    this.family = host.family;
    this.tags = host.tags;
  }

  private readonly tags: RunTagStore | undefined;
  private tagCalls = 0;

  /**
   * The run's tags become exactly these (lib/domain/run-tags.ts: at most 20, each 1-64 of letters, digits and
   * . _ : / @ -). A durable step of its own (run-tags.ts): a replay does not make it again. Answers the run's
   * tags and metadata as they then are.
   */
  setTags(tags: string[]): Promise<RunTags> {
    return this.changeTags('setTags', tags);
  }

  /** Adds these to the run's tags, as setTags does. */
  addTags(tags: string[]): Promise<RunTags> {
    return this.changeTags('addTags', tags);
  }

  /** Merges these keys into the run's metadata (each key takes its value, the others stay), as setTags does. */
  setMetadata(metadata: Record<string, string>): Promise<RunTags> {
    return this.changeTags('setMetadata', metadata);
  }

  private async changeTags(method: TagMethod, given: unknown): Promise<RunTags> {
    const store = this.tags;
    if (!store) throw new Error(`this run context cannot change tags: it was built without a store (ctx.${method})`);
    const change = tagChange(method, given);
    // Numbered in call order, like unnamed sleeps: a replay makes the same calls in the same order.
    const { result } = await this.step(`tags#${++this.tagCalls}`, () =>
      writeTagChange(store, this.runId, method, change),
    );
    return result;
  }

  private readonly family: (() => Promise<Family>) | undefined;

  private readonly streams: StepStreamStore | undefined;
  private readonly usage: UsageRecorder | undefined;
  /** The steps executing now: ctx.stream writes to the one in hand. */
  private readonly inHand = new Set<StreamingStepContext>();

  /**
   * Appends text to the transcript of the step executing now (step-stream.ts); the same as the step
   * context's own `stream`. Steps run side by side must each use their own: this one refuses to guess.
   */
  stream(text: string): Promise<void> {
    const step = this.theStepInHand('stream');
    return step instanceof Error ? Promise.reject(step) : step.stream(text);
  }

  /**
   * Records a model call made without the gateway in the run's ledger, for the step executing now
   * (step-usage.ts); the same as the step context's own `recordUsage`, and as choosy as `stream`.
   */
  recordUsage(usage: UsageReport): Promise<void> {
    const step = this.theStepInHand('recordUsage');
    return step instanceof Error ? Promise.reject(step) : step.recordUsage(usage);
  }

  private theStepInHand(method: 'stream' | 'recordUsage'): StreamingStepContext | Error {
    if (this.inHand.size === 1) return [...this.inHand][0]!;
    return new Error(
      this.inHand.size === 0
        ? `ctx.${method} is called inside a step: ctx.step(name, (step) => …, { step: n })`
        : `${this.inHand.size} steps are executing at once: call ${method} on the step's own context`,
    );
  }

  /**
   * The run's log in the store (run-log.ts): what a command workflow's program prints, shown on the run page
   * and by `waybill logs`. Lines are batched; flush() before the run ends makes sure they are there.
   */
  readonly runLog: RunLog;
  /** The control plane's address for the programs this run spawns (`waybill worker --url`); unset: WAYBILL_URL. */
  readonly controlPlaneUrl: string | undefined;
  /** The execution's run span as a W3C traceparent (a program's TRACEPARENT); undefined: tracing is off. */
  readonly traceparent: string | undefined;

  // --- durable waits (lib/engine/waits.ts) ---
  private sleeps = 0;

  /** Parks the run until an operator approves or rejects `name` (or its timeout decides). */
  waitForApproval(name: string, options?: ApprovalOptions): Promise<Approval> {
    return this.waited('approval', name, () => waitForApproval(this.parked(), this.runId, name, options));
  }

  /** Parks the run until the signal `name` arrives (one sent earlier is already there) or it times out. */
  waitForSignal<T = unknown>(name: string, options?: { timeoutMs?: number }): Promise<SignalResult<T>> {
    return this.waited('signal', name, () => waitForSignal<T>(this.parked(), this.runId, name, options));
  }

  /**
   * Parks the run until an event `name` whose data fits `match` is sent (lib/engine/events.ts), or it times
   * out. Only events sent after the run got here count. One wait per name in a run: it reads its first decision.
   */
  waitForEvent<T = unknown>(name: string, options?: WaitForEventOptions): Promise<EventResult<T>> {
    return this.waited('event', name, () => waitForEvent<T>(this.parked(), this.runId, name, options));
  }

  /**
   * Parks the run for `ms` (from the first time it got here) or until a moment. Unnamed sleeps are numbered
   * in call order (`sleep#1`, …), which replay repeats; name one when the order may change between versions.
   */
  sleep(until: number | Date, name?: string): Promise<void> {
    const named = name ?? `sleep#${++this.sleeps}`;
    return this.waited('sleep', named, () => sleepUntil(this.parked(), this.runId, named, until));
  }

  /** A durable wait, in a `wait` span when traced: `parked` when it parks the run, `decided` when it answers. */
  private waited<T>(kind: string, name: string, wait: () => Promise<T>): Promise<T> {
    if (this.traceparent === undefined) return wait();
    return inSpan(
      'wait',
      {
        parent: this.traceparent,
        attributes: { 'waybill.run_id': this.runId, 'waybill.wait.kind': kind, 'waybill.wait': name },
        done: () => ({ 'waybill.outcome': 'decided' }),
        failed: (error) =>
          error instanceof RunParkedError
            ? { 'waybill.outcome': 'parked', ok: true }
            : { 'waybill.outcome': 'failed', ok: false },
      },
      wait,
    );
  }

  /**
   * Starts a child run of `workflow` as a durable step named `child:<name>`: started once, however often the
   * parent's worker dies around it. Its id is `<this run's id>:<name>` unless given; `tags` and `metadata` are the
   * child's own, as a start's. Returns the child's id.
   */
  async startChild(name: string, workflow: string, input: unknown, options: ChildOptions = {}): Promise<string> {
    const family = this.families();
    const id = childRunId(this.runId, name, options);
    const tags = childTags(name, options);
    const { result } = await this.step(`child:${name}`, async () =>
      startChildRun(await family, this.runId, {
        workflow,
        input,
        id,
        detached: options.detached === true,
        ...tags,
        ...(this.traceparent === undefined ? {} : { traceparent: this.traceparent }),
      }),
    );
    return result.runId;
  }

  /**
   * Parks the run until the child has ended (holding no worker slot), then returns its output; a child that
   * failed, was cancelled or rejected throws ChildRunFailedError, or is answered as a ChildOutcome with `settled`.
   */
  async waitForChild<T = unknown>(childId: string, options: WaitChildOptions = {}): Promise<T> {
    return (await awaitChild(this.parked(), await this.families(), this.runId, childId, options)) as T;
  }

  /**
   * waitForChild for each: all their outputs (or outcomes, with `settled`), in the order given. Waited for from
   * the last: children end roughly in the order they started, so the parent parks on the last one and wakes once,
   * to find the others' waits decided, instead of once per child. A failed child throws when it is reached.
   */
  async waitForChildren<T = unknown>(childIds: string[], options: WaitChildOptions = {}): Promise<T[]> {
    const outputs = new Map<string, T>();
    for (const id of [...childIds].reverse()) outputs.set(id, await this.waitForChild<T>(id, options));
    return childIds.map((id) => outputs.get(id)!);
  }

  /**
   * Parks the run until the first of the children has ended, then returns which and its output (or how it ended,
   * with `settled`); the others go on, and may be waited for or cancelled after. A first to end that failed throws
   * ChildRunFailedError. Every replay answers the same child: the first this run saw end, kept as a step.
   */
  async waitForFirstChild<T = unknown>(
    childIds: string[],
    options: WaitChildOptions = {},
  ): Promise<{ runId: string; output: T } | ChildOutcome> {
    const keep = async (step: string, outcome: ChildOutcome) => (await this.step(step, () => outcome)).result;
    return (await awaitFirstChild(this.parked(), await this.families(), this.runId, childIds, options, keep)) as
      | { runId: string; output: T }
      | ChildOutcome;
  }

  private families(): Promise<Family> {
    if (!this.family) return Promise.reject(new Error('this run context cannot start child runs: it has no store'));
    return this.family();
  }

  private parked(): Parking {
    if (!this.parking) throw new Error('this run context cannot wait: it was built without a store to park in');
    this.signal.throwIfAborted();
    return this.parking;
  }
  // --- end durable waits ---

  load<S = Record<string, unknown>>(): Promise<{ step: number; state: S }> {
    return this.checkpoint.load<S>();
  }

  saveProgress(step: number, state: unknown): Promise<void> {
    return this.checkpoint.saveProgress(step, state);
  }

  releaseAhead(): Promise<void> {
    return this.checkpoint.releaseAhead();
  }

  /** A named step: its key is derived from the run and the name, which must be stable across resumes. */
  step<T>(
    name: string,
    fn: (ctx: StreamingStepContext) => T | Promise<T>,
    options: StepOptions = {},
  ): Promise<StepResult<T>> {
    return this.runOnce(`${this.runId}:${name}`, fn, options);
  }

  async runOnce<T>(
    key: string,
    fn: (ctx: StreamingStepContext) => T | Promise<T>,
    options: StepOptions = {},
  ): Promise<StepResult<T>> {
    /** The claim's own attempt when fn ran (a takeover raises it past the engine's count). */
    let claimed: number | undefined;
    const streamed = async (call: StepContext) => {
      claimed = call.attempt;
      const step = usageStep(streamingStep(call, this.runId, this.streams), this.runId, this.usage);
      this.inHand.add(step);
      try {
        return await fn(step);
      } finally {
        this.inHand.delete(step);
      }
    };
    const { maxAttempts, backoff, timeoutMs, retryOn, nonRetryable, ...checkpointOptions } = options;
    const own = { maxAttempts, backoff, timeoutMs, retryOn, nonRetryable };
    // Most steps give no policy of their own: they pay for no parse.
    const policy = POLICY_FIELDS.some((field) => own[field] !== undefined)
      ? resolvePolicy(this.retry, checkRetryPolicy(stripUndefined(own), '', `step ${JSON.stringify(key)}`))
      : this.retry;
    // The run's own signal and attempt count replace the caller's.
    for (let attempt = 1; ; attempt++) {
      this.signal.throwIfAborted();
      // Decided as the attempt fails, before its claim is released: the `failed` event says what comes next.
      let decision: Decision | null = null;
      const decide = (error: unknown): Decision => (decision ??= this.decide(policy, error, attempt));
      try {
        claimed = undefined;
        const once = () =>
          this.checkpoint.runOnce(key, streamed, {
            ...checkpointOptions,
            attempt,
            signal: this.signal,
            timeoutMs: policy.timeoutMs ?? undefined,
            nextAttempt: (error) => {
              const d = decide(error);
              return { maxAttempts: policy.maxAttempts, retryAt: d.retry ? this.clock.now() + d.delayMs : null };
            },
          });
        const outcome =
          this.traceparent === undefined
            ? await once()
            : await this.traced(key, options.step, attempt, once, () => claimed);
        // A line per step, at debug: at info a worker's log says what happened to its runs, not to each step.
        this.log.debug(`step ${outcome.status}`, { step: options.step, key, attempt });
        return outcome;
      } catch (error) {
        if (this.signal.aborted) throw error;
        const d = decide(error);
        if (!d.retry) {
          if (d.why !== 'attempts spent') throw error;
          throw new StepFailedError(key, attempt, error);
        }
        this.log.warn('step failed; retrying', {
          step: options.step,
          key,
          attempt,
          maxAttempts: policy.maxAttempts,
          delayMs: Math.round(d.delayMs),
          error: error instanceof Error ? error.message : String(error),
        });
        await this.clock.sleep(d.delayMs, this.signal);
      }
    }
  }

  /** One attempt of a step, claim to commit, in a `step` span with its outcome. */
  private traced<T>(
    key: string,
    step: number | undefined,
    attempt: number,
    once: () => Promise<StepResult<T>>,
    claimed: () => number | undefined,
  ): Promise<StepResult<T>> {
    const attributes = {
      'waybill.run_id': this.runId,
      'waybill.key': key,
      ...(step === undefined ? {} : { 'waybill.step': step }),
    };
    return inSpan(
      'step',
      {
        parent: this.traceparent,
        attributes,
        done: (result) => ({ 'waybill.outcome': result.status, 'waybill.attempt': claimed() ?? attempt }),
        failed: (error) => ({
          'waybill.outcome':
            error instanceof LeaseLostError ? 'lease_lost' : this.signal.aborted ? 'stopped' : 'failed',
          'waybill.attempt': claimed() ?? attempt,
        }),
      },
      once,
    );
  }

  private decide(policy: ResolvedRetryPolicy, error: unknown, attempt: number): Decision {
    if (!retryableUnder(policy, error, attempt)) {
      return { retry: false, why: error instanceof NonRetryableError ? 'NonRetryableError' : 'not retryable' };
    }
    if (attempt >= policy.maxAttempts) return { retry: false, why: 'attempts spent' };
    return { retry: true, delayMs: backoffMs(policy, attempt) };
  }
}

type Decision = { retry: true; delayMs: number } | { retry: false; why: string };

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
