/**
 * Reading what a crash test left behind: the effects file (one line per side effect that happened) and the
 * store's rows, read through a plain read-only connection so the reader changes nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { EffectResult } from '../fixtures/crash-child';
import { until } from '../support/until';

export { until };

export interface EffectLine {
  key: string;
  attempt: number;
  pid: number;
  worker: string;
}

export function readEffects(path: string): EffectLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^(\S+) attempt=(\d+) pid=(\d+) worker=(\S+)$/.exec(line);
      if (!m) throw new Error(`malformed effect line: ${line}`);
      return { key: m[1]!, attempt: Number(m[2]), pid: Number(m[3]), worker: m[4]! };
    });
}

/** How many times each key's side effect happened. */
export function countByKey<T extends { key: string }>(items: T[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { key } of items) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

export interface StoreSnapshot {
  committed: { key: string; step: number; workerId: string | null; result: EffectResult }[];
  claims: {
    key: string;
    step: number | null;
    claimedAt: number;
    heartbeatAt: number | null;
    workerId: string | null;
  }[];
  progress: { step: number; state: { processed?: number }; executed: number; skipped: number; awaited: number } | null;
  /** step_events outcome → summed count. */
  events: Record<string, number>;
  eventsByKey: { key: string | null; outcome: string }[];
}

export function snapshot(dbPath: string, runId: string): StoreSnapshot {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const committed = db
      .prepare<[string], { key: string; step: number; workerId: string | null; resultJson: string }>(
        'SELECT idem_key AS key, step, worker_id AS workerId, result_json AS resultJson FROM committed WHERE run_id = ? ORDER BY step',
      )
      .all(runId)
      .map(({ resultJson, ...row }) => ({ ...row, result: JSON.parse(resultJson) as EffectResult }));
    const claims = db
      .prepare<[string], StoreSnapshot['claims'][number]>(
        `SELECT idem_key AS key, step, claimed_at AS claimedAt, heartbeat_at AS heartbeatAt, worker_id AS workerId
         FROM claims WHERE run_id = ? ORDER BY idem_key`,
      )
      .all(runId);
    const p = db
      .prepare<[string], { step: number; stateJson: string; executed: number; skipped: number; awaited: number }>(
        'SELECT step, state_json AS stateJson, executed, skipped, awaited FROM progress WHERE run_id = ?',
      )
      .get(runId);
    const events: Record<string, number> = {};
    for (const e of db
      .prepare<[string], { outcome: string; n: number }>(
        'SELECT outcome, sum(count) AS n FROM step_events WHERE run_id = ? GROUP BY outcome',
      )
      .all(runId)) {
      events[e.outcome] = e.n;
    }
    const eventsByKey = db
      .prepare<[string], { key: string | null; outcome: string }>(
        'SELECT idem_key AS key, outcome FROM step_events WHERE run_id = ? ORDER BY id',
      )
      .all(runId);
    return {
      committed,
      claims,
      progress: p
        ? { step: p.step, state: JSON.parse(p.stateJson), executed: p.executed, skipped: p.skipped, awaited: p.awaited }
        : null,
      events,
      eventsByKey,
    };
  } finally {
    db.close();
  }
}
