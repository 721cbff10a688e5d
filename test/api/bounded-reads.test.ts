/**
 * Issue 11, item 14 (the API's half, on both backends): reads survive any row the article's schema allows.
 * A run with 250 claims answers with a page of 100, the counts of all 250 and a cursor for the rest; JSON
 * nested 50,000 deep (which JSON.stringify cannot walk) is left out of the answer with a note, and the answer
 * serializes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunsStore } from '../../lib/api/runs';
import { getRun, listCommitted, RUN_CLAIMS_SHOWN } from '../../lib/api/runs';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const TTL = 30_000;
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe.each(list)('bounded API reads on $name', (backend) => {
  let h: StoreHandle;
  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(async () => {
    await h.close();
  });

  it("lists 100 of a run's 250 claims, counts all 250 (orphaned among them), and pages on to the rest", async () => {
    // 200 claims of the article's client (claimed_at only, orphaned after the TTL), 50 of them long ago.
    const values = Array.from(
      { length: 250 },
      (_, i) =>
        `('many:item:${String(i).padStart(3, '0')}', 'many', ${i < 50 ? 'extract(epoch from now()) - 3600' : 'extract(epoch from now())'})`,
    );
    const sqliteValues = values.map((v) =>
      v.replace('extract(epoch from now())', "(julianday('now') - 2440587.5) * 86400.0"),
    );
    await h.exec(
      `INSERT INTO claims(idem_key, run_id, claimed_at) VALUES ${(backend.name === 'sqlite' ? sqliteValues : values).join(', ')}`,
    );
    const answer = await getRun(h.store as RunsStore, 'many', TTL);
    expect(answer.claims).toHaveLength(RUN_CLAIMS_SHOWN);
    expect(answer.counts).toEqual({ committed: 0, claims: 250, orphanedClaims: 50 });
    expect(answer.claimsNextCursor).toEqual(expect.any(String));
    expect(answer.run).toMatchObject({ id: 'many', external: true, status: 'running' });
    expect(await (h.store as RunsStore).countClaims({ claimTtlMs: TTL, runId: 'nobody' })).toEqual({
      total: 0,
      orphaned: 0,
    });
  });

  it('leaves out JSON nested deeper than 64 levels with a note, so the answer serializes', async () => {
    await h.exec(`INSERT INTO progress(run_id, step, state_json, updated_at) VALUES ('deep', 1, '${deep(50_000)}', 1)`);
    await h.exec(
      `INSERT INTO committed(idem_key, run_id, result_json, committed_at) VALUES ('deep:step:0', 'deep', '${deep(50_000)}', 1), ('deep:step:1', 'deep', '${deep(64)}', 2)`,
    );
    const committed = await listCommitted(h.store as RunsStore, 'deep', {}, TTL);
    expect(() => JSON.stringify(committed)).not.toThrow();
    expect(committed.committed[0]).toMatchObject({
      key: 'deep:step:0',
      result: null,
      resultTruncated: expect.stringMatching(/^nested 50,000 levels deep/),
    });
    expect(committed.committed[1]).not.toHaveProperty('resultTruncated');
    expect(JSON.stringify(committed.committed[1]!.result)).toBe(deep(64));
    const run = await getRun(h.store as RunsStore, 'deep', TTL);
    expect(() => JSON.stringify(run)).not.toThrow();
    expect(run.progress).toMatchObject({ state: null, stateTruncated: expect.stringContaining('50,000') });
  });
});
