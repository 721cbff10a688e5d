/**
 * The run page's reads on PostgreSQL are fixed reads (postgres/connection.ts fixedName): each is a named
 * statement, parsed once a connection, whose plan PostgreSQL keeps after its first calls. Their answers are the
 * same before and after that plan is kept; a read whose plan its values choose (an audit time range, a list of
 * keys) leaves no statement behind; a `SELECT *` of a table is never named.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { fixedName } from '../../lib/store/postgres/connection';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the fixed reads test');

/** Each read's answer, by its name, one read at a time (one connection). */
async function readAll<T extends Record<string, () => Promise<unknown>>>(
  reads: T,
): Promise<{ [K in keyof T]: Awaited<ReturnType<T[K]>> }> {
  const answers: Partial<Record<keyof T, unknown>> = {};
  for (const name of Object.keys(reads) as (keyof T)[]) answers[name] = await reads[name]!();
  return answers as { [K in keyof T]: Awaited<ReturnType<T[K]>> };
}

describe('fixedName', () => {
  it('names a text by what it says, and never a SELECT * of a table', () => {
    const text = 'SELECT tag FROM run_tags WHERE run_id = $1';
    expect(fixedName(text)).toMatch(/^waybill_r_[0-9a-f]{24}$/);
    expect(fixedName(text)).toBe(fixedName(text));
    expect(fixedName(`${text} ORDER BY tag`)).not.toBe(fixedName(text));
    expect(fixedName('SELECT count(*)::int AS n FROM claims WHERE run_id = $1')).toMatch(/^waybill_r_/);
    expect(fixedName('SELECT * FROM  (\n SELECT id FROM runs WHERE id = $1) x')).toMatch(/^waybill_r_/);
    for (const everyColumn of [
      'SELECT * FROM committed WHERE run_id = $1',
      'select *  from claims',
      'SELECT r.* FROM runs r WHERE r.id = $1',
      'SELECT *, 1 AS one FROM runs',
      'SELECT DISTINCT * FROM runs',
      'SELECT\n*\nFROM runs',
      'SELECT * FROM (SELECT * FROM committed) x',
    ]) {
      expect([everyColumn, fixedName(everyColumn)]).toEqual([everyColumn, undefined]);
    }
  });
});

describe.skipIf(!available)('the run page’s reads on PostgreSQL', () => {
  it('are prepared once a connection and answer the same with the plans they keep', async () => {
    const schema = await testSchema('wb_fixedreads');
    // One connection: the prepared statements read below are the reads' own.
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name, poolSize: 1 });
    onTestFinished(() => store.close());
    await store.createRun({ id: 'parent', workflow: 'w', inputJson: '{}', totalSteps: 4, tags: ['a'] });
    await store.createRun({ id: 'child', workflow: 'w', inputJson: '{}', totalSteps: 1, parentRunId: 'parent' });
    await store.pool.query(
      `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step)
       SELECT 'parent:step:' || s, 'parent', '"r' || s || '"', 100 + s, s FROM generate_series(0, 3) s`,
    );
    await store.pool.query(
      `INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, step)
       VALUES ('parent:step:4', 'parent', 104, 't', 'w1', 1e12, 4)`,
    );
    await store.recordAudit({
      actor: 'ann',
      role: 'operator',
      action: 'pause',
      target: 'parent',
      runId: 'parent',
      detail: null,
    });
    const prepared = async () =>
      (
        await store.pool.query<{ name: string; generic: number; custom: number }>(
          `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
           WHERE starts_with(name, 'waybill_r_') ORDER BY name`,
        )
      ).rows;

    const reads = {
      run: () => store.getRun('parent'),
      firstPage: () => store.listCommitted('parent', { limit: 2 }),
      laterPage: () => store.listCommitted('parent', { limit: 2, afterKey: 'parent:step:1' }),
      recentSteps: () => store.recentSteps('parent', { limit: 3 }),
      events: () => store.recentEvents('parent', { limit: 5 }),
      claims: () => store.listClaims({ runId: 'parent', claimTtlMs: 30_000 }),
      claimCount: () => store.countClaims({ runId: 'parent', claimTtlMs: 30_000 }),
      tags: () => store.getRunTags('parent'),
      tagsOf: () => store.getRunTagsOf(['parent', 'child']),
      waits: () => store.listWaits('parent'),
      children: () => store.childrenOf('parent', 5),
      modelCalls: () => store.listModelCalls({ runId: 'parent' }),
      trace: () => store.readTrace('parent', 0, 4),
      forks: () => store.listForks('parent'),
    };
    const first = await readAll(reads);
    expect(first.firstPage.map((r) => r.idemKey)).toEqual(['parent:step:0', 'parent:step:1']);
    expect(first.laterPage.map((r) => r.idemKey)).toEqual(['parent:step:2', 'parent:step:3']);
    expect(first.claimCount).toEqual({ total: 1, orphaned: 0 });
    expect(first.children.first.map((c) => c.id)).toEqual(['child']);
    expect(first.run?.inputJson).toBe('{}');
    expect(first.firstPage[0]?.resultJson).toBe('"r0"');
    expect(first.claims.map((c) => [c.idemKey, c.workerId, c.orphaned])).toEqual([['parent:step:4', 'w1', false]]);
    expect(first.trace.map((b) => b.step)).toEqual([0, 1, 2, 3]);
    for (let i = 0; i < 8; i++) {
      expect(await readAll(reads)).toEqual(first);
    }
    const kept = await prepared();
    // Fourteen reads, three of them two statements (tags and metadata, the children's counts and list, the
    // trace's bars and events), each called nine times: planned for its first calls, then kept.
    expect(kept).toHaveLength(17);
    expect(kept.every(({ generic, custom }) => generic > 0 && generic + custom === 9)).toBe(true);

    // Reads whose plans their values choose, or whose texts vary with them, are not named: a run's audit lines
    // (audit_run holds no order by id, so a kept plan would read and sort all of a run's lines), a time range,
    // a list of keys.
    expect((await store.listAudit({ runId: 'parent', limit: 5 })).map((a) => a.action)).toEqual(['pause']);
    await store.listAudit({ runId: 'parent', since: 0, until: 1e12 });
    expect(await store.stepOfKeys('parent', ['parent:step:2', 'parent:step:3'])).toEqual({ found: true, step: 2 });
    expect(await prepared()).toHaveLength(17);
    // The step page's four reads: its `SELECT *` of committed, of their history and of claims are not named.
    expect((await store.readStep('parent', 1, 5)).committed?.resultJson).toBe('"r1"');
    const named = (
      await store.pool.query<{ statement: string }>(
        `SELECT statement FROM pg_prepared_statements WHERE starts_with(name, 'waybill_r_') AND statement LIKE '%step = $2%'`,
      )
    ).rows.map((r) => r.statement);
    expect(named).toHaveLength(1);
    expect(named[0]).toMatch(/^SELECT \* FROM \(SELECT id, run_id, idem_key, step,/);
  });
});
