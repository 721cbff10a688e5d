/**
 * The part of a metrics scrape that only grows — steps by outcome and the step-duration histograms, read from
 * `committed` and `step_events` — kept as running totals and marks, so a scrape reads only the rows written
 * since. Counting a million rows on every scrape took seconds (and on SQLite, seconds of a blocked event loop).
 * The totals live in the store (the metrics_tally table, a row per set of histogram bounds), not in a process:
 * every dashboard process behind one port serves the same counter, and a restart carries on from it.
 *
 * A read never writes, so the three parts that touch the stored row are:
 * - the scrape reads it and counts the rows past its marks (tally + delta), saving nothing. Each process keeps
 *   what it counted beside the stored row it started from, and carries on from its own marks while that row is
 *   unchanged; once it changed, from the stored row again. Two processes at one moment serve the same values.
 * - a worker advances it (lib/engine/worker/tally.ts): one bounded chunk past the marks, added and saved under
 *   the write lock, so two advancers never count a row twice. Each backend's metrics.ts has that one chunk; the
 *   scrape runs the same counting without the save.
 * - a delete of `committed` or `step_events` rows folds those past the marks into the totals first, in its own
 *   transaction, marks unmoved (metrics-fold.ts): a scrape may have counted them in its delta, and the counter
 *   must not drop when they go. Rows at or below the marks are in the totals already.
 *
 * So the totals only grow, as Prometheus counters must, with one exception: on SQLite, when the row at the
 * `committed` mark is gone or renumbered, rowids at or below the mark may be handed out again, so the executed
 * counts start over from the rows that remain (a counter reset, which Prometheus's rate() and increase() take
 * in their stride).
 */

import { type DurationHistogram, METRIC_OUTCOMES, type MetricOutcome } from '../contract/metrics';
import type { Dialect } from '../contract/rows';
import { DIALECTS } from './dialects';
import type { HistogramRow } from './histogram';
import { COUNTED_EVENTS, histogramColumns } from './sql';

type Timed = 'executed' | 'failed' | 'lease_lost';

/** A metrics_tally row as both backends select it (their columns.ts: TALLY). A null mark: nothing read yet. */
export interface TallyRow {
  bounds: string;
  committedMark: number | null;
  committedMarkKey: string | null;
  committedMarkAt: number | null;
  eventsMark: number | null;
  stepsJson: string;
  durationsJson: string;
}

export class MetricsTally {
  readonly steps = Object.fromEntries(METRIC_OUTCOMES.map((o) => [o, 0])) as Record<MetricOutcome, number>;
  readonly durations: Record<Timed, DurationHistogram>;
  /** How far `committed` and `step_events` have been read: a backend's own cursor (rowid, id or time). */
  committedMark = Number.NEGATIVE_INFINITY;
  eventsMark = Number.NEGATIVE_INFINITY;
  /** SQLite: the row at `committedMark` when it was read, to tell whether it is still the one there. */
  committedMarkRow: { idemKey: string; committedAt: number } | undefined;
  /** Whether resetExecuted() was called since this tally was loaded (a copy starts without it). */
  executedReset = false;

  constructor(readonly boundsMs: readonly number[]) {
    const empty = (): DurationHistogram => ({
      boundsMs: [...boundsMs],
      counts: boundsMs.map(() => 0),
      count: 0,
      sumMs: 0,
    });
    this.durations = { executed: empty(), failed: empty(), lease_lost: empty() };
  }

  /** The key of these bounds' row. */
  static key(boundsMs: readonly number[]): string {
    return boundsMs.join();
  }

  /** The bounds a row's key stands for. */
  static boundsOf(key: string): number[] {
    return key === '' ? [] : key.split(',').map(Number);
  }

  /** The tally stored for these bounds, or a fresh one when there is none yet. */
  static load(boundsMs: readonly number[], row: TallyRow | undefined): MetricsTally {
    const tally = new MetricsTally(boundsMs);
    if (!row) return tally;
    // Merged over zeros: an outcome added in a later version starts at 0 rather than undefined.
    const steps = JSON.parse(row.stepsJson) as Partial<Record<MetricOutcome, number>>;
    for (const o of METRIC_OUTCOMES) tally.steps[o] = steps[o] ?? 0;
    const durations = JSON.parse(row.durationsJson) as Partial<
      Record<Timed, Pick<DurationHistogram, 'counts' | 'count' | 'sumMs'>>
    >;
    for (const t of ['executed', 'failed', 'lease_lost'] as const) {
      const stored = durations[t];
      if (stored)
        Object.assign(tally.durations[t], { counts: [...stored.counts], count: stored.count, sumMs: stored.sumMs });
    }
    tally.committedMark = row.committedMark ?? Number.NEGATIVE_INFINITY;
    tally.eventsMark = row.eventsMark ?? Number.NEGATIVE_INFINITY;
    tally.committedMarkRow =
      row.committedMarkKey !== null && row.committedMarkAt !== null
        ? { idemKey: row.committedMarkKey, committedAt: row.committedMarkAt }
        : undefined;
    return tally;
  }

  /** The row to store. */
  row(): TallyRow {
    const mark = (m: number) => (Number.isFinite(m) ? m : null);
    const durations = Object.fromEntries(
      Object.entries(this.durations).map(([t, h]) => [t, { counts: h.counts, count: h.count, sumMs: h.sumMs }]),
    );
    return {
      bounds: MetricsTally.key(this.boundsMs),
      committedMark: mark(this.committedMark),
      committedMarkKey: this.committedMarkRow?.idemKey ?? null,
      committedMarkAt: this.committedMarkRow?.committedAt ?? null,
      eventsMark: mark(this.eventsMark),
      stepsJson: JSON.stringify(this.steps),
      durationsJson: JSON.stringify(durations),
    };
  }

  /** Forgets what `committed` contributed, to count it again from its first row. */
  resetExecuted(): void {
    this.executedReset = true;
    this.steps.executed = 0;
    const h = this.durations.executed;
    h.counts.fill(0);
    h.count = 0;
    h.sumMs = 0;
    this.committedMark = Number.NEGATIVE_INFINITY;
    this.committedMarkRow = undefined;
  }

  /** A copy to count on, leaving this one as it was. */
  clone(): MetricsTally {
    return MetricsTally.load(this.boundsMs, this.row());
  }

  /** Adds what COUNT_COMMITTED read: an executed step is its committed row (no `executed` event is written). */
  addCommitted(row: (HistogramRow & { executed: number }) | undefined): void {
    this.steps.executed += Number(row?.executed ?? 0);
    this.addDurations('executed', row);
  }

  /** Adds what COUNT_EVENTS read, a row per outcome. */
  addEvents(rows: (HistogramRow & { outcome: MetricOutcome; count: number })[]): void {
    for (const row of rows) {
      this.steps[row.outcome] += Number(row.count);
      if (row.outcome === 'failed' || row.outcome === 'lease_lost') this.addDurations(row.outcome, row);
    }
  }

  /** Adds a chunk's bucket counts (n, total, b0…bN as the SQL names them) to one histogram. */
  addDurations(target: Timed, row: HistogramRow | undefined): void {
    if (!row) return;
    const h = this.durations[target];
    h.count += Number(row.n ?? 0);
    h.sumMs += Number(row.total ?? 0);
    for (let i = 0; i < h.counts.length; i++) h.counts[i]! += Number(row[`b${i}`] ?? 0);
  }

  /** Copies, so a caller holding a snapshot does not share arrays with the tally. */
  snapshot(): { steps: Record<MetricOutcome, number>; stepDurations: Record<Timed, DurationHistogram> } {
    const copy = (h: DurationHistogram): DurationHistogram => ({
      ...h,
      boundsMs: [...h.boundsMs],
      counts: [...h.counts],
    });
    return {
      steps: { ...this.steps },
      stepDurations: {
        executed: copy(this.durations.executed),
        failed: copy(this.durations.failed),
        lease_lost: copy(this.durations.lease_lost),
      },
    };
  }
}

/**
 * Each backend's marks: SQLite reads `committed` by rowid and events by id (the order it wrote them in, one
 * writer at a time); PostgreSQL reads both by time, since its ids are taken before the rows become visible.
 */
export const TALLY_MARKS: Record<Dialect, { committed: string; events: string }> = {
  sqlite: { committed: 'rowid', events: 'id' },
  postgres: { committed: 'committed_at', events: 'at' },
};

/** What a tally counts of the `committed` rows `where` picks (a WHERE of either parameter style). */
export const COUNT_COMMITTED = (d: Dialect, boundsMs: readonly number[], where: string): string =>
  `SELECT count(*)${DIALECTS[d].float} AS executed, ${histogramColumns(d, 'duration_ms', boundsMs)}
  FROM committed WHERE source = 'executed' AND (${where})`;

/** What a tally counts of the step events `where` picks: a row per outcome. */
export const COUNT_EVENTS = (d: Dialect, boundsMs: readonly number[], where: string): string =>
  `SELECT outcome, coalesce(sum(count), 0)${DIALECTS[d].float} AS count, ${histogramColumns(d, 'duration_ms', boundsMs)}
  FROM step_events WHERE (${COUNTED_EVENTS}) AND (${where}) GROUP BY outcome`;
