/**
 * Durable waits: `ctx.waitForApproval`, `ctx.waitForSignal`, `ctx.sleep` and a child run's end (children.ts). A wait is a step whose result
 * comes from outside the run (a person, a webhook, the clock), kept in the store's `waits` table under
 * (run, kind, name), so any worker resumes it after a crash and a decided wait is never waited again on replay.
 *
 * How it works, and why (compared with Temporal's signals and durable timers, DBOS recv/sleep, Trigger.dev
 * waitpoints and LangGraph's interrupt):
 * - Waybill replays a workflow from the top and skips committed steps, like LangGraph's interrupt re-running
 *   its node; so a wait needs no event history: reaching it reads its row. Decided: the decision is returned.
 *   Undecided: the row is recorded (idempotently: a replay keeps its first timeout), the run is set `waiting`
 *   and released — no owner, no lease, no worker slot — and the worker ends that execution as after a clean
 *   stop (RunParkedError). A `--concurrency 1` worker takes other runs meanwhile.
 * - Waking without polling the waits table: a decision (lib/control/waits.ts) flips its run from `waiting` to
 *   `queued` in the transaction that records it (the store's wakeRun), and a worker of the same process is
 *   woken at once (onLocalWake); any other finds it at its next look. A sleep or a timeout has a due time:
 *   the claim's pick also takes a `waiting` run whose open wait is due (dueWait), and an idle worker sleeps no
 *   later than the first due wait ahead (nextWakeIn, index waits_open_due), so it wakes on time however long
 *   its poll. Park and decision meet on the wait's row (see the store files), so no wake is lost.
 * - One decision per wait, forever: the first conditional UPDATE wins; a second caller gets 409 and changes
 *   nothing. A signal sent before its run reaches the wait is stored as an already decided wait; sending it
 *   again answers 409 with the first delivery kept (Temporal would append a second signal; a wait here takes
 *   exactly one). The kind is in the key, as Temporal keeps signals apart from updates and timers: a signal
 *   sent ahead under an approval's name is a signal, kept for a waitForSignal of that name, and the approval
 *   still waits for a person.
 * - A timeout is decided by the run itself when it reaches a due wait (decided_by `timeout`), through the same
 *   conditional UPDATE, so a person's decision landing at that instant either wins or loses cleanly.
 * - Times are the store's clock (a test's ManualClock on SQLite; the database clock, shifted, on PostgreSQL):
 *   a timeout is decided, and the time left computed, only by it, never by the worker's clock, which may run ahead.
 * Waits inside one run are sequential: a workflow awaits one at a time (no Promise.all of waits).
 */
import { keyProblem } from '../checkpoint/keys';
import type { Clock } from '../clock';
import { InvalidInputError, RunParkedError } from '../errors';
import type { WaitKind, WaitRow, WaitStore } from '../store/contract';
import type { ChildOutcome } from '../store/shared/children';

/** What a run context needs to park its run: the store and this execution's fence. */
export interface Parking {
  store: WaitStore;
  workerId: string;
  /** The run's `attempts` at this take (the worker's fence). */
  attempt: number;
  clock: Clock;
}

export interface ApprovalOptions {
  /** Shown to the approver (e.g. the drafted message); any JSON value. */
  details?: unknown;
  timeoutMs?: number;
  /** What a timeout decides; `reject` by default. */
  onTimeout?: 'reject' | 'approve';
}

export interface Approval {
  approved: boolean;
  /** Who decided: "alice (operator)", or `timeout`. */
  by: string;
  note: string | null;
  /** When, epoch milliseconds. */
  at: number;
  timedOut: boolean;
}

export type SignalResult<T = unknown> =
  | { received: true; payload: T; by: string; at: number }
  | { received: false; timedOut: true };

/** The longest wait name, in UTF-16 code units. */
export const WAIT_NAME_MAX = 200;

/**
 * Why `name` cannot name a wait, or null when it can: the idempotency key's rule (keyProblem), at most 200
 * characters. A wait's name is a key in all but name: PostgreSQL stores `go-\ud83d` and `go-\ud83c` as one
 * (neither has a UTF-8 form), so a second wait would read the first's decision. One rule for the engine's
 * ctx.waitForApproval/waitForSignal/sleep and for the API's and CLI's decisions (lib/control/waits.ts).
 */
export function waitNameProblem(name: unknown): string | null {
  if (typeof name === 'string' && name.length > WAIT_NAME_MAX) return `must be at most ${WAIT_NAME_MAX} characters`;
  return keyProblem(name);
}

/** Below this, a wait about to come due is slept in process rather than parked (the clocks may differ by ms). */
const SHORT_MS = 1000;

export async function waitForApproval(
  p: Parking,
  runId: string,
  name: string,
  options: ApprovalOptions = {},
): Promise<Approval> {
  if (options.onTimeout !== undefined && options.onTimeout !== 'reject' && options.onTimeout !== 'approve') {
    throw new InvalidInputError(`waitForApproval(${name}): onTimeout must be 'reject' or 'approve'`);
  }
  const wait = await waitFor(p, runId, 'approval', name, {
    detailsJson: options.details === undefined ? null : JSON.stringify(options.details),
    dueInMs: checkMs(name, 'timeoutMs', options.timeoutMs),
    onTimeout: options.onTimeout ?? 'reject',
  });
  const decision = JSON.parse(wait.decisionJson!) as { approved: boolean; timedOut?: boolean };
  return {
    approved: decision.approved,
    by: wait.decidedBy ?? 'unknown',
    note: wait.note,
    at: Math.round(wait.decidedAt! * 1000),
    timedOut: decision.timedOut === true,
  };
}

export async function waitForSignal<T = unknown>(
  p: Parking,
  runId: string,
  name: string,
  options: { timeoutMs?: number } = {},
): Promise<SignalResult<T>> {
  const wait = await waitFor(p, runId, 'signal', name, {
    dueInMs: checkMs(name, 'timeoutMs', options.timeoutMs),
    onTimeout: 'timeout',
  });
  const decision = JSON.parse(wait.decisionJson!) as { payload?: T; timedOut?: boolean };
  if (decision.timedOut) return { received: false, timedOut: true };
  return {
    received: true,
    payload: decision.payload as T,
    by: wait.decidedBy ?? 'unknown',
    at: Math.round(wait.decidedAt! * 1000),
  };
}

/** Parks until the child run `childId` has ended; the store decides the wait as the child ends. */
export async function waitForChild(p: Parking, runId: string, childId: string): Promise<ChildOutcome> {
  const wait = await waitFor(p, runId, 'child', childId, {});
  return JSON.parse(wait.decisionJson!) as ChildOutcome;
}

/**
 * Parks until the first of the children has ended: the wait decided earliest, the list's order between two
 * decided at one instant, so every replay answers the same one. Each wait is recorded before the park, so the
 * first child to end wakes the run; parkRun checks them all under their locks, so one ending meanwhile is seen.
 */
export async function waitForFirstChild(p: Parking, runId: string, childIds: string[]): Promise<ChildOutcome> {
  for (const id of childIds) {
    const problem = waitNameProblem(id);
    if (problem)
      throw new InvalidInputError(`child wait ${JSON.stringify(id.slice(0, 80))} ${problem}; nothing was written`);
  }
  for (const id of childIds)
    if (!(await p.store.getWait(runId, 'child', id))) await p.store.recordWait({ runId, name: id, kind: 'child' });
  for (;;) {
    const waits = await Promise.all(childIds.map((id) => p.store.getWait(runId, 'child', id)));
    let first: WaitRow | null = null;
    for (const wait of waits)
      if (wait?.decidedAt != null && (first === null || wait.decidedAt < first.decidedAt!)) first = wait;
    if (first) return JSON.parse(first.decisionJson!) as ChildOutcome;
    const parked = await p.store.parkRun(runId, 'child', childIds, p.workerId, p.attempt);
    if (parked === 'decided') continue;
    throw new RunParkedError(runId, childIds[0]!);
  }
}

/** `until`: milliseconds from the first time the run got here, or a moment. */
export async function sleepUntil(p: Parking, runId: string, name: string, until: number | Date): Promise<void> {
  if (until instanceof Date) {
    if (Number.isNaN(until.getTime())) throw new InvalidInputError(`sleep(${name}): the date is invalid`);
    await waitFor(p, runId, 'sleep', name, { dueAt: until.getTime() / 1000 });
  } else {
    await waitFor(p, runId, 'sleep', name, { dueInMs: checkMs(name, 'ms', until) ?? 0 });
  }
}

export async function waitFor(
  p: Parking,
  runId: string,
  kind: WaitKind,
  name: string,
  wanted: { detailsJson?: string | null; dueInMs?: number | null; dueAt?: number | null; onTimeout?: string },
): Promise<WaitRow> {
  const problem = waitNameProblem(name);
  if (problem) {
    const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : String(name);
    throw new InvalidInputError(`${kind} name ${shown} ${problem}; nothing was written`);
  }
  let wait = await p.store.getWait(runId, kind, name);
  if (!wait) wait = await p.store.recordWait({ runId, name, kind, ...wanted });
  for (;;) {
    if (wait.decidedAt != null) return wait;
    // Left by the store's clock, as the pick judges a due wait: this worker's own may run ahead of it.
    const leftMs = wait.dueAt == null ? Infinity : ((await p.store.waitDueInMs(runId, kind, name)) ?? Infinity);
    if (leftMs <= SHORT_MS) {
      if (leftMs > 0) await p.clock.sleep(leftMs);
      const answer: object =
        kind === 'sleep'
          ? { slept: true }
          : kind === 'approval'
            ? { approved: wait.onTimeout === 'approve', timedOut: true }
            : { timedOut: true };
      // A person's decision landing now either wins this UPDATE or loses it; either way the row read back stands.
      // Not yet due by the store's clock (ours ran faster while we slept): undecided, and the loop asks again.
      wait = (
        await p.store.decideWait({
          runId,
          name,
          kind,
          decisionJson: JSON.stringify(answer),
          decidedBy: 'timeout',
          onlyWhenDue: true,
        })
      ).wait;
      continue;
    }
    const parked = await p.store.parkRun(runId, kind, name, p.workerId, p.attempt);
    if (parked === 'decided') {
      wait = (await p.store.getWait(runId, kind, name))!;
      continue;
    }
    // 'lost': another execution has the run; either way this one ends here without touching it.
    throw new RunParkedError(runId, name);
  }
}

function checkMs(name: string, field: string, value: number | undefined): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidInputError(
      `wait ${name}: ${field} must be a non-negative number of milliseconds, got ${String(value)}`,
    );
  }
  return value;
}
