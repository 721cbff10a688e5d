/**
 * Decisions on a run's durable waits (lib/engine/waits.ts): approve, reject, signal. Written once for the run
 * page, the API and the CLI: the caller must be an operator; the input is checked; the store decides the wait
 * once (one conditional UPDATE, which also queues the parked run and writes its timeline event); the audit
 * line says who and the note. A second decision — or the loser of two at one instant — is WaitDecidedError
 * (409) and changes nothing; a signal sent twice keeps its first payload. A signal sent ahead adds a wait to
 * its run, so a run holds at most maxWaitsPerRun (WAYBILL_MAX_WAITS_PER_RUN): past it, 413 and nothing written.
 */
import { z } from 'zod';
import { waitNameProblem } from '../engine/waits';
import { ControlInputError, InvalidTransitionError, NotFoundError, WaitDecidedError } from '../errors';
import type { WaitKind, WaitRow } from '../store/contract';
import { FINISHED_STATUSES } from '../store/shared/sql';
import { MAX_WAITS_PER_RUN_DEFAULT } from '../store/shared/waits';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { note, runRef } from './fields';
import type { ControlDeps } from './store';
import { jsonValue } from './views';

/** A wait's name, as the engine names its waits (waitNameProblem): the API's path and the CLI's argument. */
export const waitName = z.string({ error: 'must be a wait name' }).superRefine((name, ctx) => {
  const problem = waitNameProblem(name);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const decideInput = z.strictObject({
  runId: runRef,
  /** Omitted: the run's one open approval (refused when there is none or more than one). */
  name: waitName.optional(),
  approve: z.boolean({ error: 'must be true or false' }),
  note: note(2000).optional(),
});

const signalInput = z.strictObject({
  runId: runRef,
  name: waitName,
  payload: z.unknown(),
});

/** A wait as the API, the CLI's --json and the run page show it. Times are epoch seconds. */
export function waitView(row: WaitRow) {
  return {
    runId: row.runId,
    name: row.name,
    kind: row.kind,
    details: jsonValue(row.detailsJson),
    createdAt: row.createdAt,
    dueAt: row.dueAt,
    onTimeout: row.onTimeout,
    decidedAt: row.decidedAt,
    decision: jsonValue(row.decisionJson),
    decidedBy: row.decidedBy,
    note: row.note,
  };
}

/** Approves or rejects an approval. A rejection asks for a note: it is what the run ends with. */
export async function decide(deps: ControlDeps, caller: Caller, input: z.input<typeof decideInput>): Promise<WaitRow> {
  authorize(caller, 'operator');
  const given = validate(
    decideInput.refine((v) => v.approve || (v.note?.trim() ?? '') !== '', {
      message: 'a rejection needs a note saying why',
      path: ['note'],
    }),
    input,
  );
  const store = await deps.store();
  const name = given.name ?? (await openApproval(store, given.runId));
  const trimmed = given.note?.trim() || null;
  return decideOnce(
    deps,
    caller,
    'approval',
    given.runId,
    name,
    JSON.stringify({ approved: given.approve }),
    trimmed,
    given.approve ? 'approve' : 'reject',
  );
}

/** Sends a signal. One sent before its run reaches the wait is kept there; a second send is 409. */
export async function signal(deps: ControlDeps, caller: Caller, input: z.input<typeof signalInput>): Promise<WaitRow> {
  authorize(caller, 'operator');
  const given = validate(signalInput, input);
  const text = JSON.stringify({ payload: given.payload ?? null });
  if (Buffer.byteLength(text) > deps.maxBytes) {
    throw ControlInputError.of({ payload: [`must be at most ${deps.maxBytes} bytes of JSON`] });
  }
  const maxWaits = deps.maxWaitsPerRun ?? MAX_WAITS_PER_RUN_DEFAULT;
  return decideOnce(deps, caller, 'signal', given.runId, given.name, text, null, 'signal', { maxWaits });
}

async function decideOnce(
  deps: ControlDeps,
  caller: Caller,
  kind: WaitKind,
  runId: string,
  name: string,
  decisionJson: string,
  noteText: string | null,
  action: 'approve' | 'reject' | 'signal',
  /** A signal may be sent ahead of its wait, creating its row, while the run holds fewer than maxWaits. */
  ahead: { maxWaits: number } | null = null,
): Promise<WaitRow> {
  const store = await deps.store();
  const run = await store.getRun(runId);
  if (!run) throw new NotFoundError(`run ${runId}`);
  if ((FINISHED_STATUSES as readonly string[]).includes(run.status)) {
    // A wait decided before the run ended is answered as the second decision it is; anything else cannot be decided now.
    const done = await store.getWait(runId, kind, name);
    if (done?.decidedAt != null) throw new WaitDecidedError(runId, name, done.decidedBy);
    throw new InvalidTransitionError(runId, action, run.status);
  }
  const { decided, wait } = await store.decideWait({
    runId,
    name,
    kind,
    decisionJson,
    decidedBy: caller.actor,
    note: noteText,
    createIfAbsent: ahead !== null,
    maxWaits: ahead?.maxWaits,
  });
  if (!decided) throw new WaitDecidedError(runId, name, wait.decidedBy);
  await record(store, caller, { action, target: `${runId}/${name}`, runId, note: noteText });
  return wait;
}

async function openApproval(store: Awaited<ReturnType<ControlDeps['store']>>, runId: string): Promise<string> {
  const approvals = (await store.listWaits(runId)).filter((w) => w.kind === 'approval');
  const open = approvals.filter((w) => w.decidedAt === null);
  if (open.length === 1) return open[0]!.name;
  // Its one approval already decided: a second decision, answered as such (409), not "nothing to approve".
  if (open.length === 0 && approvals.length === 1) return approvals[0]!.name;
  if (open.length === 0) {
    if (!(await store.getRun(runId))) throw new NotFoundError(`run ${runId}`);
    throw new NotFoundError(`an open approval of run ${runId}`);
  }
  throw ControlInputError.of({
    name: [`run ${runId} waits for ${open.length} approvals: name one (${open.map((w) => w.name).join(', ')})`],
  });
}

/** A run's waits, for the run page and the API's run view (a viewer may read them). */
export async function list(deps: ControlDeps, caller: Caller, runId: string): Promise<WaitRow[]> {
  authorize(caller, 'viewer');
  const store = await deps.store();
  return store.listWaits(validate(runRef, runId));
}
