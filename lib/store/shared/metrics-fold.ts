/**
 * What a delete of `committed` or `step_events` rows owes the metrics tally (metrics-tally.ts), written once
 * for both backends as a plan of `?` statements (plan.ts): a rerun yields it before it moves a
 * run's rows to history, and each backend's retention drives it (its plan.ts) before a prune batch deletes.
 *
 * A scrape serves the stored totals plus the rows past the stored marks, so a row past a mark may already be
 * in a counter Prometheus has read; deleted uncounted, it would leave that counter lower at the next scrape,
 * which Prometheus reads as a reset. So the rows to go that lie past a tally's marks are added to its totals,
 * marks unmoved, in the transaction that deletes them: a scrape, reading one snapshot, finds each one either
 * among the rows or in the sum. Rows at or below the marks are in the totals already.
 *
 * Every tally row is folded (a row per set of bounds), under the write lock: on SQLite the caller's
 * BEGIN IMMEDIATE, on PostgreSQL the rows locked FOR UPDATE, so an advance (which holds its row so) and a fold
 * never count a row twice. The dashboard's bounds get their row first if they have none yet: a process that
 * scraped before any worker advanced has these rows in its delta, and one that starts after must find them
 * in the totals.
 */
import { DURATION_BOUNDS_MS, type MetricOutcome } from '../contract/metrics';
import type { Dialect } from '../contract/rows';
import type { HistogramRow } from './histogram';
import { COUNT_COMMITTED, COUNT_EVENTS, MetricsTally, TALLY_MARKS } from './metrics-tally';
import { type Plan, q, type Statement } from './plan';

/** The rows about to be deleted: a WHERE (with its `?` values) on each table that loses rows. */
export interface Doomed {
  committed?: Statement;
  events?: Statement;
}

export function* foldPlan(d: Dialect, doomed: Doomed): Plan<void> {
  const empty = new MetricsTally(DURATION_BOUNDS_MS).row();
  yield q(
    'INSERT INTO metrics_tally (bounds, steps_json, durations_json) VALUES (?, ?, ?) ON CONFLICT (bounds) DO NOTHING',
    empty.bounds,
    empty.stepsJson,
    empty.durationsJson,
  );
  const stored = yield q(
    `SELECT bounds, committed_mark, events_mark, steps_json, durations_json FROM metrics_tally ORDER BY bounds${d === 'postgres' ? ' FOR UPDATE' : ''}`,
  );
  const marks = TALLY_MARKS[d];
  for (const row of stored) {
    const tally = MetricsTally.load(MetricsTally.boundsOf(String(row.bounds)), {
      bounds: String(row.bounds),
      committedMark: row.committed_mark === null ? null : Number(row.committed_mark),
      committedMarkKey: null,
      committedMarkAt: null,
      eventsMark: row.events_mark === null ? null : Number(row.events_mark),
      stepsJson: String(row.steps_json),
      durationsJson: String(row.durations_json),
    });
    if (doomed.committed) {
      const past = pastMark(doomed.committed, marks.committed, tally.committedMark);
      const [counted] = yield q(COUNT_COMMITTED(d, tally.boundsMs, past.sql), ...past.params);
      tally.addCommitted(counted as (HistogramRow & { executed: number }) | undefined);
    }
    if (doomed.events) {
      const past = pastMark(doomed.events, marks.events, tally.eventsMark);
      const counted = yield q(COUNT_EVENTS(d, tally.boundsMs, past.sql), ...past.params);
      tally.addEvents(counted as (HistogramRow & { outcome: MetricOutcome; count: number })[]);
    }
    const next = tally.row();
    if (next.stepsJson === row.steps_json && next.durationsJson === row.durations_json) continue;
    yield q(
      'UPDATE metrics_tally SET steps_json = ?, durations_json = ? WHERE bounds = ?',
      next.stepsJson,
      next.durationsJson,
      next.bounds,
    );
  }
}

/** The doomed rows past a mark (all of them when nothing was counted yet). */
function pastMark(doomed: Statement, column: string, mark: number): Statement {
  return Number.isFinite(mark)
    ? q(`(${doomed.sql}) AND ${column} > ?`, ...doomed.params, mark)
    : q(`(${doomed.sql})`, ...doomed.params);
}
