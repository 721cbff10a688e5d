/**
 * An outside client's run (rows in progress, committed or claims, no runs row: the article's Python class, a
 * library loop that declares nothing) is listed and shown while any of those rows exists, with one status
 * everywhere: the store's list, the API, the CLI (and the run page, which builds it with the same outsideRun).
 * It used to vanish from the list once its claims were expired, resolved or swept, or when it had only
 * committed rows, while the API still returned it; and the page called it `completed` where the rest said `idle`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getRun } from '../../lib/api/runs';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { loadDetail } from '../../lib/cli/runs';
import type { InsightStore, RunStore, RunSummary, Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { runCli } from '../cli/support';
import { backends, type StoreHandle } from '../support/backends';
import { tempDir } from '../support/tmp';

const list = await backends();
const TTL = 60_000;

describe.each(list)('outside clients’ runs on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore & InsightStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore & InsightStore;
  });
  afterEach(() => h.close());

  const listed = async (filter: Partial<Parameters<RunStore['listRuns']>[0]> = {}) =>
    (await store.listRuns({ claimTtlMs: TTL, limit: 100, ...filter })).map((r) => [r.id, r.workflow, r.status]);
  /** The run's status as the list, the API and the CLI each report it: one value, or the test says which differ. */
  const statuses = async (id: string) => {
    const inList =
      (await store.listRuns({ claimTtlMs: TTL, search: id })).find((r) => r.id === id)?.status ?? 'unlisted';
    const api = await getRun(store, id, TTL).then(
      (r) => r.run.status,
      () => 'not found',
    );
    const cli = await loadDetail(store, id, TTL).then(
      (d) => d.run.status,
      () => 'not found',
    );
    return { list: inList, api, cli };
  };
  const everywhere = (status: string) => ({ list: status, api: status, cli: status });

  it('a run with only committed rows (runOnce, no progress) is listed, shown and filtered as idle', async () => {
    await new Checkpoint(store, 'lib-loop').runOnce('lib-loop:a', () => 'sent');
    const at = (await store.getCommitted('lib-loop:a'))!.committedAt;
    expect(await listed()).toEqual([['lib-loop', 'external', 'idle']]);
    expect(await listed({ status: 'idle' })).toEqual([['lib-loop', 'external', 'idle']]);
    expect(await listed({ workflow: 'external', search: 'loop' })).toEqual([['lib-loop', 'external', 'idle']]);
    expect(await listed({ status: 'running' })).toEqual([]);
    expect(await listed({ workflow: 'agent-batch' })).toEqual([]);
    const [summary] = await store.listRuns({ claimTtlMs: TTL });
    expect(summary).toMatchObject({ id: 'lib-loop', step: 0, totalSteps: null, orphanedClaims: 0, updatedAt: at });
    expect(await statuses('lib-loop')).toEqual(everywhere('idle'));
    expect((await getRun(store, 'lib-loop', TTL)).run).toMatchObject({
      workflow: 'external',
      external: true,
      updatedAt: at,
    });
    expect((await loadDetail(store, 'lib-loop', TTL)).run.updatedAt).toBe(at);
  });

  it('stays listed once its claims are expired, resolved or swept, and is running only while it holds one', async () => {
    // The article's client: a committed step, then a claim on the next one (claimed_at only), no progress.
    await new Checkpoint(store, 'art').runOnce('art:step:0', () => 0, { step: 0 });
    await h.insertOutsideClaim('art:step:1', 'art');
    expect(await statuses('art')).toEqual(everywhere('running'));
    expect(await store.expireClaim('art:step:1', { actor: 'op', force: true, claimTtlMs: TTL })).toBe('expired');
    expect(await statuses('art')).toEqual(everywhere('idle'));

    // A run that is nothing but a claim: resolved by hand, its manual row keeps it.
    await h.insertOutsideClaim('only-claim:step:0', 'only-claim');
    expect(await statuses('only-claim')).toEqual(everywhere('running'));
    await store.resolveClaim({
      idemKey: 'only-claim:step:0',
      resultJson: '{"ok":true}',
      actor: 'op',
      claimTtlMs: TTL,
      force: true,
    });
    expect(await statuses('only-claim')).toEqual(everywhere('idle'));

    // Swept: a claim taken over and left, on a run that committed before.
    await new Checkpoint(store, 'swept').runOnce('swept:step:0', () => 0, { step: 0 });
    await h.insertOutsideClaim('swept:step:1', 'swept');
    await h.elapse(700);
    for (const c of await store.listClaims({ claimTtlMs: 100, orphanedOnly: true })) {
      await store.expireClaim(c.idemKey, { actor: 'sweep', claimTtlMs: 100 });
    }
    expect(await statuses('swept')).toEqual(everywhere('idle'));
    expect((await listed()).sort()).toEqual([
      ['art', 'external', 'idle'],
      ['only-claim', 'external', 'idle'],
      ['swept', 'external', 'idle'],
    ]);

    // A run with no rows at all is none: an expired claim's event alone does not make one.
    await h.insertOutsideClaim('gone:step:0', 'gone');
    await store.expireClaim('gone:step:0', { actor: 'op', force: true, claimTtlMs: TTL });
    expect(await statuses('gone')).toEqual({ list: 'unlisted', api: 'not found', cli: 'not found' });
  });

  it('pages through runs rows, progress-only and committed-only outside runs newest first, each once', async () => {
    const ids: string[] = [];
    // Oldest first, a little time apart: runs rows, outside runs with progress, outside runs with commits only.
    for (let i = 0; i < 9; i++) {
      const id = `r${i}`;
      if (i % 3 === 0) await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: null });
      else if (i % 3 === 1) await new Checkpoint(store, id).saveProgress(1, {});
      else await new Checkpoint(store, id).runOnce(`${id}:a`, () => i);
      ids.unshift(id);
      await h.elapse(1000);
    }
    for (const limit of [1, 2, 4, 9, 20]) {
      const seen: RunSummary[] = [];
      let after: { updatedAt: number; id: string } | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const page = await store.listRuns({ claimTtlMs: TTL, limit, after });
        seen.push(...page);
        if (page.length < limit) break;
        after = { updatedAt: page.at(-1)!.updatedAt, id: page.at(-1)!.id };
      }
      expect(
        seen.map((r) => r.id),
        `limit ${limit}`,
      ).toEqual(ids);
    }
    expect((await store.listRuns({ claimTtlMs: TTL, status: 'idle' })).map((r) => r.id)).toEqual(
      ids.filter((id) => !/^r[036]$/.test(id)),
    );
  });

  // The list reads claims only from the runs rows' last time on (sqlite/run-list.ts CANDIDATES): a claimed
  // outside run must still take its place among a full page of runs rows, whether its time is its claim's or
  // its progress's.
  it('pages claimed outside runs among runs rows by their latest claim or progress, each once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = `c${String(i).padStart(2, '0')}`;
      if (i % 4 === 1) await h.insertOutsideClaim(`${id}:step:0`, id);
      else if (i % 4 === 3) {
        // Its progress is older than its claim: the claim is its time.
        await new Checkpoint(store, id).saveProgress(1, {});
        await h.elapse(500);
        await h.insertOutsideClaim(`${id}:step:1`, id);
      } else await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: null });
      ids.unshift(id);
      // A claim-only run 0.3 s after a runs row: close to the time the claims are read from.
      await h.elapse(i % 4 === 0 ? 300 : 1000);
    }
    // One whose claim is older than its progress: the progress is its time.
    await h.insertOutsideClaim('late:step:0', 'late');
    await h.elapse(100);
    await new Checkpoint(store, 'late').saveProgress(1, {});
    ids.unshift('late');
    for (const status of [undefined, 'running'] as const) {
      const want = status ? ids.filter((id) => !/^c(00|02|04|06|08|10)$/.test(id)) : ids;
      for (const limit of [1, 2, 3, 5, 13, 20]) {
        const seen: string[] = [];
        let after: { updatedAt: number; id: string } | undefined;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store.listRuns({ claimTtlMs: TTL, limit, after, status });
          seen.push(...page.map((r) => r.id));
          if (page.length < limit) break;
          after = { updatedAt: page.at(-1)!.updatedAt, id: page.at(-1)!.id };
        }
        expect(seen, `status ${status}, limit ${limit}`).toEqual(want);
      }
    }
  });
});

describe('outside clients’ runs through the CLI process', () => {
  it('`waybill runs` and `waybill inspect` list and show a run with only committed rows, idle', async () => {
    const dir = tempDir('waybill-outside-');
    const store = openSqliteStore({ path: dir.file('w.db') });
    await new Checkpoint(store, 'lib-loop').runOnce('lib-loop:a', () => 'sent');
    await store.close();
    const db = ['--db', `file:${dir.file('w.db')}`];
    const [runs, inspect] = await Promise.all([
      runCli([...db, 'runs', '--json']),
      runCli([...db, 'inspect', 'lib-loop', '--json']),
    ]);
    expect(runs.code).toBe(0);
    expect((JSON.parse(runs.stdout) as { runs: RunSummary[] }).runs.map((r) => [r.id, r.workflow, r.status])).toEqual([
      ['lib-loop', 'external', 'idle'],
    ]);
    expect(inspect.code).toBe(0);
    expect(JSON.parse(inspect.stdout)).toMatchObject({
      run: { id: 'lib-loop', workflow: 'external', status: 'idle' },
      committed: 1,
    });
  });
});
