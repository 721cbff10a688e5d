/**
 * "Why is nothing moving?": the one place a run is called stalled, for the run page, the runs list's banner,
 * the status cards, /api/metrics, `waybill runs` and the API's run views alike.
 *
 * - A queued run of a workflow no live worker serves waits for one ("no live worker for <workflow>").
 * - A running run whose owner stopped heartbeating keeps its run lease until it passes; then the next worker
 *   that serves its workflow takes it over ("owner <id> silent since …, will be taken over at …").
 *
 * Made from store reads only (workers, their published workflows, runs) and the control plane's settings:
 * a worker is live while its heartbeat is younger than `liveWithinMs`, and a silent owner's run lease ends a
 * run lease after its last renewal, which comes with its heartbeat. A stalled run is never counted running.
 */

import { isLive, liveWithinMs } from '../domain/liveness';
import type { RunLimits } from '../domain/run-limits';
import type { RunStatus, RunStore, WorkerRow } from '../store/contract';

export interface StallSettings {
  /** The store's now, epoch ms (a test's clock; Date.now() in production). */
  now: number;
  /** WAYBILL_RUN_LEASE_MS: how long a silent worker keeps its runs. */
  runLeaseMs: number;
  /** WAYBILL_HEARTBEAT_MS: how often a live worker beats. */
  heartbeatMs: number;
}

/** Everything stallOf needs, read once per request. */
export interface StallFacts {
  nowS: number;
  /** WAYBILL_HEARTBEAT_MS, for the liveness rule (lib/domain/liveness). */
  heartbeatMs: number;
  liveWithinS: number;
  runLeaseS: number;
  workers: Map<string, WorkerRow>;
  /** Per workflow name, the live workers that said they serve it. */
  servedBy: Map<string, string[]>;
  /**
   * A live worker that published nothing (a program running waybill/engine's Worker itself): it may serve any
   * workflow, so no queued run is called stalled while one is up.
   */
  unknownServer: boolean;
  /** The workers that published a served list (any list): the others may serve anything (queued.ts). */
  publishers: Set<string>;
  /** Per owner, the runs it holds in status `running`: its busy slots (queued.ts). At most STALL_SCAN in all. */
  busy: Map<string, string[]>;
  /** Per published workflow, the concurrency and rate limits it declares (queued.ts says what they hold back). */
  limits: Map<string, RunLimits>;
}

export type Stall =
  | { kind: 'no-live-worker'; workflow: string; message: string }
  | { kind: 'owner-silent'; owner: string; silentSince: number; takeoverAt: number; message: string };

/** The run's fields a stall is judged by: a runs row or a list's summary. */
export interface StallSubject {
  status: RunStatus | 'idle';
  workflow: string;
  owner: string | null;
  /** Undefined where the read does not carry it (a list's summary); null: no run lease (a library loop's run). */
  leaseExpiresAt?: number | null;
  /** An outside client's run: no worker owns it, so it is never stalled in this sense. */
  external?: boolean;
}

export async function readStallFacts(
  store: Pick<RunStore, 'listWorkers' | 'listPublishedWorkflows' | 'listRunHeads'>,
  settings: StallSettings,
): Promise<StallFacts> {
  const within = liveWithinMs(settings.heartbeatMs);
  const [workers, published, running] = await Promise.all([
    // The live workers, and the stopped ones still named as a running run's owner: every worker stallOf asks about.
    store.listWorkers({ notStopped: true, orOwningRunning: true }),
    store.listPublishedWorkflows({ liveWithinMs: within }),
    // As many as the fleet's slots (plus a silent owner's): a bounded read of the runs rows' owners.
    store.listRunHeads({ status: 'running', limit: STALL_SCAN }),
  ]);
  const busy = new Map<string, string[]>();
  for (const run of running) if (run.owner) busy.set(run.owner, [...(busy.get(run.owner) ?? []), run.id]);
  const nowS = settings.now / 1000;
  const liveWithinS = within / 1000;
  const servedBy = new Map(published.map((w) => [w.name, w.servedBy]));
  const serving = new Set(published.flatMap((w) => w.servedBy));
  const unknownServer = workers.some((w) => isLive(w, nowS, settings.heartbeatMs) && !serving.has(w.id));
  return {
    nowS,
    heartbeatMs: settings.heartbeatMs,
    liveWithinS,
    runLeaseS: settings.runLeaseMs / 1000,
    workers: new Map(workers.map((w) => [w.id, w])),
    servedBy,
    unknownServer,
    publishers: serving,
    busy,
    limits: new Map(published.map((w) => [w.name, w.limits])),
  };
}

/** The settings from the configuration (WAYBILL_RUN_LEASE_MS, WAYBILL_HEARTBEAT_MS), at this moment. */
export function stallSettings(
  cfg: { WAYBILL_RUN_LEASE_MS: number; WAYBILL_HEARTBEAT_MS: number },
  now = Date.now(),
): StallSettings {
  return { now, runLeaseMs: cfg.WAYBILL_RUN_LEASE_MS, heartbeatMs: cfg.WAYBILL_HEARTBEAT_MS };
}

/** Whether some live worker serves this workflow (or might: one that published nothing). */
export function served(facts: StallFacts, workflow: string): boolean {
  return facts.unknownServer || (facts.servedBy.get(workflow)?.length ?? 0) > 0;
}

export function stallOf(run: StallSubject, facts: StallFacts): Stall | null {
  if (run.external || run.workflow === 'external') return null;
  if (run.status === 'queued') {
    return served(facts, run.workflow)
      ? null
      : { kind: 'no-live-worker', workflow: run.workflow, message: `no live worker for ${run.workflow}` };
  }
  if (run.status !== 'running' || run.owner === null) return null;
  // A library loop's run has no run lease and its owner no worker row: it is its own executor, and no worker
  // takes it over, so its silence is the loop's business (its claims' leases still guard its steps).
  if (run.leaseExpiresAt === null) return null;
  const owner = facts.workers.get(run.owner);
  if (!owner || isLive(owner, facts.nowS, facts.heartbeatMs)) return null;
  const silentSince = owner.heartbeatAt;
  // A worker marked dead (stopped) gives its runs up at once; a silent one at its lease's end, which its last
  // renewal (at its last heartbeat) set, when the row at hand (a list's summary) does not say.
  const takeoverAt = owner.stoppedAt !== null ? owner.stoppedAt : (run.leaseExpiresAt ?? silentSince + facts.runLeaseS);
  const since = owner.stoppedAt !== null ? `stopped at ${iso(owner.stoppedAt)}` : `silent since ${iso(silentSince)}`;
  const when = !served(facts, run.workflow)
    ? `will be taken over once a worker for ${run.workflow} is live`
    : takeoverAt <= facts.nowS
      ? 'will be taken over at the next worker poll'
      : `will be taken over at ${iso(takeoverAt)}`;
  return {
    kind: 'owner-silent',
    owner: run.owner,
    silentSince,
    takeoverAt,
    message: `owner ${run.owner} ${since}, ${when}`,
  };
}

/** The view's field: what the API's run views and `waybill runs --json` carry. */
export function stallField(stall: Stall | null) {
  if (!stall) return null;
  return stall.kind === 'no-live-worker'
    ? { kind: stall.kind, message: stall.message, workflow: stall.workflow }
    : {
        kind: stall.kind,
        message: stall.message,
        owner: stall.owner,
        silentSince: stall.silentSince,
        takeoverAt: stall.takeoverAt,
      };
}

/** Runs read per kind when counting: more than this are shown as "at least". */
export const STALL_SCAN = 1000;

export interface StallCount {
  noLiveWorker: number;
  ownerSilent: number;
  /** A count reached STALL_SCAN: there are at least this many. */
  atLeast: boolean;
}

/**
 * How many runs are stalled, for the banner and the figures. Bounded reads of the runs rows alone (listRunHeads:
 * one index range each, never a summary of progress and counts): the running runs (as many as the workers'
 * slots, plus the silent ones'), the newest queued runs, and the queued runs of the workflows no live worker
 * serves, of the names given (the catalog's). Each is judged by stallOf, as the list judges its rows.
 */
export async function countStalled(
  store: Pick<RunStore, 'listRunHeads'>,
  facts: StallFacts,
  options: { workflows: Iterable<string> },
): Promise<StallCount> {
  const running = await store.listRunHeads({ status: 'running', limit: STALL_SCAN });
  const ownerSilent = running.filter((run) => stallOf(run, facts)?.kind === 'owner-silent').length;
  let atLeast = running.length >= STALL_SCAN;
  const waiting = new Set<string>();
  if (!facts.unknownServer) {
    // The newest queued runs, whatever their workflow (a name nothing published), and the queued runs of the
    // known workflows no live worker serves (the catalog's names, built-ins too): the same run counted once.
    const names = new Set([...options.workflows, ...facts.servedBy.keys()]);
    const unserved = [...names].filter((name) => name !== 'external' && !served(facts, name));
    const [newest, ofUnserved] = await Promise.all([
      store.listRunHeads({ status: 'queued', limit: STALL_SCAN }),
      store.listRunHeads({ status: 'queued', workflows: unserved, limit: STALL_SCAN }),
    ]);
    for (const run of [...newest, ...ofUnserved]) if (stallOf(run, facts)) waiting.add(run.id);
    if (ofUnserved.length >= STALL_SCAN) atLeast = true;
  }
  const noLiveWorker = waiting.size;
  return { noLiveWorker, ownerSilent, atLeast };
}

/** Epoch seconds as ISO 8601 to the second: what the messages print. */
function iso(seconds: number): string {
  return new Date(Math.round(seconds) * 1000).toISOString().replace('.000Z', 'Z');
}
