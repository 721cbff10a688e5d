/**
 * Events: a named fact sent once under the sender's id (lib/control/events.ts records it). Two things follow:
 * - Each workflow subscribed to the name (defineWorkflow's `on`, published by its workers so the control plane
 *   knows it without the code) starts one run, under an id derived from the workflow and the event's id, so a
 *   re-send, or a retry after a crash between the record and the starts, names the same run.
 * - Each run waiting for the name (`ctx.waitForEvent`, a durable wait of kind `event` named for the event) whose
 *   match fits the data is woken with it.
 * A wait sees only events sent after it was recorded: one sent before the run got there has gone by (Inngest's
 * step.waitForEvent behaves the same). A workflow that must not miss it subscribes instead, or waits for a
 * signal, which may be sent ahead.
 */

import { createHash } from 'node:crypto';
import { canonicalJson } from '../domain/canonical-json';
import { NEW_RUN_ID_MAX, newRunIdProblem } from '../domain/run-id';
import { InvalidInputError } from '../errors';
import type { WaitRow } from '../store/contract';
import { type Parking, waitFor, waitNameProblem } from './waits';

/** Why `value` cannot name an event or be its id, or null when it can: a wait name's rule (the key rule, at most 200). */
export const eventNameProblem = waitNameProblem;

/** The run an event starts of a subscribed workflow: `<workflow>:event:<id>`, the id hashed when it cannot be part of one. */
export function eventRunId(workflow: string, eventId: string): string {
  const plain = `${workflow}:event:${eventId}`;
  if (plain.length <= NEW_RUN_ID_MAX && newRunIdProblem(plain) === undefined) return plain;
  return `${workflow}:event:${createHash('sha256').update(eventId).digest('hex').slice(0, 32)}`;
}

export type EventMatch = Record<string, unknown>;

export interface WaitForEventOptions {
  /** Top-level fields the event's data must have, each equal (as JSON) to the value given. */
  match?: EventMatch;
  timeoutMs?: number;
}

export type EventResult<T = unknown> =
  | { received: true; id: string; data: T; at: number }
  | { received: false; timedOut: true };

/**
 * Whether an event's data fits a wait's match: each of the match's top-level fields equal to the data's as JSON
 * values, an object's keys in any order (as a re-sent event's data is judged the same, store/shared/events.ts).
 */
export function eventMatches(match: EventMatch | null | undefined, data: unknown): boolean {
  if (!match) return true;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return Object.keys(match).length === 0;
  const fields = data as Record<string, unknown>;
  return Object.entries(match).every(
    ([key, value]) => Object.hasOwn(fields, key) && canonicalJson(fields[key]) === canonicalJson(value),
  );
}

/** A wait's match, as kept in its details. */
export function waitMatch(wait: Pick<WaitRow, 'detailsJson'>): EventMatch | null {
  if (wait.detailsJson === null) return null;
  try {
    const details = JSON.parse(wait.detailsJson) as { match?: EventMatch };
    return details.match ?? null;
  } catch {
    return null;
  }
}

export async function waitForEvent<T = unknown>(
  p: Parking,
  runId: string,
  name: string,
  options: WaitForEventOptions = {},
): Promise<EventResult<T>> {
  const { match } = options;
  if (match !== undefined && (match === null || typeof match !== 'object' || Array.isArray(match)))
    throw new InvalidInputError(`waitForEvent(${name}): match must be an object of top-level fields`);
  const wait = await waitFor(p, runId, 'event', name, {
    detailsJson: match === undefined ? null : JSON.stringify({ match }),
    dueInMs: checkTimeout(name, options.timeoutMs),
    onTimeout: 'timeout',
  });
  const decision = JSON.parse(wait.decisionJson!) as { id?: string; data?: T; timedOut?: boolean };
  if (decision.timedOut) return { received: false, timedOut: true };
  return { received: true, id: decision.id ?? '', data: decision.data as T, at: Math.round(wait.decidedAt! * 1000) };
}

function checkTimeout(name: string, value: number | undefined): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new InvalidInputError(
      `waitForEvent(${name}): timeoutMs must be a non-negative number of milliseconds, got ${String(value)}`,
    );
  return value;
}
