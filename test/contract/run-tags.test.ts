/**
 * A run's tags and metadata (RunTagStore, and createRun's and listRuns's parts of them), one suite on every
 * backend: written with the run, changed whole or in part, refused past the per-run limits with nothing
 * written, and filtered by in the runs list (every tag and every key=value must match), narrow and wide
 * (shared/run-tag-filter.ts), with outside clients' runs never matching.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError, NotFoundError } from '../../lib/errors';
import type { RunStore, Store } from '../../lib/store/contract';
import { NARROW_RUNS } from '../../lib/store/shared/run-tag-filter';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const newRun = (id: string, tags?: string[], metadata?: Record<string, string>) => ({
  id,
  workflow: 'wf',
  inputJson: '{}',
  totalSteps: 1,
  tags,
  metadata,
});

describe.each(list)('run tags contract on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  const ids = async (filter: Partial<Parameters<RunStore['listRuns']>[0]>) =>
    (await store.listRuns({ claimTtlMs: 30_000, ...filter })).map((r) => r.id).sort();

  it('writes tags and metadata with the run, and changes them whole or in part', async () => {
    await store.createRun(newRun('a', ['env/prod', 'Beta', 'alpha'], { customer: 'acme', tier: 'gold' }));
    expect(await store.getRunTags('a')).toEqual({
      tags: ['Beta', 'alpha', 'env/prod'],
      metadata: { customer: 'acme', tier: 'gold' },
    });
    expect(await store.tagRun('a', { addTags: ['alpha', 'new'], metadata: { tier: 'silver', region: 'eu' } })).toEqual({
      tags: ['Beta', 'alpha', 'env/prod', 'new'],
      metadata: { customer: 'acme', region: 'eu', tier: 'silver' },
    });
    // Repeated, the same change leaves the same.
    await store.tagRun('a', { addTags: ['alpha', 'new'], metadata: { tier: 'silver', region: 'eu' } });
    expect(await store.tagRun('a', { tags: ['only', 'new'] })).toEqual({
      tags: ['new', 'only'],
      metadata: { customer: 'acme', region: 'eu', tier: 'silver' },
    });
    expect(await store.getRunTags('nobody')).toEqual({ tags: [], metadata: {} });
    await expect(store.tagRun('nobody', { addTags: ['x'] })).rejects.toBeInstanceOf(NotFoundError);
    expect(await store.getRunTags('nobody')).toEqual({ tags: [], metadata: {} });
  });

  it('reads a page of runs’ tags and metadata at once, each run’s in its order, as one run’s read', async () => {
    await store.createRun(newRun('a', ['zeta', 'Beta', 'alpha'], { tier: 'gold', customer: 'acme' }));
    await store.createRun(newRun('b', ['only']));
    await store.createRun(newRun('c', undefined, { k: 'v' }));
    await store.createRun(newRun('d'));
    const read = await store.getRunTagsOf(['a', 'b', 'c', 'd', 'nobody']);
    expect([...read.keys()].sort()).toEqual(['a', 'b', 'c', 'd', 'nobody']);
    for (const id of ['a', 'b', 'c', 'd', 'nobody']) expect(read.get(id)).toEqual(await store.getRunTags(id));
    expect(read.get('a')).toEqual({ tags: ['Beta', 'alpha', 'zeta'], metadata: { customer: 'acme', tier: 'gold' } });
    expect((await store.getRunTagsOf([])).size).toBe(0);
  });

  it('refuses a change past the per-run limits, and writes none of it', async () => {
    const nineteen = Array.from({ length: 19 }, (_, i) => `t${i}`);
    await store.createRun(newRun('a', nineteen, { k0: 'v' }));
    await expect(store.tagRun('a', { addTags: ['x', 'y'], metadata: { k1: 'v' } })).rejects.toThrow(
      new InvalidInputError('tags: a run may have at most 20 tags, it would have 21'),
    );
    const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`m${i}`, 'v']));
    await expect(store.tagRun('a', { metadata: twenty })).rejects.toThrow(
      new InvalidInputError('metadata: a run may have at most 20 keys, it would have 21'),
    );
    expect(await store.getRunTags('a')).toEqual({ tags: [...nineteen].sort(), metadata: { k0: 'v' } });
    // Replacing the tags counts what they become, not what they were.
    expect((await store.tagRun('a', { tags: ['x'], addTags: ['y'] })).tags).toEqual(['x', 'y']);
  });

  it('lists runs with every tag and every key=value asked for; never an outside client’s run', async () => {
    await store.createRun(newRun('a', ['red', 'big'], { customer: 'acme', env: 'prod' }));
    await store.createRun(newRun('b', ['red'], { customer: 'acme', env: 'dev' }));
    await store.createRun(newRun('c', ['big'], { customer: 'other', env: 'prod' }));
    await store.createRun(newRun('d'));
    await h.exec(`INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('x:0', 'x', ${await h.now()})`);
    expect(await ids({ tags: ['red'] })).toEqual(['a', 'b']);
    expect(await ids({ tags: ['red', 'big'] })).toEqual(['a']);
    expect(await ids({ tags: ['RED'] })).toEqual([]);
    expect(await ids({ meta: [{ key: 'customer', value: 'acme' }] })).toEqual(['a', 'b']);
    expect(
      await ids({
        meta: [
          { key: 'customer', value: 'acme' },
          { key: 'env', value: 'prod' },
        ],
      }),
    ).toEqual(['a']);
    expect(await ids({ tags: ['big'], meta: [{ key: 'env', value: 'prod' }] })).toEqual(['a', 'c']);
    expect(await ids({ tags: ['big'], search: 'c' })).toEqual(['c']);
    expect(await ids({ tags: ['big'], workflow: 'external' })).toEqual([]);
    expect(await ids({ tags: ['nothing'] })).toEqual([]);
    expect(await ids({})).toEqual(['a', 'b', 'c', 'd', 'x']);
    await store.tagRun('d', { addTags: ['red'] });
    expect(await ids({ tags: ['red'] })).toEqual(['a', 'b', 'd']);
    // Paged by the same cursor as the unfiltered list.
    const [first] = await store.listRuns({ claimTtlMs: 30_000, tags: ['red'], limit: 1 });
    const rest = await store.listRuns({
      claimTtlMs: 30_000,
      tags: ['red'],
      after: { updatedAt: first!.updatedAt, id: first!.id },
    });
    expect([first!.id, ...rest.map((r) => r.id)].sort()).toEqual(['a', 'b', 'd']);
  });

  it('reads a wide tag from the top of the list, and its narrow partner from its own index', async () => {
    // More runs carry `wide` than a narrow read takes; three of them carry `few` too, one has k=v.
    const total = NARROW_RUNS + 10;
    const id = (n: number) => `r${String(n).padStart(5, '0')}`;
    const all = Array.from({ length: total }, (_, i) => i + 1);
    await h.exec(`INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at, detached)
      VALUES ${all.map((n) => `('${id(n)}', 'wf', '{}', 'completed', 0, ${n}, ${n}, false)`).join(', ')}`);
    await h.exec(`INSERT INTO run_tags (run_id, tag) SELECT id, 'wide' FROM runs`);
    await h.exec(
      `INSERT INTO run_tags (run_id, tag) VALUES ('${id(1)}', 'few'), ('${id(500)}', 'few'), ('${id(total)}', 'few')`,
    );
    await h.exec(`INSERT INTO run_metadata (run_id, key, value) VALUES ('${id(500)}', 'k', 'v')`);
    const top = await store.listRuns({ claimTtlMs: 30_000, tags: ['wide'], limit: 3 });
    expect(top.map((r) => r.id)).toEqual([id(total), id(total - 1), id(total - 2)]);
    const few = await store.listRuns({ claimTtlMs: 30_000, tags: ['wide', 'few'] });
    expect(few.map((r) => r.id)).toEqual([id(total), id(500), id(1)]);
    const [first] = few;
    const after = { updatedAt: first!.updatedAt, id: first!.id };
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['few'], after })).map((r) => r.id)).toEqual([
      id(500),
      id(1),
    ]);
    expect(await ids({ tags: ['wide'], meta: [{ key: 'k', value: 'v' }] })).toEqual([id(500)]);
    // The runs of the narrow part's range are checked for the rest of the filter only, a repeat of the part aside.
    expect(await ids({ tags: ['few', 'few'] })).toEqual([id(1), id(500), id(total)]);
    expect(await ids({ tags: ['few', 'wide', 'few'], meta: [{ key: 'k', value: 'v' }] })).toEqual([id(500)]);
    expect(await ids({ tags: ['few', 'absent'] })).toEqual([]);
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['wide'], limit: 5000 })).length).toBe(total);
  });
  it('reads two wide tags that seldom meet from the first one’s range, the runs they share only', async () => {
    // Each on more runs than a narrow read takes; together on three.
    const total = 2 * NARROW_RUNS + 100;
    const id = (n: number) => `r${String(n).padStart(5, '0')}`;
    const all = Array.from({ length: total }, (_, i) => i + 1);
    await h.exec(`INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at, detached)
      VALUES ${all.map((n) => `('${id(n)}', 'wf', '{}', 'completed', 0, ${n}, ${n}, false)`).join(', ')}`);
    const cut = NARROW_RUNS + 50;
    await h.exec(`INSERT INTO run_tags (run_id, tag) SELECT id, 'low' FROM runs WHERE id <= '${id(cut)}'`);
    await h.exec(`INSERT INTO run_tags (run_id, tag) SELECT id, 'high' FROM runs WHERE id >= '${id(cut - 2)}'`);
    const met = await store.listRuns({ claimTtlMs: 30_000, tags: ['low', 'high'] });
    expect(met.map((r) => r.id)).toEqual([id(cut), id(cut - 1), id(cut - 2)]);
    const after = { updatedAt: met[0]!.updatedAt, id: met[0]!.id };
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['high', 'low'], after })).map((r) => r.id)).toEqual([
      id(cut - 1),
      id(cut - 2),
    ]);
    expect((await store.listRuns({ claimTtlMs: 30_000, tags: ['low'], limit: 2 })).map((r) => r.id)).toEqual([
      id(cut),
      id(cut - 1),
    ]);
    // Two wide tags that never meet: nothing, from the count alone.
    await h.exec(`INSERT INTO run_tags (run_id, tag) SELECT id, 'top' FROM runs WHERE id > '${id(cut)}'`);
    expect(await ids({ tags: ['low', 'top'] })).toEqual([]);
    expect(await ids({ tags: ['high', 'top'], limit: 3 })).toEqual([id(total - 2), id(total - 1), id(total)]);
    // A wide tag and a wide key=value that meet on two runs, each checked by its own key.
    await h.exec(
      `INSERT INTO run_metadata (run_id, key, value) SELECT id, 'k', 'v' FROM runs WHERE id >= '${id(cut - 1)}'`,
    );
    expect(await ids({ tags: ['low'], meta: [{ key: 'k', value: 'v' }] })).toEqual([id(cut - 1), id(cut)]);
    expect(await ids({ tags: ['low'], meta: [{ key: 'k', value: 'w' }] })).toEqual([]);

    // The counts that chose those reads are kept for a second (KeptCounts); tags changed inside it are seen at once.
    // Two wide tags that met on none a moment ago meet now: an empty page is never decided on a kept count.
    await store.tagRun(id(1), { addTags: ['top'] });
    expect(await ids({ tags: ['low', 'top'] })).toEqual([id(1)]);
    // The three runs `low` and `high` met on meet no more, and then on one other.
    for (const n of [cut - 2, cut - 1, cut]) await store.tagRun(id(n), { tags: ['low'] });
    expect(await ids({ tags: ['low', 'high'] })).toEqual([]);
    await store.tagRun(id(2), { addTags: ['high'] });
    expect(await ids({ tags: ['high', 'low'] })).toEqual([id(2)]);
    // A part counted on no run a moment ago is on one now.
    expect(await ids({ tags: ['low', 'fresh'] })).toEqual([]);
    await store.tagRun(id(3), { addTags: ['fresh'] });
    expect(await ids({ tags: ['low', 'fresh'] })).toEqual([id(3)]);
  });
});
