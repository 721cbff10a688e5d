/**
 * The checkpoint protocol over HTTP: what lib/checkpoint's `Checkpoint` does in-process, split into the
 * calls a remote client makes — load and save progress, claim, renew, commit, release — with the same store
 * transactions, so the same guarantees and errors: a committed key is returned, never run again (skipped);
 * a live claim is reported as `held` and the client polls (awaited); a commit whose token is not the
 * claim's is refused (LEASE_LOST) with nothing written; a committed key with another fingerprint is
 * IDEMPOTENCY_KEY_REUSE. The server keeps no state between calls: the fencing token is the client's proof.
 *
 * A client may declare its run (begin: workflow, total) and is then a run like any other, listed by name;
 * every commit answer carries the run's status (`run: { status }`, null for an undeclared run), read in the
 * commit's own transaction, so the client learns of a pause or cancel with the call it makes anyway and
 * stops before its next step (begin answers the status too: a paused run does not start).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { INPUT_MAX_CHARS } from '../checkpoint/step-input';
import { jsonValue, progressView, truncation } from '../control/views';
import { claimExpiresAt } from '../domain/claim-expiry';
import { storableJson, storableText } from '../domain/text';
import {
  IdempotencyKeyReuseError,
  InvalidInputError,
  KeyOfAnotherRunError,
  LeaseLostError,
  NotFoundError,
} from '../errors';
import type { PriceTable } from '../gateway/prices';
import { cachedWithinInput, recordUsage, usageFields, usageKey } from '../gateway/recorded-usage';
import type { ClaimOutcome, ClaimRow, ProgressWrite, RunStatus, Store } from '../store/contract';
import { shortestLeaseFor } from '../store/shared/sqlite-timeouts';
import { recordSpan } from '../tracing';
import { fingerprint, freeText, idemKey, requiredJson, runRef, stepNumber, typeError, workerId } from './ids';

export interface ProtocolOptions {
  /** The lease a claim gets when the client does not ask for one (WAYBILL_LEASE_MS). */
  leaseMs: number;
  /** How long a claim without a lease column lives (WAYBILL_CLAIM_TTL_MS). */
  claimTtlMs: number;
  /**
   * The request's W3C trace context (a client's `traceparent` header, lib/api/trace.ts): the step it claims,
   * commits or releases is recorded as a `step` span under it. Absent: no span.
   */
  traceparent?: string;
}

/** A client's step attempt as a span under its request's trace context (lib/tracing.ts), when it sent one. */
function stepSpan(
  options: ProtocolOptions,
  step: { runId: string; key: string; step?: number | null; attempt?: number },
  outcome: 'executed' | 'skipped' | 'failed' | 'lease_lost',
  startTime?: number,
): Promise<void> {
  if (options.traceparent === undefined) return Promise.resolve();
  return recordSpan('step', {
    parent: options.traceparent,
    startTime,
    attributes: {
      'waybill.run_id': step.runId,
      'waybill.key': step.key,
      'waybill.outcome': outcome,
      ...(step.step == null ? {} : { 'waybill.step': step.step }),
      ...(step.attempt === undefined ? {} : { 'waybill.attempt': step.attempt }),
    },
  }).catch(() => undefined);
}

const leaseMs = z
  .number({ error: typeError('a number of milliseconds') })
  .int('must be a whole number')
  .min(100, 'must be at least 100 ms')
  .max(86_400_000, 'must be at most 86,400,000 ms (a day)');
const count = z
  .number({ error: typeError('a number') })
  .int('must be a whole number')
  .min(0, 'must be ≥ 0')
  .max(1_000_000, 'must be at most 1,000,000');
const counters = z.strictObject({ executed: count.optional(), skipped: count.optional(), awaited: count.optional() });
const token = z
  .string({ error: typeError('a string') })
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .superRefine(storableText);
/**
 * A token the client makes itself for a claim. The server's own is lost with a lost reply, and the client's
 * retry then finds the key held (by itself) for a whole lease; with its own, the retry finds the claim its own.
 * Long and random enough that no other client guesses it.
 */
const clientToken = z
  .string({ error: typeError('a string') })
  .regex(/^[A-Za-z0-9_-]{16,128}$/, 'must be 16-128 letters, digits, - or _ (a random UUID will do)');
const duration = z
  .number({ error: typeError('a number') })
  .min(0, 'must be ≥ 0')
  .max(1e10, 'must be at most 1e10');

/**
 * A step's recorded input over HTTP: any JSON value (null included) of at most INPUT_MAX_CHARS characters as
 * JSON text, the bound the in-process recorder keeps (lib/checkpoint/step-input.ts). Longer is refused rather
 * than cut: the commit is refused with nothing written and the claim still the client's, so it can commit again
 * with a smaller input (or none) under the same token; the Python client checks before it runs the side effect.
 */
const stepInput = z.unknown().superRefine((value, ctx) => {
  const text = JSON.stringify(value);
  if (text === undefined) ctx.addIssue({ code: 'custom', message: 'must be a JSON value' });
  else if (text.length > INPUT_MAX_CHARS)
    ctx.addIssue({
      code: 'custom',
      message: `must be at most ${INPUT_MAX_CHARS.toLocaleString('en-US')} characters as JSON (this is ${text.length.toLocaleString('en-US')}); the claim is still yours: commit again with a smaller input or none`,
    });
});

export const progressBody = z.strictObject({ step: stepNumber, state: requiredJson, counters: counters.optional() });

export const claimBody = z.strictObject({
  runId: runRef,
  key: idemKey,
  fingerprint: fingerprint.optional(),
  leaseMs: leaseMs.optional(),
  step: stepNumber.optional(),
  workerId: workerId.optional(),
  token: clientToken.optional(),
});

export const renewBody = z.strictObject({ key: idemKey, token, leaseMs: leaseMs.optional() });

export const commitBody = z.strictObject({
  runId: runRef,
  key: idemKey,
  token,
  result: requiredJson,
  step: stepNumber.optional(),
  fingerprint: fingerprint.optional(),
  workerId: workerId.optional(),
  durationMs: duration.optional(),
  progress: z.strictObject({ step: stepNumber, state: requiredJson, counters: counters.optional() }).optional(),
  /** What the step was given, stored beside its result and shown on its page: any JSON, bounded (stepInput). */
  input: stepInput.optional(),
  /** The client's next key, claimed in the commit's transaction: one round trip per step instead of two. */
  next: z
    .strictObject({
      key: idemKey,
      step: stepNumber.optional(),
      leaseMs: leaseMs.optional(),
      token: clientToken.optional(),
    })
    .optional(),
});

export const releaseBody = z.strictObject({
  key: idemKey,
  token,
  error: freeText(10_000).optional(),
  runId: runRef.optional(),
  step: stepNumber.optional(),
  workerId: workerId.optional(),
});

/**
 * Text for the step's transcript, numbered by the client from 0 per execution of the step (its run_once):
 * seq 0 starts the attempt's transcript over, and a chunk sent again under its seq replaces itself. Its bounds
 * are the store's (lib/store/shared/step-streams.ts).
 */
export const streamBody = z.strictObject({
  runId: runRef,
  key: idemKey,
  token,
  seq: count,
  text: z.string({ error: typeError('a string') }),
});

/**
 * A model call the step made without the gateway, for the run's ledger (lib/gateway/recorded-usage.ts): `n`,
 * the client's count of the step's reports in this execution from 0, keys it, so one sent again (a lost
 * answer, the step executed again) writes over itself.
 */
export const usageBody = z
  .strictObject({ runId: runRef, key: idemKey, token, n: count, ...usageFields })
  .superRefine(cachedWithinInput);

/** A workflow name as the runs list filters on it. */
export const workflowName = z
  .string({ error: typeError('a workflow name') })
  .regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be 1-64 lowercase letters, digits and dashes, starting with a letter')
  .refine((name) => name !== 'external', 'must not be "external": the name of undeclared runs');

export const beginBody = z.strictObject({
  workflow: workflowName,
  totalSteps: stepNumber.optional(),
  // Text a store keeps, every string of it: a limited workflow's pick reads its runs' inputs (lib/domain/text.ts).
  input: z.unknown().superRefine(storableJson).optional(),
  workerId: workerId.optional(),
});

export const endBody = z.strictObject({
  outcome: z.enum(['completed', 'failed', 'stopped'], { error: 'must be completed, failed or stopped' }),
  error: freeText(10_000).optional(),
  output: z.unknown().optional(),
  workerId: workerId.optional(),
});

/** What a commit answer says of the run: its status, or null for a run that declared nothing. */
const runAnswer = (status: RunStatus | null) => (status === null ? null : { status });

function notOurs(error: unknown): null {
  if (error instanceof KeyOfAnotherRunError) return null;
  throw error;
}

/** A paused or cancelled run runs no further step: its client stops, and no next key is claimed for it. */
const stops = (status: RunStatus | null) => status === 'paused' || status === 'cancelled';

/**
 * The client's run starts (or restarts): created `running`, or set `running` again; a paused or cancelled
 * run is left as it is and its status answered, and the client does not start.
 */
export async function begin(store: Store, runId: string, body: z.output<typeof beginBody>) {
  const { status, created } = await store.beginLoopRun({
    runId,
    workflow: body.workflow,
    totalSteps: body.totalSteps ?? null,
    inputJson: JSON.stringify(body.input ?? null),
    owner: body.workerId ?? null,
  });
  return { run: { id: runId, workflow: body.workflow, totalSteps: body.totalSteps ?? null, status, created } };
}

/** The client's run ended: its steps are done, it gave up on an error, or it stopped for a pause or cancel. */
export async function end(store: Store, runId: string, body: z.output<typeof endBody>) {
  const status = await store.endLoopRun({
    runId,
    owner: body.workerId ?? null,
    outcome: body.outcome,
    error: body.error ?? null,
    outputJson: body.output === undefined ? null : JSON.stringify(body.output),
  });
  if (status === null) throw new NotFoundError(`run ${runId} (begin it first)`);
  return { run: { id: runId, status } };
}

export async function loadProgress(store: Store, runId: string) {
  const row = await store.loadProgress(runId);
  if (!row) throw new NotFoundError(`progress of run ${runId}`);
  return progressView(row);
}

export async function saveProgress(store: Store, runId: string, body: z.output<typeof progressBody>) {
  await store.saveProgress(progressWrite(runId, body, 0));
  return { runId, step: body.step, saved: true };
}

/**
 * The lease a client asked for, or the default. On SQLite the dashboard's store waits for the write lock up to
 * two thirds of WAYBILL_LEASE_MS; a shorter lease than 1.5 × that wait could expire while its commit only
 * waited for the lock, and another worker would run the step again, so it is refused.
 */
function leaseOf(store: Store, asked: number | undefined, options: ProtocolOptions, field = 'leaseMs'): number {
  if (asked === undefined) return options.leaseMs;
  const shortest = store.dialect === 'sqlite' ? shortestLeaseFor(options.leaseMs) : 0;
  if (asked < shortest) {
    throw new InvalidInputError(
      `${field}: must be at least ${shortest} ms on this SQLite store (1.5 × its wait for the write lock, two thirds of the server's WAYBILL_LEASE_MS of ${options.leaseMs} ms); ask for more, or lower the server's WAYBILL_LEASE_MS`,
    );
  }
  return asked;
}

export async function claim(store: Store, body: z.output<typeof claimBody>, options: ProtocolOptions) {
  const token = body.token ?? randomUUID();
  const outcome = await store.claim({
    idemKey: body.key,
    runId: body.runId,
    token,
    workerId: body.workerId ?? null,
    step: body.step ?? null,
    attempt: 1,
    leaseMs: leaseOf(store, body.leaseMs, options),
    claimTtlMs: options.claimTtlMs,
  });
  return claimAnswer(store, outcome, token, body, options);
}

/** What a claim decided, as the client reads it; a committed key with another fingerprint is key reuse. */
async function claimAnswer(
  store: Store,
  outcome: ClaimOutcome,
  token: string,
  body: { runId: string; key: string; fingerprint?: string; step?: number; workerId?: string },
  options: ProtocolOptions,
) {
  if (outcome.kind === 'committed') {
    const row = outcome.row;
    if (body.fingerprint !== undefined && row.fingerprint !== null && row.fingerprint !== body.fingerprint) {
      throw await keyReuse(store, body.runId, body.key, row.fingerprint, body.fingerprint, body.step, body.workerId);
    }
    await stepSpan(options, body, 'skipped');
    return {
      outcome: 'committed' as const,
      key: row.idemKey,
      result: jsonValue(row.resultJson),
      ...truncation('result', row.resultJson),
      committedAt: row.committedAt,
      source: row.source,
      step: row.step,
    };
  }
  if (outcome.kind === 'claimed') {
    return {
      outcome: 'claimed' as const,
      key: body.key,
      token,
      leaseExpiresAt: outcome.leaseExpiresAt,
      attempt: outcome.attempt,
      tookOver: outcome.tookOverFrom !== null,
    };
  }
  const holder = outcome.holder;
  return {
    outcome: 'held' as const,
    key: body.key,
    leaseExpiresAt: claimExpiresAt(holder, options.claimTtlMs),
    // Poll again no later than the holder's expiry, and at least once a second for its commit.
    retryAfterMs: Math.max(10, Math.min(1000, Math.round(outcome.msUntilExpiry))),
  };
}

export async function renew(store: Store, body: z.output<typeof renewBody>, options: ProtocolOptions) {
  const lease = leaseOf(store, body.leaseMs, options);
  if (!(await store.renewClaim(body.key, body.token, lease))) {
    throw new LeaseLostError(
      body.key,
      'the claim is not held by this token (expired, taken over, resolved or committed)',
    );
  }
  return { key: body.key, renewed: true, leaseMs: lease };
}

export async function commit(store: Store, body: z.output<typeof commitBody>, options: ProtocolOptions) {
  const durationMs = body.durationMs ?? (await heldSince(store, body.runId, body.key, body.token, options));
  const progress = body.progress ? progressWrite(body.runId, body.progress, 1) : undefined;
  const nextToken = body.next?.token ?? randomUUID();
  const next = body.next && {
    idemKey: body.next.key,
    runId: body.runId,
    token: nextToken,
    workerId: body.workerId ?? null,
    step: body.next.step ?? null,
    attempt: 1,
    leaseMs: leaseOf(store, body.next.leaseMs, options, 'next.leaseMs'),
    claimTtlMs: options.claimTtlMs,
  };
  let committed: Awaited<ReturnType<Store['commit']>>;
  try {
    committed = await store.commit({
      idemKey: body.key,
      token: body.token,
      runId: body.runId,
      resultJson: JSON.stringify(body.result),
      step: body.step ?? null,
      fingerprint: body.fingerprint ?? null,
      workerId: body.workerId ?? null,
      durationMs,
      progress,
      next,
      inputJson: body.input === undefined ? null : JSON.stringify(body.input),
      // A client that names itself and says how long its side effect took sends the same commit again after a
      // lost reply: if its claim is gone, a row with this worker, result and duration is that earlier attempt's,
      // and it succeeded. (Without durationMs the server measures it, differently each time.)
      mayHaveLanded: body.durationMs !== undefined && body.workerId !== undefined,
    });
  } catch (error) {
    if (error instanceof LeaseLostError && body.fingerprint !== undefined) {
      // Not ours because the key is committed already — with another input: that is the caller's real bug.
      const row = await store.getCommitted(body.key);
      if (row?.fingerprint && row.fingerprint !== body.fingerprint) {
        throw await keyReuse(store, body.runId, body.key, row.fingerprint, body.fingerprint, body.step, body.workerId);
      }
    }
    throw error;
  }
  await stepSpan(options, body, 'executed', Date.now() - durationMs);
  const run = runAnswer(committed.runStatus);
  if (!body.next) return { key: body.key, committed: true, run };
  // Paused or cancelled: the client stops after this step, so no next key was claimed for it.
  if (stops(committed.runStatus)) return { key: body.key, committed: true, next: null, run };
  // Unknown only after a lost reply inside the store; claiming with the same token then finds it ours. A next
  // key of another run is no claim ahead: the commit stands, and the client's own claim of it is refused.
  const outcome = committed.next ?? (await store.claim({ ...next!, token: nextToken }).catch(notOurs));
  if (outcome === null) return { key: body.key, committed: true, next: null, run };
  const answer = await claimAnswer(
    store,
    outcome,
    nextToken,
    { runId: body.runId, key: body.next.key, step: body.next.step, workerId: body.workerId },
    options,
  );
  return { key: body.key, committed: true, next: answer, run };
}

export async function release(store: Store, body: z.output<typeof releaseBody>, options: ProtocolOptions) {
  // The store's release deletes only a claim with our token but records the failure either way; checking
  // first keeps a stale or guessed token from writing to a run's timeline.
  const held = await findClaim(store, body.key, body.runId, options);
  if (!held || held.token !== body.token)
    throw new LeaseLostError(body.key, 'the claim is not held by this token; nothing was released');
  await store.releaseClaim({
    idemKey: body.key,
    token: body.token,
    runId: held.runId,
    step: body.step ?? held.step,
    workerId: body.workerId ?? held.workerId,
    durationMs: Math.max(0, (Date.now() / 1000 - held.claimedAt) * 1000),
    error: body.error ?? null,
    // The client's retry policy is its own: which attempt failed is known, when the next comes is not.
    attempt: held.attempt,
  });
  await stepSpan(
    options,
    { runId: held.runId, key: body.key, step: body.step ?? held.step, attempt: held.attempt },
    'failed',
    held.claimedAt * 1000,
  );
  return { key: body.key, released: true };
}

/**
 * The claim the caller holds, by its token: what stream and usage write under, as release checks it. The
 * claim is checked and then written under, not in one transaction: a holder that loses its claim between the
 * two adds to a step whose next execution writes over it (seq 0, the same usage keys).
 */
async function heldClaim(
  store: Store,
  body: { runId: string; key: string; token: string },
  options: ProtocolOptions,
  what: string,
): Promise<ClaimRow> {
  const held = await findClaim(store, body.key, body.runId, options);
  if (!held || held.token !== body.token)
    throw new LeaseLostError(body.key, `the claim is not held by this token; nothing was ${what}`);
  return held;
}

/** Appends text to the transcript of the step the caller's claim is for (ctx.stream in a workflow). */
export async function stream(store: Store, body: z.output<typeof streamBody>, options: ProtocolOptions) {
  const held = await heldClaim(store, body, options, 'streamed');
  if (held.step === null)
    throw new InvalidInputError(
      `key: the claim on ${body.key} names no step, so its text has no page to show on: claim it with its step number`,
    );
  await store.appendStepStream({
    runId: held.runId,
    step: held.step,
    attempt: held.attempt,
    seq: body.seq,
    text: body.text,
  });
  return { key: body.key, streamed: true as const, step: held.step, attempt: held.attempt, seq: body.seq };
}

/** Records a model call made without the gateway in the run's ledger, for the step the caller's claim is for. */
export async function usage(
  store: Store,
  body: z.output<typeof usageBody>,
  options: ProtocolOptions,
  prices: PriceTable,
) {
  const held = await heldClaim(store, body, options, 'recorded');
  const { runId: _run, key, token: _token, n, ...report } = body;
  const at = { runId: held.runId, step: held.step, stepKey: key, attempt: held.attempt, n };
  await recordUsage(store, prices, at, report);
  const row = await store.getModelCall(usageKey(at));
  return { key, recorded: true as const, usageKey: usageKey(at), step: held.step, costUsd: row?.costUsd ?? null };
}

/** The claim on the key, if it belongs to the run (when one is named). */
async function findClaim(
  store: Store,
  key: string,
  runId: string | undefined,
  options: ProtocolOptions,
): Promise<ClaimRow | undefined> {
  const held = await store.getClaim(key, { claimTtlMs: options.claimTtlMs });
  return held && (runId === undefined || held.runId === runId) ? held : undefined;
}

/** How long the client held the claim, when it did not say how long its side effect took. */
async function heldSince(
  store: Store,
  runId: string,
  key: string,
  token: string,
  options: ProtocolOptions,
): Promise<number> {
  const held = await findClaim(store, key, runId, options);
  return held && held.token === token ? Math.max(0, (Date.now() / 1000 - held.claimedAt) * 1000) : 0;
}

async function keyReuse(
  store: Store,
  runId: string,
  key: string,
  committed: string,
  given: string,
  step?: number,
  worker?: string,
) {
  const error = new IdempotencyKeyReuseError(key, committed, given);
  // On the run's timeline too, as the in-process Checkpoint does: a reused key is a bug in how keys are made.
  await store.recordEvent({
    runId,
    outcome: 'key_reuse',
    idemKey: key,
    step: step ?? null,
    workerId: worker ?? null,
    detail: error.message,
  });
  return error;
}

function progressWrite(
  runId: string,
  p: { step: number; state: unknown; counters?: z.output<typeof counters> },
  executedNow: number,
): ProgressWrite {
  return {
    runId,
    step: p.step,
    stateJson: JSON.stringify(p.state),
    executed: executedNow + (p.counters?.executed ?? 0),
    skipped: p.counters?.skipped ?? 0,
    awaited: p.counters?.awaited ?? 0,
  };
}
