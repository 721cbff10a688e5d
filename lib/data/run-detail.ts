import 'server-only';
/**
 * Everything the run page shows, shaped for it: the run (or an outside client's run, synthesized from its
 * rows), progress with an ETA, charts' series grouped into a few hundred points by the database, the timeline,
 * committed results, live claims, redo ÷ save, and warnings about keys.
 */
import { cache } from 'react';
import { type RunFigures, runFigures } from '../control/figures';
import { type QueuedReason, queuedReasonOf } from '../control/queued';
import { readRunRows } from '../control/run-rows';
import { type Stall, stallOf } from '../control/stalled';
import { granularityAdvice } from '../engine/advice';
import { eventText } from '../engine/attempt-note';
import type {
  AuditEntry,
  ClaimRow,
  CommittedRow,
  RunAction,
  RunRow,
  RunSummary,
  RunTags,
  StepEvent,
  StepTiming,
  UnstableKeyGroup,
} from '../store/contract';
import { TRANSITIONS } from '../store/shared/transitions';
import { lastActivity, recentRate } from './rates';
import { getStallFacts } from './stalled';
import { type StepInFlight, stepInFlight } from './step-in-flight';
import { claimTtlMs, getStore } from './store';

/** Charts never get more points than this, whatever the run's length: the database groups rows into this many. */
export const MAX_POINTS = 400;

export interface RunDetail {
  /** The runs row, or an outside client's run made from its rows (lib/store/shared/outside-runs.ts: `idle` or `running`). */
  run: Omit<RunRow, 'status'> & { status: RunSummary['status']; external: boolean };
  /** When the run last moved (its row or its progress), or null when nothing has a time. */
  lastActivityAt: number | null;
  /** Its tags and metadata (ctx.setTags, ctx.setMetadata, or given at start). */
  tags: RunTags;
  progress: {
    step: number;
    stateJson: string;
    executed: number;
    skipped: number;
    awaited: number;
    saveMs: number | null;
    updatedAt: number;
  } | null;
  /** The first RUN_CLAIMS_SHOWN claims, oldest first (lib/control/run-rows.ts); claimCount says how many there are in all. */
  claims: ClaimRow[];
  claimCount: { total: number; orphaned: number };
  committedCount: number;
  committed: CommittedRow[];
  events: StepEvent[];
  /** Who did what to this run (the audit log's lines for it), newest first. */
  audit: AuditEntry[];
  /** Mean step duration per range of steps (one point per step on a run shorter than MAX_POINTS). */
  durations: { step: number; durationMs: number }[];
  cumulative: { t: number; executed: number; skipped: number; awaited: number }[];
  eta: { stepsPerMinute: number; remaining: number; seconds: number } | null;
  redoSave: { stepMs: number; saveMs: number; ratio: number; advice: string } | null;
  unstableKeys: UnstableKeyGroup[];
  keyReuse: StepEvent[];
  actions: RunAction[];
  /** Why the run is not moving (lib/control/stalled.ts), or null. */
  stall: Stall | null;
  /** What a queued run waits for (lib/control/queued.ts), or null. */
  queuedReason: QueuedReason | null;
  /** Progress, executed, committed… as every view shows them (lib/control/figures.ts). */
  figures: RunFigures;
  /** The step being retried: its last failed attempt and when the next is due (lib/data/step-in-flight.ts). */
  inFlight: StepInFlight | null;
}

/** Rows of the committed table per page, and events on the timeline: what a page can render in a few ms. */
export const COMMITTED_PAGE = 50;
export const TIMELINE_EVENTS = 50;
/** Enough recent steps for the ETA's last minute and a current median step time, read backwards from an index. */
const RECENT_STEPS = 200;

/**
 * The rows that say a run exists (lib/control/run-rows.ts), read once per request (React's cache): the page
 * asks first whether the run exists, before it streams, and then renders it from the same rows.
 */
const runRows = cache(async (id: string) => readRunRows(await getStore(), id, claimTtlMs()));

/** Whether anything is stored under this run id: a run row, progress, a claim or a committed row. */
export async function runExists(id: string): Promise<boolean> {
  return (await runRows(id)) !== null;
}

export async function getRunDetail(
  id: string,
  options: { q?: string; after?: string } = {},
): Promise<RunDetail | null> {
  const store = await getStore();
  const rows = await runRows(id);
  if (!rows) return null;
  const { row, progress, claims, claimCount, outside } = rows;
  // Every read here is bounded whatever the run's length: a page of rows, the last events, the last steps.
  const [committed, events, keyReuse, recent, audit, [lastFailed], facts] = await Promise.all([
    options.q
      ? store.searchCommitted(id, options.q, { limit: COMMITTED_PAGE })
      : store.listCommitted(id, { limit: COMMITTED_PAGE, afterKey: options.after }),
    store.recentEvents(id, { limit: TIMELINE_EVENTS }),
    store.recentEvents(id, { limit: 50, outcome: 'key_reuse' }),
    store.recentSteps(id, { limit: RECENT_STEPS }),
    store.listAudit({ runId: id, limit: TIMELINE_EVENTS }),
    store.recentEvents(id, { limit: 1, outcome: 'failed' }),
    getStallFacts(),
  ]);
  // One primary-key read, only while a step is being retried: has it committed since its last failure?
  const retriedKey = row?.status === 'running' ? (lastFailed?.idemKey ?? null) : null;
  const retriedCommitted = retriedKey ? (await store.getCommitted(retriedKey)) !== null : false;
  // What moves when the run's committed rows change: a commit comes with a progress write (the article's
  // client too) or lands at the end of the step order; a manual resolution, an expiry, a failure are events.
  const last = recent.at(-1);
  const charts = await runCharts(
    store,
    id,
    [progress?.updatedAt, events.at(-1)?.id, last?.idemKey, last?.committedAt, recent.length].join('|'),
  );
  const run = row ? { ...row, external: false } : { ...outside!, external: true };
  const stepMs = median(recent.flatMap((t) => (t.durationMs === null ? [] : [t.durationMs])));
  const saveMs = progress?.saveMs ?? null;
  return {
    run,
    lastActivityAt: lastActivity(run.updatedAt, progress?.updatedAt, last?.committedAt),
    progress: progress && {
      step: progress.step,
      stateJson: progress.stateJson,
      executed: progress.executed,
      skipped: progress.skipped,
      awaited: progress.awaited,
      saveMs,
      updatedAt: progress.updatedAt,
    },
    claims,
    claimCount,
    tags: rows.tags,
    committed,
    // A failed attempt's note and a takeover's two sides are columns: the timeline shows them in words.
    events: events.map((e) => ({ ...e, detail: eventText(e) })),
    audit,
    ...charts,
    eta: eta(run, progress?.step ?? 0, recent),
    redoSave:
      stepMs !== null && saveMs
        ? { stepMs, saveMs, ratio: stepMs / saveMs, advice: granularityAdvice(stepMs / saveMs) }
        : null,
    keyReuse,
    actions: row
      ? (Object.keys(TRANSITIONS) as RunAction[]).filter((a) => TRANSITIONS[a].from.includes(row.status))
      : [],
    stall: row ? stallOf(row, facts) : null,
    queuedReason: row ? await queuedReasonOf(store, row, facts) : null,
    // The cumulative chart's last point counts the run's executed committed rows: the same figure, one read.
    figures: runFigures({
      status: run.status,
      totalSteps: run.totalSteps,
      step: progress?.step ?? 0,
      committed: charts.committedCount,
      executed: charts.cumulative.at(-1)?.executed ?? 0,
      skipped: progress?.skipped ?? 0,
      awaited: progress?.awaited ?? 0,
    }),
    inFlight: row ? stepInFlight(row, lastFailed ?? null, claims, retriedCommitted) : null,
  };
}

type Charts = Pick<RunDetail, 'committedCount' | 'durations' | 'cumulative' | 'unstableKeys'>;

/**
 * The count, the charts' series and the unstable-key check read all of a run's committed rows (grouped in the
 * database), which on a 100,000-step run costs tens of milliseconds (a count alone, 30 ms on PostgreSQL).
 * They change only when the run commits, progresses or records an event, so they are kept per run under a
 * key made of exactly those, and recomputed when it moves.
 */
const chartCache = new Map<string, { key: string; charts: Charts }>();
const CACHED_RUNS = 64;

async function runCharts(store: Awaited<ReturnType<typeof getStore>>, id: string, key: string): Promise<Charts> {
  const hit = chartCache.get(id);
  if (hit?.key === key) return hit.charts;
  const [committedCount, steps, slices, unstableKeys] = await Promise.all([
    store.countCommitted(id),
    store.stepTimingBuckets(id, { buckets: MAX_POINTS }),
    store.commitBuckets(id, { buckets: MAX_POINTS }),
    store.unstableKeys(id),
  ]);
  const totals = { executed: 0, skipped: 0, awaited: 0 };
  const charts: Charts = {
    committedCount,
    durations: steps.flatMap((b) => (b.avgMs === null ? [] : [{ step: b.fromStep, durationMs: b.avgMs }])),
    cumulative: slices.map((b) => {
      totals.executed += b.executed;
      totals.skipped += b.skipped;
      totals.awaited += b.awaited;
      return { t: b.t, ...totals };
    }),
    unstableKeys,
  };
  chartCache.delete(id);
  chartCache.set(id, { key, charts });
  // A Map iterates in insertion order: the first key is the run looked at least recently.
  if (chartCache.size > CACHED_RUNS) chartCache.delete(chartCache.keys().next().value!);
  return charts;
}

/** The recent rate (lib/data/rates.ts) projected over what is left. */
function eta(
  run: Pick<RunDetail['run'], 'status' | 'totalSteps'>,
  step: number,
  timings: StepTiming[],
): RunDetail['eta'] {
  if (run.status !== 'running' || !run.totalSteps) return null;
  const rate = recentRate(timings);
  if (!rate) return null;
  const remaining = Math.max(0, run.totalSteps - step);
  return { stepsPerMinute: rate.perSecond * 60, remaining, seconds: remaining / rate.perSecond };
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
