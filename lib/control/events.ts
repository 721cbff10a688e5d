/**
 * Sending an event (POST /api/v1/events, `waybill emit`, the library's emit): written once for every edge. The
 * caller must be an operator; the input is checked; the event is recorded under its id (a re-send of the same
 * event changes nothing; the same id with another name or data is 409). Then, whether or not it was new:
 * - each workflow subscribed to its name by the published rows starts a run `<workflow>:event:<id>` with the
 *   data as input, through startRun, so a run already there is answered as it is (a retry after a crash
 *   between the record and the starts completes them, and a re-send starts nothing);
 * - each run waiting for the name since before the event was recorded, with a match the data fits, is woken
 *   with it (one decision per wait: a re-send finds them decided).
 * The audit line is written once, when the event is first recorded.
 */
import { z } from 'zod';
import { eventMatches, eventNameProblem, eventRunId, waitMatch } from '../engine/events';
import { startRun } from '../engine/runs';
import { ControlInputError, WaybillError } from '../errors';
import type { EventRow } from '../store/contract';
import { FINISHED_STATUSES } from '../store/shared/sql';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import type { ControlDeps, ControlStore } from './store';
import { jsonValue } from './views';

/** An event's name or id: a wait name's rule (the idempotency key's, at most 200 characters). */
const eventField = (what: string) =>
  z.string({ error: `must be an event ${what}` }).superRefine((value, ctx) => {
    const problem = eventNameProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const emitInput = z.strictObject({
  id: eventField('id'),
  name: eventField('name'),
  /** Any JSON value; omitted: `{}`, the input a subscribed workflow with no required fields takes. */
  data: z.unknown().optional(),
});

export interface Emitted {
  event: ReturnType<typeof eventView>;
  /** False: the event was there already under this id, and nothing new was recorded. */
  recorded: boolean;
  /** A run per subscribed workflow; `existed`: started by an earlier send. */
  runs: { workflow: string; runId: string; existed: boolean }[];
  /** Subscribed workflows that could not start a run of this event (its data is not their input), and why. */
  refused: { workflow: string; message: string }[];
  /** Runs this send woke from a wait for the event. */
  woke: string[];
}

export function eventView(row: EventRow) {
  return { id: row.id, name: row.name, data: jsonValue(row.dataJson), createdAt: row.createdAt };
}

export async function emit(deps: ControlDeps, caller: Caller, input: z.input<typeof emitInput>): Promise<Emitted> {
  authorize(caller, 'operator');
  const given = validate(emitInput, input);
  const dataJson = JSON.stringify(given.data ?? {});
  if (Buffer.byteLength(dataJson) > deps.maxBytes)
    throw ControlInputError.of({ data: [`must be at most ${deps.maxBytes} bytes of JSON`] });
  if (!deps.workflows) throw new Error('lib/control emit: no workflows given');
  const store = await deps.store();
  const { recorded, event } = await store.recordEmittedEvent({ id: given.id, name: given.name, dataJson });
  const data: unknown = JSON.parse(event.dataJson);

  const out: Emitted = { event: eventView(event), recorded, runs: [], refused: [], woke: [] };
  const workflows = await deps.workflows(store);
  const subscribed = (await store.listPublishedWorkflows({ liveWithinMs: 0 })).filter((w) =>
    w.events.includes(event.name),
  );
  for (const { name: workflow } of subscribed) {
    try {
      const run = await startRun(store, workflows, { workflow, input: data, id: eventRunId(workflow, event.id) });
      out.runs.push({ workflow, runId: run.id, existed: run.existed });
      if (!run.existed)
        await store.recordEvent({
          runId: run.id,
          outcome: 'operator',
          detail: `started by event ${event.name} ${event.id} from ${caller.actor}`,
        });
    } catch (error) {
      // One subscriber's refusal (its input schema, an id taken by another run) leaves the others started.
      if (!(error instanceof WaybillError)) throw error;
      out.refused.push({ workflow, message: error.message });
    }
  }
  out.woke = await wakeWaiting(store, caller, event, data);

  if (recorded)
    await record(store, caller, {
      action: 'emit',
      target: `event/${event.id}`,
      note: `${event.name}: started ${out.runs.length}, woke ${out.woke.length}`,
    });
  return out;
}

async function wakeWaiting(store: ControlStore, caller: Caller, event: EventRow, data: unknown): Promise<string[]> {
  const woke: string[] = [];
  for (const wait of await store.openEventWaits(event.name, event.createdAt)) {
    if (!eventMatches(waitMatch(wait), data)) continue;
    const run = await store.getRun(wait.runId);
    if (!run || (FINISHED_STATUSES as readonly string[]).includes(run.status)) continue;
    const { decided } = await store.decideWait({
      runId: wait.runId,
      name: wait.name,
      kind: 'event',
      decisionJson: JSON.stringify({ id: event.id, data }),
      decidedBy: caller.actor,
    });
    if (decided) woke.push(wait.runId);
  }
  return woke;
}
