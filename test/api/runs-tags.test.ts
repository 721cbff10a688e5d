/**
 * Tags and metadata from every edge on one real SQLite file: runs started over HTTP (POST /api/v1/runs, the
 * route handlers on a real port) and by the `waybill` process (`start --tag --meta`), then listed with the same
 * tag and metadata filters by GET /api/v1/runs, by `waybill runs --json` and by the store's list: the same runs
 * each time. The run's detail carries them (the API and `waybill inspect`); bad tags and pairs are refused
 * naming the field, with nothing written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunStore, Store } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { json, runCli } from '../cli/support';
import { type Answer, request } from '../support/http';
import { serveApi } from '../support/route-server';
import { makeTempDir } from '../support/tmp';

const OPERATOR = 'tags-operator-token-0123456789abcd';
const VIEWER = 'tags-viewer-token-0123456789abcdef';

describe('tags and metadata on the API, the CLI and the store', () => {
  const dir = makeTempDir('waybill-api-tags-');
  const file = dir.file('t.db');
  const db = ['--db', `file:${file}`];
  const cache = globalThis as { waybillStore?: Promise<Store> };
  let server: { url: string; close(): Promise<void> };
  const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
    request(server.url, method, path, token, body);
  const runCount = async () => (await api('GET', '/api/v1/runs?limit=500', VIEWER)).body.runs.length as number;

  beforeAll(async () => {
    const seed = openSqliteStore({ path: file });
    await seed.createRun({ id: 'plain', workflow: 'agent-batch', inputJson: '{}', totalSteps: 1 });
    // An outside client's run: listed unfiltered, never by a tag.
    await seed.db
      .prepare(`INSERT INTO claims (idem_key, run_id, claimed_at) VALUES ('x:0', 'x', ?)`)
      .run(Date.now() / 1000);
    await seed.close();
    server = await serveApi(file, {
      operator: OPERATOR,
      viewer: VIEWER,
      sessionSecret: 'tags-suite-session-secret-0123456',
    });
  });
  afterAll(async () => {
    await server?.close();
    dir.remove();
  });

  it('starts runs with tags over HTTP and from the CLI, and lists the same runs by each filter on all three', async () => {
    const start = (id: string, tags: string[], metadata: Record<string, string>) =>
      api('POST', '/api/v1/runs', OPERATOR, { workflow: 'agent-batch', input: { count: 1 }, id, tags, metadata });
    expect((await start('api-1', ['env/prod', 'team:a'], { customer: 'acme', tier: 'gold' })).status).toBe(201);
    expect((await start('api-2', ['env/prod'], { customer: 'other' })).status).toBe(201);
    const cliStart = (id: string, ...flags: string[]) =>
      runCli([...db, 'start', 'agent-batch', '--input', '{"count":1}', '--id', id, ...flags]);
    expect((await cliStart('cli-1', '--tag', 'env/prod', '--tag', 'team:a', '--meta', 'customer=acme')).code).toBe(0);
    expect((await cliStart('cli-2', '--tag', 'env/dev', '--meta', 'customer=acme', '--meta', 'tier=gold')).code).toBe(
      0,
    );

    // The list carries each run's tags and metadata, as its detail does.
    const listed = (await api('GET', '/api/v1/runs?tag=team:a', VIEWER)).body.runs as Record<string, unknown>[];
    expect(listed.map((r) => [r.id, r.tags, r.metadata])).toEqual([
      ['cli-1', ['env/prod', 'team:a'], { customer: 'acme' }],
      ['api-1', ['env/prod', 'team:a'], { customer: 'acme', tier: 'gold' }],
    ]);
    const store = await cache.waybillStore!;
    const cases: { tag?: string[]; meta?: string[]; runs: string[] }[] = [
      { tag: ['env/prod'], runs: ['api-1', 'api-2', 'cli-1'] },
      { tag: ['env/prod', 'team:a'], runs: ['api-1', 'cli-1'] },
      { meta: ['customer=acme'], runs: ['api-1', 'cli-1', 'cli-2'] },
      { meta: ['customer=acme', 'tier=gold'], runs: ['api-1', 'cli-2'] },
      { tag: ['env/prod'], meta: ['customer=acme'], runs: ['api-1', 'cli-1'] },
      { tag: ['env/dev'], meta: ['tier=gold'], runs: ['cli-2'] },
      { tag: ['nope'], runs: [] },
      { meta: ['customer='], runs: [] },
      { runs: ['api-1', 'api-2', 'cli-1', 'cli-2', 'plain', 'x'] },
    ];
    for (const { tag = [], meta = [], runs } of cases) {
      const query = new URLSearchParams([...tag.map((t) => ['tag', t]), ...meta.map((m) => ['meta', m])]);
      const overHttp = await api('GET', `/api/v1/runs?${query}`, VIEWER);
      expect(overHttp.status, JSON.stringify(overHttp.body)).toBe(200);
      const flags = [...tag.flatMap((t) => ['--tag', t]), ...meta.flatMap((m) => ['--meta', m])];
      const fromCli = json<{ runs: { id: string }[] }>(await runCli([...db, 'runs', ...flags, '--json']));
      const fromStore = await store.listRuns({
        claimTtlMs: 30_000,
        tags: tag.length ? tag : undefined,
        meta: meta.length
          ? meta.map((m) => ({ key: m.slice(0, m.indexOf('=')), value: m.slice(m.indexOf('=') + 1) }))
          : undefined,
      } satisfies Parameters<RunStore['listRuns']>[0]);
      const ids = (list: { id: string }[]) => list.map((r) => r.id).sort();
      expect(
        { http: ids(overHttp.body.runs), cli: ids(fromCli.runs), store: ids(fromStore) },
        query.toString(),
      ).toEqual({
        http: runs,
        cli: runs,
        store: runs,
      });
    }
  });

  it('shows a run’s tags and metadata in its detail and in inspect; a repeated start keeps the first ones', async () => {
    const again = await api('POST', '/api/v1/runs', OPERATOR, {
      workflow: 'agent-batch',
      input: { count: 1 },
      id: 'api-1',
      tags: ['other'],
      metadata: { customer: 'changed' },
    });
    expect({ status: again.status, existed: again.body.existed }).toEqual({ status: 200, existed: true });
    const expected = { tags: ['env/prod', 'team:a'], metadata: { customer: 'acme', tier: 'gold' } };
    expect((await api('GET', '/api/v1/runs/api-1', VIEWER)).body.run).toMatchObject(expected);
    expect((await api('GET', '/api/v1/runs/plain', VIEWER)).body.run).toMatchObject({ tags: [], metadata: {} });
    expect((await api('GET', '/api/v1/runs/x', VIEWER)).body.run).toMatchObject({ tags: [], metadata: {} });
    expect(json(await runCli([...db, 'inspect', 'api-1', '--json'])).run).toMatchObject(expected);
    const text = (await runCli([...db, 'inspect', 'cli-2'])).stdout.split('\n');
    expect(text.filter((line) => /^(tags|meta )/.test(line))).toEqual([
      expect.stringMatching(/^tags\s+env\/dev$/),
      expect.stringMatching(/^meta customer\s+acme$/),
      expect.stringMatching(/^meta tier\s+gold$/),
    ]);
    expect((await runCli([...db, 'inspect', 'plain'])).stdout).not.toMatch(/^(tags|meta )/m);
  });

  it('refuses bad tags and pairs naming the field, and writes nothing', async () => {
    const before = await runCount();
    const list = async (query: string) => {
      const answer = await api('GET', `/api/v1/runs?${query}`, VIEWER);
      return { status: answer.status, fields: answer.body.error?.fields };
    };
    expect(await list('tag=a%20b')).toEqual({
      status: 400,
      fields: { 'tag.0': ['letters, digits and . _ : / @ - only, starting with a letter or digit'] },
    });
    expect(await list('tag=ok&meta=novalue')).toEqual({ status: 400, fields: { 'meta.0': ['must be key=value'] } });
    const start = async (extra: Record<string, unknown>) => {
      const answer = await api('POST', '/api/v1/runs', OPERATOR, { workflow: 'agent-batch', input: {}, ...extra });
      return { status: answer.status, fields: answer.body.error?.fields };
    };
    expect(await start({ tags: ['-dash'] })).toEqual({
      status: 400,
      fields: { 'tags.0': ['letters, digits and . _ : / @ - only, starting with a letter or digit'] },
    });
    expect(await start({ tags: Array.from({ length: 21 }, (_, i) => `t${i}`) })).toEqual({
      status: 400,
      fields: { tags: ['must be at most 20 tags'] },
    });
    expect(await start({ metadata: { 'a=b': 'v' } })).toEqual({
      status: 400,
      fields: { 'metadata.a=b': ['letters, digits and . _ - only, starting with a letter or digit'] },
    });
    expect(await start({ metadata: { k: 3 } })).toEqual({ status: 400, fields: { 'metadata.k': ['must be text'] } });
    const cli = async (...args: string[]) => {
      const { code, stderr } = await runCli([...db, ...args]);
      return { code, stderr };
    };
    expect(await cli('runs', '--tag', 'a b')).toEqual({
      code: 2,
      stderr: 'waybill runs: --tag: letters, digits and . _ : / @ - only, starting with a letter or digit\n',
    });
    expect(await cli('runs', '--meta', 'novalue')).toEqual({
      code: 2,
      stderr: 'waybill runs: --meta: must be key=value\n',
    });
    expect(await cli('start', 'agent-batch', '--meta', '=v')).toEqual({
      code: 2,
      stderr: 'waybill start: --meta: key: must not be empty\n',
    });
    expect(await runCount()).toBe(before);
  });
});
