/**
 * The control plane's reads on SQLite: aggregates and series computed by the database, so a page never
 * pulls a run's whole history to count it.
 */
import { guard } from './sqlite-base';
import { EMPTY_BY_STATUS, SqliteMetrics, STATUS_SQL } from './sqlite-metrics';
import type { CommittedRow, InsightStore, Outcome, RunStats, StepTiming } from './types';

export abstract class SqliteInsights extends SqliteMetrics implements InsightStore {
  async runStats(options: { sinceSeconds: number; claimTtlMs: number }): Promise<RunStats> {
    return guard(() => {
      const now = this.now();
      const byStatus = { ...EMPTY_BY_STATUS };
      const statuses = this.db.prepare<[], { status: keyof typeof EMPTY_BY_STATUS; n: number }>(STATUS_SQL).all();
      for (const { status, n } of statuses) byStatus[status] += n;
      const totals = this.db.prepare<[], { executed: number; skipped: number; awaited: number }>(`
        SELECT coalesce(sum(executed), 0) AS executed, coalesce(sum(skipped), 0) AS skipped,
          coalesce(sum(awaited), 0) AS awaited FROM progress`).get()!;
      const committedSince = this.db.prepare<[number], { n: number }>(
        'SELECT count(*) AS n FROM committed WHERE committed_at >= ?').get(options.sinceSeconds)!.n;
      const orphanedClaims = this.db.prepare<[number, number], { n: number }>(
        'SELECT count(*) AS n FROM claims WHERE coalesce(lease_expires_at, claimed_at + ?) <= ?')
        .get(options.claimTtlMs / 1000, now)!.n;
      return { byStatus, ...totals, committedSince, orphanedClaims };
    });
  }

  async listStepTimings(runId: string, options: { limit?: number } = {}): Promise<StepTiming[]> {
    return guard(() => this.db.prepare<[string, number], StepTiming>(`SELECT step, idem_key AS idemKey,
        committed_at AS committedAt, duration_ms AS durationMs, source
      FROM committed WHERE run_id = ? ORDER BY coalesce(step, -1), idem_key LIMIT ?`)
      .all(runId, options.limit ?? 10_000));
  }

  async searchCommitted(runId: string, query: string, options: { limit?: number } = {}): Promise<CommittedRow[]> {
    const pattern = `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return guard(() => this.db.prepare<[string, string, number], CommittedRow>(`SELECT idem_key AS idemKey,
        run_id AS runId, result_json AS resultJson, committed_at AS committedAt, step, fingerprint,
        worker_id AS workerId, duration_ms AS durationMs, source
      FROM committed WHERE run_id = ? AND idem_key LIKE ? ESCAPE '\\'
      ORDER BY coalesce(step, -1), idem_key LIMIT ?`).all(runId, pattern, options.limit ?? 100));
  }

  async unstableKeys(runId: string, options: { limit?: number } = {}): Promise<{ step: number; keys: string[] }[]> {
    const rows = guard(() => this.db.prepare<[string, number], { step: number; keys: string }>(`
      SELECT step, json_group_array(idem_key) AS keys FROM committed
      WHERE run_id = ? AND step IS NOT NULL GROUP BY step HAVING count(*) > 1 ORDER BY step LIMIT ?`)
      .all(runId, options.limit ?? 50));
    return rows.map((r) => ({ step: r.step, keys: JSON.parse(r.keys) as string[] }));
  }

  async recordEvent(e: { runId: string; outcome: Outcome; idemKey?: string | null; step?: number | null; workerId?: string | null; detail?: string | null }): Promise<void> {
    const now = this.now();
    guard(() => this.event({ ...e, idemKey: e.idemKey ?? null, step: e.step ?? null, workerId: e.workerId ?? null, detail: e.detail ?? null }, now));
  }
}
