/**
 * The metrics scrape on SQLite: counts and histograms computed by the database at scrape time, so every
 * worker's steps are counted whichever process serves /api/metrics. Histogram buckets are counted with
 * one SUM(CASE …) per bound: a scrape never loads rows. What only grows (steps, step durations) is the stored
 * tally plus the rows past its marks, by rowid and event id (shared/metrics-tally.ts): the scrape only reads it,
 * the workers advance it (advanceMetricsTally). The rest is small and read whole.
 */

import type { InsightStore, MetricOutcome, MetricsSnapshot, MetricsTallyStore } from '../contract';
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
import type { HistogramRow } from '../shared/histogram';
import { COUNT_COMMITTED, COUNT_EVENTS, MetricsTally, type TallyRow } from '../shared/metrics-tally';
import { EMPTY_BY_STATUS, STATUS_SQL } from '../shared/sql';
import { TALLY } from './columns';
import { guard, type SqliteConnection } from './connection';

const STATUSES = STATUS_SQL('sqlite');

/** Rows of each table read per chunk; a scrape gives the event loop a turn between chunks. */
const CHUNK_ROWS = 50_000;

const LOAD_TALLY = `SELECT ${TALLY} FROM metrics_tally WHERE bounds = ?`;
const SAVE_TALLY = `INSERT INTO metrics_tally
  (bounds, committed_mark, committed_mark_key, committed_mark_at, events_mark, steps_json, durations_json)
  VALUES (@bounds, @committedMark, @committedMarkKey, @committedMarkAt, @eventsMark, @stepsJson, @durationsJson)
  ON CONFLICT (bounds) DO UPDATE SET committed_mark = excluded.committed_mark, committed_mark_key = excluded.committed_mark_key,
    committed_mark_at = excluded.committed_mark_at, events_mark = excluded.events_mark,
    steps_json = excluded.steps_json, durations_json = excluded.durations_json`;
const EVENTS_TOP = 'SELECT max(id) AS top FROM step_events';

type MarkRow = { id: number; idemKey: string; committedAt: number };
type CommittedCount = HistogramRow & { executed: number };
type EventCount = HistogramRow & { outcome: MetricOutcome; count: number };
/** A scrape's chunk: the stored row it went by (its JSON, '' for none), the tally so far, and whether it caught up. */
type CountStep = { stored: string; tally: MetricsTally; done: boolean };

export function sqliteMetrics(c: SqliteConnection): Pick<InsightStore, 'metricsSnapshot'> & MetricsTallyStore {
  /** A read transaction (deferred, so it takes no lock): the stored row and the rows past it, from one snapshot. */
  const read = c.db.transaction((fn: () => CountStep): CountStep => fn());
  /**
   * What this process's scrapes counted, by bounds: the stored row they started from (its JSON, '' for none)
   * and the tally as they left it. The next scrape carries on from it while the stored row is the same.
   */
  const counted = new Map<string, { stored: string; tally: MetricsTally }>();

  /**
   * Counts what the stored tally has not, in chunks with a turn of the event loop between them, and saves
   * nothing. Events up to the top seen at the start: a count that chased every new event could run as long
   * as the writers do.
   */
  async function count(boundsMs: readonly number[]): Promise<MetricsTally> {
    const key = MetricsTally.key(boundsMs);
    let eventsTop: number | undefined;
    for (;;) {
      const step = guard(() =>
        read(() => {
          const row = c.prepared<[string], TallyRow>(LOAD_TALLY).get(key);
          const stored = row ? JSON.stringify(row) : '';
          const mine = counted.get(key);
          const base = fromStored(boundsMs, row);
          // Our own marks while the stored row is unchanged and both its mark and ours still hold: then a
          // process starting now from the stored row would count to the same values. A mark row gone (ours:
          // deleted by a fold that had nothing to add, or by an outside client) means rowids may be handed out
          // again below it; the stored row is then the one to go by.
          const tally =
            mine?.stored === stored && !base.executedReset && markHolds(mine.tally) ? mine.tally.clone() : base;
          eventsTop ??= c.prepared<[], { top: number | null }>(EVENTS_TOP).get()!.top ?? 0;
          return { stored, tally, done: chunk(tally, eventsTop) };
        }),
      );
      counted.set(key, { stored: step.stored, tally: step.tally });
      if (step.done) return step.tally;
      await new Promise((r) => setImmediate(r));
    }
  }

  /** The stored tally, its executed counts started over when its mark can no longer be trusted (markHolds). */
  function fromStored(boundsMs: readonly number[], row: TallyRow | undefined): MetricsTally {
    const tally = MetricsTally.load(boundsMs, row);
    if (!markHolds(tally)) tally.resetExecuted();
    return tally;
  }

  /** One chunk of each table past the tally's marks, events up to `eventsTop`; true once both have caught up. */
  function chunk(tally: MetricsTally, eventsTop: number): boolean {
    const committedDone = advanceCommitted(tally);
    return advanceEvents(tally, eventsTop) && committedDone;
  }

  /**
   * Events by id, which is AUTOINCREMENT: handed out in commit order (one writer at a time) and never reused,
   * so nothing can appear below the mark. True once the chunk reached `top`.
   */
  function advanceEvents(tally: MetricsTally, top: number): boolean {
    const lo = Math.max(0, tally.eventsMark);
    if (lo >= top) return true;
    const hi = Math.min(lo + CHUNK_ROWS, top);
    tally.addEvents(
      c
        .prepared<[number, number], EventCount>(COUNT_EVENTS('sqlite', tally.boundsMs, 'id > ? AND id <= ?'))
        .all(lo, hi),
    );
    tally.eventsMark = hi;
    return hi >= top;
  }

  /**
   * Whether the row at the `committed` mark is still the one counted, with the same key and commit time (a key
   * committed again after a prune may land on its old rowid, with a new time). `committed` is read by rowid,
   * which is not AUTOINCREMENT: its key is TEXT, so a new row takes max(rowid) + 1, at or below the mark once
   * the newest rows are deleted, and VACUUM may renumber every row. While the mark's row is there, max(rowid)
   * never fell below it and every row written since is above it; once it is not, rows at or below the mark may
   * be new and cannot be told from the counted ones, so the executed counts start over
   * (shared/metrics-tally.ts).
   */
  function markHolds(tally: MetricsTally): boolean {
    const marked = tally.committedMarkRow;
    if (!marked) return true;
    const there = c
      .prepared<[number], MarkRow>(
        'SELECT idem_key AS idemKey, committed_at AS committedAt FROM committed WHERE rowid = ?',
      )
      .get(tally.committedMark);
    return there?.idemKey === marked.idemKey && there.committedAt === marked.committedAt;
  }

  /** Reads one chunk of `committed` past the mark (checked by markHolds first); true once it has caught up. */
  function advanceCommitted(tally: MetricsTally): boolean {
    const lo = Math.max(0, tally.committedMark);
    const select =
      'SELECT rowid AS id, idem_key AS idemKey, committed_at AS committedAt FROM committed WHERE rowid > ?';
    const full = c.prepared<[number], MarkRow>(`${select} ORDER BY rowid LIMIT 1 OFFSET ${CHUNK_ROWS - 1}`).get(lo);
    const end = full ?? c.prepared<[number], MarkRow>(`${select} ORDER BY rowid DESC LIMIT 1`).get(lo);
    if (!end) return true;
    tally.addCommitted(
      c
        .prepared<[number, number], CommittedCount>(
          COUNT_COMMITTED('sqlite', tally.boundsMs, 'rowid > ? AND rowid <= ?'),
        )
        .get(lo, end.id),
    );
    tally.committedMark = end.id;
    tally.committedMarkRow = { idemKey: end.idemKey, committedAt: end.committedAt };
    return !full;
  }

  return {
    async metricsSnapshot(options): Promise<MetricsSnapshot> {
      const tally = await count(options.boundsMs);
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

    /**
     * One chunk past the stored marks, added and saved under BEGIN IMMEDIATE: the write lock is what keeps two
     * advancers (two workers, or a worker and a prune's fold) from counting the same rows. Synchronous, so the
     * lock is never held across an await.
     */
    async advanceMetricsTally(options) {
      const key = MetricsTally.key(options.boundsMs);
      const done = c.tx(() => {
        const row = c.prepared<[string], TallyRow>(LOAD_TALLY).get(key);
        const tally = fromStored(options.boundsMs, row);
        const done = chunk(tally, c.prepared<[], { top: number | null }>(EVENTS_TOP).get()!.top ?? 0);
        const next = tally.row();
        // Nothing new: no write, nothing for the WAL.
        if (!row || JSON.stringify(next) !== JSON.stringify(row)) c.prepared(SAVE_TALLY).run(next);
        return done;
      });
      return { done };
    },
  };
}
