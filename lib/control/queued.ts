/**
 * "Why is this run still queued?": the one reader of a queued run's reason, for the runs list, the run page,
 * `waybill runs` / `waybill inspect` and the API's run views (`queuedReason`) alike.
 *
 * A queued run waits for a live worker that serves its workflow to have a free slot and poll. So it waits for
 * one of, in this order:
 * - `no-worker`: no worker is alive at all.
 * - `not-served`: live workers exist, none serves the workflow (this one is also a stall: stalled.ts).
 * - `slots-busy`: every slot of every worker that serves it is taken, each by the runs named.
 * - `slot-free`: a serving worker has a free slot; it takes the oldest queued run at its next poll.
 * - `unpublished`: a live worker published nothing (a program running the engine's Worker itself): it may serve
 *   the workflow, and its slots are not known.
 *
 * Made from the facts stalled.ts reads once per request (live workers with their slots, what each serves, the
 * running runs by owner). A worker's busy count is the runs it owns in status `running`; a waiting run holds
 * no worker and no slot.
 */

import { isLive } from '../domain/liveness';
import type { RunStatus, RunStore } from '../store/contract';
import { readStallFacts, type Stall, type StallFacts, type StallSettings, type StallSubject, stallOf } from './stalled';

export type QueuedReason =
  | { kind: 'no-worker'; message: string }
  | { kind: 'not-served'; workflow: string; message: string }
  | {
      kind: 'slots-busy' | 'slot-free';
      workflow: string;
      busy: number;
      slots: number;
      workers: SlotUse[];
      message: string;
    }
  | { kind: 'unpublished'; workers: string[]; message: string };

/** One serving worker's slots: how many (null: not recorded) and the runs that hold them. */
export interface SlotUse {
  id: string;
  slots: number | null;
  runs: string[];
}

/** How many holders a message names per worker; the rest are counted. */
const NAMED_RUNS = 3;

/** A worker whose slots are not recorded (registered before they were) counts as one, the default --concurrency. */
export function slotCount(slots: number | null): number {
  return slots ?? 1;
}

/** A worker's busy slots: the runs it owns in status `running` (a waiting run holds no slot). */
export function busyRuns(facts: StallFacts, workerId: string): string[] {
  return facts.busy.get(workerId) ?? [];
}

export function queuedReasonOf(
  run: { status: RunStatus | 'idle'; workflow: string; external?: boolean },
  facts: StallFacts,
): QueuedReason | null {
  if (run.status !== 'queued' || run.external || run.workflow === 'external') return null;
  const live = [...facts.workers.values()].filter((w) => isLive(w, facts.nowS, facts.heartbeatMs));
  if (live.length === 0)
    return { kind: 'no-worker', message: 'no worker is alive: start one (npx waybill worker) and it takes this run' };
  const servers = new Set(facts.servedBy.get(run.workflow) ?? []);
  const serving = live.filter((w) => servers.has(w.id));
  if (serving.length === 0) {
    const unpublished = live.filter((w) => !facts.publishers.has(w.id)).map((w) => w.id);
    if (unpublished.length > 0)
      return {
        kind: 'unpublished',
        workers: unpublished,
        message: `waiting for ${names('worker', unpublished)}, which ${unpublished.length === 1 ? 'publishes' : 'publish'} no workflows: it may serve ${run.workflow}`,
      };
    return {
      kind: 'not-served',
      workflow: run.workflow,
      message: `no live worker serves ${run.workflow} (${names(
        'worker',
        live.map((w) => w.id),
      )} ${live.length === 1 ? 'serves' : 'serve'} other workflows)`,
    };
  }
  const workers: SlotUse[] = serving.map((w) => ({ id: w.id, slots: w.slots, runs: busyRuns(facts, w.id) }));
  const busy = workers.reduce((n, w) => n + w.runs.length, 0);
  const slots = workers.reduce((n, w) => n + slotCount(w.slots), 0);
  const free = workers.find((w) => w.runs.length < slotCount(w.slots));
  if (free)
    return {
      kind: 'slot-free',
      workflow: run.workflow,
      busy,
      slots,
      workers,
      message: `a slot is free on worker ${free.id} (${free.runs.length} of ${slotCount(free.slots)} busy): it takes the oldest queued run at its next poll`,
    };
  return {
    kind: 'slots-busy',
    workflow: run.workflow,
    busy,
    slots,
    workers,
    message: `waiting for a free slot: ${busy} of ${slots} busy on ${workers.map(slotText).join('; ')}`,
  };
}

function slotText(w: SlotUse): string {
  const shown = w.runs.slice(0, NAMED_RUNS);
  const more = w.runs.length - shown.length;
  return `worker ${w.id} with ${names('run', shown)}${more > 0 ? ` and ${more} more` : ''}`;
}

function names(noun: string, items: string[]): string {
  return `${noun}${items.length === 1 ? '' : 's'} ${items.join(', ')}`;
}

/** One run's stall and queued reason, read now: for the answers that show a single run (a start's, an action's). */
export async function judgeRun(
  store: Pick<RunStore, 'listWorkers' | 'listPublishedWorkflows' | 'listRuns'>,
  run: StallSubject,
  settings: StallSettings,
): Promise<{ stall: Stall | null; queuedReason: QueuedReason | null }> {
  const facts = await readStallFacts(store, settings);
  return { stall: stallOf(run, facts), queuedReason: queuedReasonOf(run, facts) };
}
