import 'server-only';
/**
 * Everything the run page shows, shaped for it: the run (or an outside client's run, synthesized from its
 * rows), progress with an ETA, charts' series sampled down server-side, the timeline, committed results,
 * live claims, redo ÷ save, and warnings about keys.
 */
import { granularityAdvice } from '../engine/advice';
import { TRANSITIONS } from '../store/transitions';
import type { AuditEntry, ClaimRow, CommittedRow, RunAction, RunRow, StepEvent, StepTiming } from '../store/types';
import { claimTtlMs, getStore } from './store';

/** Charts never get more points than this, whatever the run's length. */
export const MAX_POINTS = 400;

export interface RunDetail {
  run: RunRow & { external: boolean };
  progress: { step: number; state: unknown; executed: number; skipped: number; awaited: number; saveMs: number | null; updatedAt: number } | null;
  claims: ClaimRow[];
  committedCount: number;
  committed: CommittedRow[];
  events: StepEvent[];
  /** Who did what to this run (the audit log's lines for it), newest first. */
  audit: AuditEntry[];
  durations: { step: number; durationMs: number }[];
  cumulative: { t: number; executed: number; skipped: number; awaited: number }[];
  eta: { stepsPerMinute: number; remaining: number; seconds: number } | null;
  redoSave: { stepMs: number; saveMs: number; ratio: number; advice: string } | null;
  unstableKeys: { step: number; keys: string[] }[];
  keyReuse: StepEvent[];
  actions: RunAction[];
}

/** Whether anything is stored under this run id: a run row, progress, or a claim. */
export async function runExists(id: string): Promise<boolean> {
  const store = await getStore();
  if (await store.getRun(id)) return true;
  if (await store.loadProgress(id)) return true;
  return (await store.listClaims({ runId: id, claimTtlMs: claimTtlMs() })).length > 0;
}

export async function getRunDetail(id: string, options: { q?: string } = {}): Promise<RunDetail | null> {
  const store = await getStore();
  const [row, progress, claims] = await Promise.all([
    store.getRun(id), store.loadProgress(id), store.listClaims({ runId: id, claimTtlMs: claimTtlMs() }),
  ]);
  if (!row && !progress && claims.length === 0) return null;
  const [committedCount, committed, events, timings, unstableKeys, audit] = await Promise.all([
    store.countCommitted(id),
    options.q ? store.searchCommitted(id, options.q, { limit: 100 }) : store.listCommitted(id, { limit: 100 }),
    store.listEvents(id, { limit: 20_000 }),
    store.listStepTimings(id, { limit: 200_000 }),
    store.unstableKeys(id),
    store.listAudit({ runId: id, limit: 100 }),
  ]);
  const run = row ? { ...row, external: false } : externalRun(id, progress?.updatedAt ?? null, claims);
  const stepMs = median(timings.flatMap((t) => (t.durationMs === null ? [] : [t.durationMs])));
  const saveMs = progress?.saveMs ?? null;
  return {
    run,
    progress: progress && {
      step: progress.step, state: safeParse(progress.stateJson), executed: progress.executed, skipped: progress.skipped,
      awaited: progress.awaited, saveMs, updatedAt: progress.updatedAt,
    },
    claims,
    committedCount,
    committed,
    events: events.slice(-300),
    audit,
    durations: sample(timings.filter((t) => t.step !== null && t.durationMs !== null)
      .map((t) => ({ step: t.step!, durationMs: t.durationMs! }))),
    cumulative: cumulative(timings, events),
    eta: eta(run, progress?.step ?? 0, timings),
    redoSave: stepMs !== null && saveMs ? { stepMs, saveMs, ratio: stepMs / saveMs, advice: granularityAdvice(stepMs / saveMs) } : null,
    unstableKeys,
    keyReuse: events.filter((e) => e.outcome === 'key_reuse'),
    actions: run.external ? [] : (Object.keys(TRANSITIONS) as RunAction[]).filter((a) => TRANSITIONS[a].from.includes(run.status)),
  };
}

function externalRun(id: string, updatedAt: number | null, claims: ClaimRow[]): RunRow & { external: boolean } {
  const touched = Math.max(updatedAt ?? 0, ...claims.map((c) => c.claimedAt));
  return {
    id, workflow: 'external', inputJson: 'null', status: claims.length > 0 ? 'running' : 'completed', totalSteps: null,
    owner: claims[0]?.workerId ?? null, leaseExpiresAt: null, attempts: 0, error: null, outputJson: null,
    createdAt: touched, updatedAt: touched, startedAt: null, finishedAt: null, external: true,
  };
}

/** Executed steps from committed rows, skips and awaits from their folded events, as running totals. */
function cumulative(timings: StepTiming[], events: StepEvent[]) {
  const points: { t: number; outcome: 'executed' | 'skipped' | 'awaited'; n: number }[] = [
    ...timings.filter((t) => t.source === 'executed').map((t) => ({ t: t.committedAt, outcome: 'executed' as const, n: 1 })),
    ...events.filter((e) => e.outcome === 'skipped' || e.outcome === 'awaited')
      .map((e) => ({ t: e.at, outcome: e.outcome as 'skipped' | 'awaited', n: e.count })),
  ].sort((a, b) => a.t - b.t);
  const totals = { executed: 0, skipped: 0, awaited: 0 };
  const series = points.map((p) => {
    totals[p.outcome] += p.n;
    return { t: p.t, ...totals };
  });
  return sample(series);
}

/**
 * The rate over the steps committed in the last minute before the latest one, projected over what is
 * left. A window in time rather than a count of steps, so a crash's gap does not drag the rate down.
 */
function eta(run: RunRow, step: number, timings: StepTiming[]): RunDetail['eta'] {
  if (run.status !== 'running' || !run.totalSteps) return null;
  const times = timings.map((t) => t.committedAt).sort((a, b) => a - b);
  const latest = times[times.length - 1];
  if (latest === undefined) return null;
  const recent = times.filter((t) => t >= latest - 60);
  if (recent.length < 2) return null;
  const span = latest - recent[0]!;
  if (span <= 0) return null;
  const perSecond = (recent.length - 1) / span;
  const remaining = Math.max(0, run.totalSteps - step);
  return { stepsPerMinute: perSecond * 60, remaining, seconds: remaining / perSecond };
}

/** Every k-th point, always keeping the last, so a 100,000-step run ships at most MAX_POINTS. */
function sample<T>(points: T[]): T[] {
  if (points.length <= MAX_POINTS) return points;
  const every = Math.ceil(points.length / MAX_POINTS);
  const out = points.filter((_, i) => i % every === 0);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]!);
  return out;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}
