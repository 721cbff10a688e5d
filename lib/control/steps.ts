/**
 * One step of one run, as the step page, `waybill step` and GET /api/v1/runs/:id/steps/:n all show it: its
 * key, every attempt (from its events and its committed row), the result, and every earlier result a rerun
 * replaced with what replaced it. Read here once; views.ts shapes it.
 *
 * Attempts cost no write of their own: a first attempt that succeeds is only its committed row, as before;
 * each failed attempt is the `failed` event its release already wrote, a takeover the `expired` event, a
 * refused commit `lease_lost`, a hand-made result the committed row with source `manual`.
 */
import { z } from 'zod';
import { claimExpired, expiredByDeath } from '../domain/claim-expiry';
import { attemptNoteOf, takeoverText } from '../engine/attempt-note';
import { NotFoundError } from '../errors';
import { type StepTranscript, stepTranscript } from '../gateway/transcript';
import type { ClaimRow, CommittedRow, HistoryRow, RunRow, StepEvent, StepRecord } from '../store/contract';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { runRef, stepField } from './fields';
import type { ControlDeps } from './store';
import { claimView, committedView, eventView, jsonValue, truncation } from './views';

const stepInput = z.strictObject({
  runId: runRef,
  step: stepField,
});

export type AttemptOutcome = 'failed' | 'taken_over' | 'lease_lost' | 'committed' | 'resolved' | 'forked' | 'in_flight';

export interface AttemptView {
  n: number;
  outcome: AttemptOutcome;
  /**
   * The attempt's number as the claims count it (takeovers included), from the events' attempt columns; for
   * the committing attempt, the one after the last recorded (a first attempt that succeeds writes nothing of
   * its own). Null where older rows or an outside client did not say.
   */
  attempt: number | null;
  /** A failed attempt: of how many its policy allows, and when the next was due (epoch s; null: none). */
  maxAttempts: number | null;
  retryAt: number | null;
  /** A takeover: the attempt whose lease passed is this row (its worker, its number); who took it over. */
  takenOverBy: { workerId: string | null; attempt: number | null } | null;
  /** When the attempt began, when known (its end minus its duration), and when it ended. */
  startedAt: number | null;
  endedAt: number | null;
  durationMs: number | null;
  workerId: string | null;
  error: string | null;
  /** Which execution of the step: 0 before any rerun, k after the k-th rerun that covered it. */
  rerun: number;
}

const ATTEMPT_OF: Partial<Record<StepEvent['outcome'], AttemptOutcome>> = {
  failed: 'failed',
  expired: 'taken_over',
  lease_lost: 'lease_lost',
};

/** The attempts in order: events, rerun markers (operator events naming a rerun) and the row(s) that ended each execution. */
export function attemptsOf(record: StepRecord, claimTtlMs: number, now: number): AttemptView[] {
  const out: AttemptView[] = [];
  const ends = [...record.history.map((h) => ({ at: h.supersededAt, row: h as HistoryRow | null }))];
  let rerun = 0;
  let hist = 0;
  /** The number the next attempt gets, when the events said; null once a row without one was met. */
  let next: number | null = 1;
  const blank = { attempt: null, maxAttempts: null, retryAt: null, takenOverBy: null };
  const push = (a: Omit<AttemptView, 'n' | 'rerun'>) => out.push({ ...a, n: out.length + 1, rerun });
  const closeExecution = (row: {
    committedAt: number;
    durationMs: number | null;
    workerId: string | null;
    source: string;
  }) => {
    push({
      ...blank,
      attempt: row.source === 'executed' ? next : null,
      outcome: row.source === 'manual' ? 'resolved' : row.source === 'forked' ? 'forked' : 'committed',
      startedAt: row.durationMs === null ? null : row.committedAt - row.durationMs / 1000,
      endedAt: row.committedAt,
      durationMs: row.durationMs,
      workerId: row.workerId,
      error: null,
    });
    next = 1;
  };
  const events = record.events.filter((e) => ATTEMPT_OF[e.outcome]);
  let i = 0;
  for (const end of ends) {
    // Events before this history row was superseded belong to the execution it ended.
    while (i < events.length && events[i]!.at <= end.at) pushEvent(events[i++]!);
    const row = record.history[hist++]!;
    closeExecution(row);
    rerun = row.rerun;
  }
  while (i < events.length) pushEvent(events[i++]!);
  if (record.committed) closeExecution(record.committed);
  else if (record.claim) {
    const claim = record.claim;
    const orphaned = claimExpired(claim, claimTtlMs, now);
    push({
      ...blank,
      attempt: claim.attempt,
      outcome: 'in_flight',
      startedAt: claim.claimedAt,
      endedAt: null,
      durationMs: null,
      workerId: claim.workerId,
      error: orphaned ? orphanedText(claim, record.events) : null,
    });
  }
  return out;

  function pushEvent(e: StepEvent) {
    const times = {
      startedAt: e.durationMs === null ? null : e.at - e.durationMs / 1000,
      endedAt: e.at,
      durationMs: e.durationMs,
    };
    if (e.outcome === 'expired' && e.previousAttempt !== null) {
      // A takeover names both sides: this row is the holder's attempt that lost its lease.
      push({
        ...blank,
        ...times,
        outcome: 'taken_over',
        attempt: e.previousAttempt,
        workerId: e.previousWorkerId,
        takenOverBy: { workerId: e.workerId, attempt: e.attempt },
        error: takeoverText(e),
      });
      next = e.attempt;
      return;
    }
    if (e.outcome === 'failed') {
      const { error, note } = attemptNoteOf(e);
      push({
        ...blank,
        ...times,
        outcome: 'failed',
        attempt: note?.attempt ?? null,
        maxAttempts: note?.maxAttempts ?? null,
        retryAt: note?.retryAt === null || note?.retryAt === undefined ? null : note.retryAt / 1000,
        workerId: e.workerId,
        error,
      });
      next = note ? note.attempt + 1 : null;
      return;
    }
    push({
      ...blank,
      ...times,
      outcome: ATTEMPT_OF[e.outcome]!,
      attempt: e.attempt,
      workerId: e.workerId,
      error: e.detail,
    });
    // A refused commit comes after the takeover that fenced it, whose taker is the next attempt already. An
    // expiry by hand or a dead worker deletes the claim: the next claim numbers itself from its own worker's count.
    if (e.outcome !== 'lease_lost') next = null;
  }
}

/**
 * Why a claim in flight is orphaned, as its attempt's line says it: its holder was declared dead (a peer proved
 * it and expired the claim then, leaving that `expired` event), or its lease passed.
 */
function orphanedText(claim: Pick<ClaimRow, 'idemKey' | 'workerId' | 'attempt'>, events: StepEvent[]): string {
  const died = events.some((e) => expiredByDeath(e, claim));
  return died
    ? `worker ${claim.workerId} was declared dead: the next worker takes it over`
    : 'its lease passed: the next worker takes it over';
}

export function stepView(
  run: RunRow | null,
  runId: string,
  step: number,
  record: StepRecord,
  claimTtlMs: number,
  now = Date.now() / 1000,
) {
  const key =
    record.committed?.idemKey ??
    record.claim?.idemKey ??
    record.history.at(-1)?.idemKey ??
    record.events.find((e) => e.idemKey)?.idemKey ??
    null;
  const claim: ClaimRow | null = record.claim
    ? { ...record.claim, orphaned: claimExpired(record.claim, claimTtlMs, now) }
    : null;
  const replacement = (i: number) => {
    const later = record.history[i + 1];
    if (later)
      return { rerun: later.rerun, committedAt: later.committedAt, supersededAt: later.supersededAt, current: false };
    if (record.committed)
      return { rerun: null, committedAt: record.committed.committedAt, supersededAt: null, current: true };
    return null;
  };
  return {
    runId,
    step,
    key,
    workflow: run?.workflow ?? null,
    runStatus: run?.status ?? null,
    status: record.committed ? ('committed' as const) : claim ? ('in_flight' as const) : ('not_committed' as const),
    result: record.committed ? jsonValue(record.committed.resultJson) : null,
    resultTruncated: record.committed ? truncation('result', record.committed.resultJson).resultTruncated : undefined,
    committed: record.committed ? committedView(record.committed) : null,
    priorProgress: priorProgress(record.committed),
    attempts: attemptsOf(record, claimTtlMs, now),
    claim: claim ? claimView(claim, claimTtlMs) : null,
    history: record.history.map((h, i) => ({
      ...committedView(h),
      supersededAt: h.supersededAt,
      supersededBy: h.supersededBy,
      reason: h.reason,
      rerun: h.rerun,
      replacedBy: replacement(i),
    })),
    events: record.events.map(eventView),
  };
}

/** The run's saved progress as it stood when the step committed: what a rerun or fork from it puts back. */
function priorProgress(row: CommittedRow | null) {
  if (!row || row.priorStep === null || row.priorStateJson === null) return null;
  return { step: row.priorStep, state: jsonValue(row.priorStateJson), ...truncation('state', row.priorStateJson) };
}

export type StepView = ReturnType<typeof stepView>;

/** The step's view; NotFoundError when nothing of the step is recorded and the run has no row or no such step. A viewer may read it. */
export async function read(deps: ControlDeps, caller: Caller, input: z.input<typeof stepInput>): Promise<StepView> {
  authorize(caller, 'viewer');
  const given = validate(stepInput, input);
  const store = await deps.store();
  const [run, record] = await Promise.all([store.getRun(given.runId), store.readStep(given.runId, given.step)]);
  const nothing = !record.committed && !record.claim && record.history.length === 0 && record.events.length === 0;
  // A step the run has not reached yet has a page (a permalink to come back to); one past its last step does not.
  if (nothing && (!run || (run.totalSteps !== null && given.step >= run.totalSteps))) {
    throw new NotFoundError(`step ${given.step} of run ${given.runId}`);
  }
  return stepView(run, given.runId, given.step, record, deps.claimTtlMs);
}

/** What the step streamed as it ran (its own text and its streamed model calls); a viewer may read it. */
export async function transcript(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof stepInput>,
): Promise<StepTranscript> {
  authorize(caller, 'viewer');
  const given = validate(stepInput, input);
  return stepTranscript(await deps.store(), given.runId, given.step);
}
