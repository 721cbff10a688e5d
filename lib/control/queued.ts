/**
 * "Why is this run still queued?": the one reader of a queued run's reason, for the runs list, the run page,
 * `waybill runs` / `waybill inspect` and the API's run views (`queuedReason`) alike.
 *
 * A queued run waits for a live worker that serves its workflow to have a free slot and poll. So it waits for
 * one of, in this order:
 * - `no-worker`: no worker is alive at all.
 * - `not-served`: live workers exist, none serves the workflow (this one is also a stall: stalled.ts).
 * - `slots-busy`: every slot of every worker that serves it is taken, each by the runs named.
 * - `slot-free`: a serving worker has a free slot; at its next poll it takes the run first in the pick's order
 *   (the highest priority, then the oldest), which need not be this one.
 * - `unpublished`: a live worker published nothing (a program running the engine's Worker itself): it may serve
 *   the workflow, and its slots are not known.
 * - `held`: a serving worker may have a slot, but the workflow's concurrency limit is full under the run's key, or
 *   its rate limit has no slot for it yet, or the key's free places go first to the runs ahead of it in the pick's
 *   order (lib/domain/run-limits.ts; read from the store, as the pick judges them). A rate-held run says its place
 *   in line under the key and when its own slot opens: the next slot for the first in line, the slot a stored
 *   start's expiry opens for any place up to the limit (exact), and past that (or past the runs ahead that are
 *   counted, LINE_COUNTED) the earliest its slot can open, said so. Of a key with places free, as many runs as there
 *   are places are told a slot is free (the ones the pick takes first), and each run behind them how many are ahead.
 *
 * Made from the facts stalled.ts reads once per request (live workers with their slots, what each serves, the
 * running runs by owner), and for held runs from one read of their limits' use for all the runs asked at once (a
 * list's, or the run page's one): so the runs of a list agree, and the run page says what the list says. A worker's
 * busy count is the runs it owns in status `running`; a waiting run holds no worker and no slot.
 */

import { isLive } from '../domain/liveness';
import { limitsHold, periodText, type RunLimits } from '../domain/run-limits';
import type { RunLimitUse, RunStatus, RunStore } from '../store/contract';
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
  | { kind: 'unpublished'; workers: string[]; message: string }
  | {
      kind: 'held';
      workflow: string;
      /**
       * Which limit holds it, under which key. `place`, the run's place in line under the key (1: the next;
       * LINE_COUNTED + 1: that or later): a rate limit's for a first start, with `nextSlotInS`, when its own slot opens
       * (exact up to the limit's count of places, the earliest past it); a concurrency limit's for a free place, while
       * the key has places free (none when they are all taken: every run of the key waits alike).
       */
      limit: 'concurrency' | 'rate';
      key: string;
      place?: number;
      nextSlotInS?: number;
      message: string;
    };

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

/**
 * Why a queued run waits: queuedReasons' answer for it alone, so the run page says of a run what the list says of it.
 */
export async function queuedReasonOf(
  store: Pick<RunStore, 'limitUses'>,
  run: QueuedSubject,
  facts: StallFacts,
): Promise<QueuedReason | null> {
  return (await queuedReasons(store, [run], facts)).get(run.id) ?? null;
}

/** A run whose queued reason is asked: a runs row or a list's summary. */
export interface QueuedSubject {
  id: string;
  status: RunStatus | 'idle';
  workflow: string;
  external?: boolean;
}

/**
 * Why each queued run waits, by id (null for a run that is not queued): queuedReasonWithout's answer, unless a
 * serving worker could take it and its workflow's limits hold it back. The limits' use of all of them is one read of
 * the store, at one moment (RunStore.limitUses): a list's runs of one key count the same running runs and starts,
 * and its places in a line follow the pick's one order, however many runs end or start while the list is read.
 */
export async function queuedReasons(
  store: Pick<RunStore, 'limitUses'>,
  runs: readonly QueuedSubject[],
  facts: StallFacts,
): Promise<Map<string, QueuedReason | null>> {
  const reasons = new Map<string, QueuedReason | null>();
  const limited: Record<string, RunLimits> = {};
  const asked: QueuedSubject[] = [];
  for (const run of runs) {
    const reason = queuedReasonWithout(run, facts);
    reasons.set(run.id, reason);
    if (reason?.kind !== 'slot-free' && reason?.kind !== 'slots-busy') continue;
    const limits = facts.limits.get(run.workflow);
    if (!limits || !limitsHold(limits)) continue;
    limited[run.workflow] = limits;
    asked.push(run);
  }
  if (asked.length === 0) return reasons;
  const uses = await store.limitUses(
    asked.map((run) => run.id),
    limited,
  );
  for (const run of asked) {
    const use = uses.get(run.id);
    const held = use && heldReason(run.workflow, limited[run.workflow]!, use);
    if (held) reasons.set(run.id, held);
  }
  return reasons;
}

/**
 * The limit that holds a run back now, in words, or null when neither does: its concurrency key's places all taken
 * (every queued run of the key says so), its rate key's slot yet to come, or the key's free places going first to the
 * runs ahead of it in the pick's order (only the first `limit − running` of them are told a slot is free).
 */
export function heldReason(workflow: string, limits: RunLimits, use: RunLimitUse): QueuedReason | null {
  const under = (key: string, path: string | null) =>
    path === null ? `of workflow ${workflow}` : `for key ${key === '' ? '(none)' : key}`;
  // The declared limit (its key a path) beside what the store counted under the run's key.
  const concurrency =
    limits.concurrency && use.concurrency
      ? { limit: limits.concurrency.limit, path: limits.concurrency.key, ...use.concurrency }
      : null;
  const running =
    concurrency &&
    `${concurrency.running} of ${concurrency.limit} runs ${under(concurrency.key, concurrency.path)} are running`;
  if (concurrency && concurrency.running >= concurrency.limit)
    return { kind: 'held', workflow, limit: 'concurrency', key: concurrency.key, message: running! };
  const rate = limits.rateLimit;
  const line = use.rateLine;
  if (rate && use.rateLimit && line && line.slotAt > use.nowS) {
    const nextSlotInS = line.slotAt - use.nowS;
    const earliest = line.atLeast || line.place > rate.limit ? ' at the earliest' : '';
    const when =
      line.place === 1
        ? `next slot in ${nextSlotInS.toFixed(1)} s`
        : `${ordinal(line.place)}${line.atLeast ? ' or later' : ''} in line, its slot in ${nextSlotInS.toFixed(1)} s${earliest}`;
    return {
      kind: 'held',
      workflow,
      limit: 'rate',
      key: use.rateLimit.key,
      place: line.place,
      nextSlotInS,
      message: `rate limit of ${rate.limit} starts per ${periodText(rate.periodMs)} ${under(use.rateLimit.key, rate.key)}: ${when}`,
    };
  }
  const behind = use.placeLine;
  // Past LINE_COUNTED the count is not known: as many runs as there are free places may be ahead.
  if (concurrency && behind && (behind.atLeast || behind.ahead >= concurrency.limit - concurrency.running)) {
    const of = concurrency.path === null ? 'the workflow' : 'the key';
    const ahead = behind.atLeast
      ? `${behind.ahead} or more queued runs of ${of} are`
      : behind.ahead === 1
        ? `1 queued run of ${of} is`
        : `${behind.ahead} queued runs of ${of} are`;
    return {
      kind: 'held',
      workflow,
      limit: 'concurrency',
      key: concurrency.key,
      place: behind.ahead + 1,
      message: `${running}; ${ahead} ahead of it (highest priority first, then the oldest)`,
    };
  }
  return null;
}

/** 1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, …, 21st. */
function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? 'th' : (({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** Why a queued run waits, from the facts alone: its workflow's limits are queuedReasonOf's to add. */
export function queuedReasonWithout(
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
      message: `a slot is free on worker ${free.id} (${free.runs.length} of ${slotCount(free.slots)} busy): at its next poll it takes the queued run of highest priority (the oldest among equals)`,
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
  store: Pick<RunStore, 'listWorkers' | 'listPublishedWorkflows' | 'listRunHeads' | 'limitUses'>,
  run: StallSubject & { id: string },
  settings: StallSettings,
): Promise<{ stall: Stall | null; queuedReason: QueuedReason | null }> {
  const facts = await readStallFacts(store, settings);
  return { stall: stallOf(run, facts), queuedReason: await queuedReasonOf(store, run, facts) };
}
