/**
 * The metrics scrape on SQLite: counts and histograms computed by the database at scrape time, so every
 * worker's steps are counted whichever process serves /api/metrics. Histogram buckets are counted with
 * one SUM(CASE …) per bound: a scrape never loads rows. What only grows (steps, step durations) is kept as
 * running totals in the store and advanced by rowid and event id (shared/metrics-tally.ts); the rest is small and
 * read whole.
 */

import type { InsightStore, MetricOutcome, MetricsSnapshot } from '../contract';
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
import type { HistogramRow } from '../shared/histogram';
import { MetricsTally, type TallyRow } from '../shared/metrics-tally';
import { COUNTED_EVENTS, EMPTY_BY_STATUS, histogramColumns, STATUS_SQL } from '../shared/sql';
import { TALLY } from './columns';
import { guard, type SqliteConnection } from './connection';

const STATUSES = STATUS_SQL('sqlite');

/** Rows read per step of the first scrape's catch-up; the event loop gets a turn between steps. */
const CHUNK_ROWS = 50_000;

const LOAD_TALLY = `SELECT ${TALLY} FROM metrics_tally WHERE bounds = ?`;
const SAVE_TALLY = `INSERT INTO metrics_tally
  (bounds, committed_mark, committed_mark_key, committed_mark_at, events_mark, steps_json, durations_json)
  VALUES (@bounds, @committedMark, @committedMarkKey, @committedMarkAt, @eventsMark, @stepsJson, @durationsJson)
  ON CONFLICT (bounds) DO UPDATE SET committed_mark = excluded.committed_mark, committed_mark_key = excluded.committed_mark_key,
    committed_mark_at = excluded.committed_mark_at, events_mark = excluded.events_mark,
    steps_json = excluded.steps_json, durations_json = excluded.durations_json`;

export function sqliteMetrics(c: SqliteConnection): Pick<InsightStore, 'metricsSnapshot'> {
  /**
   * Reads the committed rows and events written since the last scrape. Events by id, which is AUTOINCREMENT:
   * handed out in commit order (one writer at a time) and never reused, so nothing can appear below the
   * mark. `committed` by rowid, which is not: its key is TEXT, so a new row takes max(rowid) + 1, at or below
   * the mark once the newest rows are deleted, and VACUUM may renumber every row. Returns the tally as the
   * last chunk saved it.
   */
  async function advance(boundsMs: readonly number[]): Promise<MetricsTally> {
    const bounds = Object.fromEntries(boundsMs.map((b, i) => [`b${i}`, b]));
    const cols = histogramColumns('sqlite', 'duration_ms', boundsMs.length);
    let step = chunk(boundsMs, (tally) => advanceCommitted(tally, bounds, cols));
    while (!step.done) {
      await new Promise((r) => setImmediate(r));
      step = chunk(boundsMs, (tally) => advanceCommitted(tally, bounds, cols));
    }
    // Up to the top seen now: a catch-up that chased every new event could run as long as the writers do.
    const eventsTop =
      guard(() => c.db.prepare<[], { top: number | null }>('SELECT max(id) AS top FROM step_events').get()!.top) ?? 0;
    for (;;) {
      const events = chunk(boundsMs, (tally) => advanceEvents(tally, bounds, cols, eventsTop));
      if (events.done) return events.tally;
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * One step of a catch-up, under BEGIN IMMEDIATE: loads the shared tally, lets `read` add one chunk to it,
   * and saves it. The write lock is what keeps two processes (or two scrapes of one) from counting the same
   * rows: each reads past the mark the other saved. Synchronous, so the lock is never held across an await.
   */
  function chunk(
    boundsMs: readonly number[],
    read: (tally: MetricsTally) => boolean,
  ): { tally: MetricsTally; done: boolean } {
    return c.tx(() => {
      const row = c.prepared<[string], TallyRow>(LOAD_TALLY).get(MetricsTally.key(boundsMs));
      const tally = MetricsTally.load(boundsMs, row);
      const done = read(tally);
      const next = tally.row();
      // Most scrapes find nothing new: no write, nothing for the WAL.
      if (!row || JSON.stringify(next) !== JSON.stringify(row)) c.prepared(SAVE_TALLY).run(next);
      return { tally, done };
    });
  }

  /** Reads one chunk of events past the mark, up to `top`; true once it has reached it. */
  function advanceEvents(tally: MetricsTally, bounds: Record<string, number>, cols: string, top: number): boolean {
    const lo = Math.max(0, tally.eventsMark);
    if (lo >= top) return true;
    const hi = Math.min(lo + CHUNK_ROWS, top);
    const rows = c.db
      .prepare<[Record<string, number>], HistogramRow & { outcome: MetricOutcome; count: number }>(`
      SELECT outcome, coalesce(sum(count), 0) AS count, ${cols} FROM step_events
      WHERE id > @lo AND id <= @hi AND (${COUNTED_EVENTS}) GROUP BY outcome`)
      .all({ ...bounds, lo, hi });
    for (const row of rows) {
      tally.steps[row.outcome] += row.count;
      if (row.outcome === 'failed' || row.outcome === 'lease_lost') tally.addDurations(row.outcome, row);
    }
    tally.eventsMark = hi;
    return hi >= top;
  }

  /**
   * Reads one chunk of `committed` past the mark; true once it has caught up. The mark is
   * always a row, and the chunk first checks that row is still there with the same key and commit time (a
   * key committed again after a prune may land on its old rowid, with a new time): then max(rowid) never fell
   * below it since, and every row written since is above it. If not, rows at or below the mark may be new,
   * and cannot be told from the counted ones: the executed counts start over (shared/metrics-tally.ts).
   */
  function advanceCommitted(tally: MetricsTally, bounds: Record<string, number>, cols: string): boolean {
    type MarkRow = { id: number; idemKey: string; committedAt: number };
    const marked = tally.committedMarkRow;
    if (marked) {
      const there = c.db
        .prepare<[number], MarkRow>(
          'SELECT idem_key AS idemKey, committed_at AS committedAt FROM committed WHERE rowid = ?',
        )
        .get(tally.committedMark);
      if (there?.idemKey !== marked.idemKey || there.committedAt !== marked.committedAt) tally.resetExecuted();
    }
    const lo = Math.max(0, tally.committedMark);
    const select =
      'SELECT rowid AS id, idem_key AS idemKey, committed_at AS committedAt FROM committed WHERE rowid > ?';
    const full = c.db.prepare<[number], MarkRow>(`${select} ORDER BY rowid LIMIT 1 OFFSET ${CHUNK_ROWS - 1}`).get(lo);
    const end = full ?? c.db.prepare<[number], MarkRow>(`${select} ORDER BY rowid DESC LIMIT 1`).get(lo);
    if (!end) return true;
    // An executed step is its committed row: no `executed` event is written (docs/DESIGN-DECISIONS.md).
    const row = c.db
      .prepare<[Record<string, number>], HistogramRow & { executed: number }>(`
      SELECT count(*) AS executed, ${cols} FROM committed WHERE rowid > @lo AND rowid <= @hi AND source = 'executed'`)
      .get({ ...bounds, lo, hi: end.id });
    tally.steps.executed += row?.executed ?? 0;
    tally.addDurations('executed', row);
    tally.committedMark = end.id;
    tally.committedMarkRow = { idemKey: end.idemKey, committedAt: end.committedAt };
    return !full;
  }

  return {
    async metricsSnapshot(options): Promise<MetricsSnapshot> {
      const tally = await advance(options.boundsMs);
      const now = c.now();
      // The rest is small (a row per run or claim at most) and read whole, in one read transaction.
      return guard(() =>
        c.db.transaction((): MetricsSnapshot => {
          const claims = c.db
            .prepare<[{ now: number; ttl: number }], { total: number; orphaned: number }>(`
          SELECT count(*) AS total, coalesce(sum(CASE WHEN ${claimExpiresAtText('@ttl')} <= @now THEN 1 ELSE 0 END), 0) AS orphaned
          FROM claims`)
            .get({ now, ttl: options.claimTtlMs / 1000 })!;

          const runsByStatus = { ...EMPTY_BY_STATUS };
          for (const { status, n } of c.db
            .prepare<[], { status: keyof typeof EMPTY_BY_STATUS; n: number }>(STATUSES)
            .all()) {
            runsByStatus[status] += n;
          }
          const workers = c.db
            .prepare<[number], { id: string; heartbeatAgeSeconds: number }>(`
          SELECT id, ? - heartbeat_at AS heartbeatAgeSeconds FROM workers WHERE stopped_at IS NULL ORDER BY id`)
            .all(now);

          return {
            ...tally.snapshot(),
            claims: { live: claims.total - claims.orphaned, orphaned: claims.orphaned },
            runsByStatus,
            workers,
          };
        })(),
      );
    },
  };
}
