/**
 * The runs page's statement on SQLite reads its candidates once. SUMMARY_SQL reads the candidate runs twice (runs
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
});
