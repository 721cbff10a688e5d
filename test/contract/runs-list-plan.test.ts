/**
 * The runs page's statements on SQLite: the page statement reads its candidates once, and outside clients' runs
 * with only committed rows come from lone_runs' index, never from committed's rows by time. SUMMARY_SQL reads the candidate runs twice (runs
 * rows, then outside clients' runs), and SQLite computes a CTE again at each use unless it is MATERIALIZED: a
 * rare tag's runs were looked up and sorted twice a page (bench/RESULTS.md has what it cost).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { openSqliteStore } from '../../lib/store/sqlite';
import { queryPlan, recordPrepared } from '../support/query-plans';
import { makeTempDir } from '../support/tmp';

/** How many lines of the plan of the page statement that listRuns prepared for `filter` match `step`. */
async function stepsOfPage(filter: { tags?: string[] }, step: RegExp): Promise<number> {
  const dir = makeTempDir('waybill-list-plan-');
  const store = openSqliteStore({ path: dir.file('list.db'), clock: new ManualClock(), synchronous: 'normal' });
  const prepared = recordPrepared();
  try {
    await store.createRun({ id: 'tagged', workflow: 'wf', inputJson: '{}', totalSteps: 1, tags: ['rare'] });
    const page = await prepared.during('list', () => store.listRuns({ claimTtlMs: 30_000, limit: 51, ...filter }));
    expect(page.map((run) => run.id)).toEqual(['tagged']);
    const [text] = [...prepared.texts].filter(([sql, label]) => label === 'list' && sql.includes('cand(id)'));
    expect(text, 'the page statement').toBeDefined();
    return queryPlan(store.db, text![0]).filter((line) => step.test(line)).length;
  } finally {
    prepared.restore();
    await store.close();
  }
}

describe('the runs page statement on SQLite', () => {
  it('reads a narrow tag filter’s runs once', async () => {
    expect(await stepsOfPage({ tags: ['rare'] }, /^SEARCH run_tags USING COVERING INDEX run_tags_tag\b/)).toBe(1);
  });

  // Before lone_runs, a full page read every commit since its last run (committed_at's index), and a short one
  // walked every run id in committed: 70 ms behind a run of 300,000 steps, 170 ms for a search matching nothing.
  it('reads outside runs with only committed rows from lone_runs, newest first, not committed', async () => {
    const dir = makeTempDir('waybill-list-plan-');
    const store = openSqliteStore({ path: dir.file('list.db'), clock: new ManualClock(), synchronous: 'normal' });
    const prepared = recordPrepared();
    try {
      await store.createRun({ id: 'declared', workflow: 'wf', inputJson: '{}', totalSteps: 1 });
      const full = await prepared.during('full', () => store.listRuns({ claimTtlMs: 30_000, limit: 1 }));
      const short = await prepared.during('short', () => store.listRuns({ claimTtlMs: 30_000, search: 'none' }));
      expect([full.map((run) => run.id), short]).toEqual([['declared'], []]);
      const lone = [...prepared.texts].filter(([sql]) => sql.includes('lone_runs'));
      expect(lone.map(([, label]) => label)).toEqual(['full']);
      const plan = queryPlan(store.db, lone[0]![0]);
      expect(plan.filter((line) => /^SCAN l USING COVERING INDEX lone_runs_at\b/.test(line))).toHaveLength(1);
      expect(plan.filter((line) => /\bcommitted\b.*\b(SCAN|committed_at)\b|SCAN c\b/.test(line))).toEqual([]);
    } finally {
      prepared.restore();
      await store.close();
    }
  });
});
