/**
 * Bulk by filter (lib/control/bulk.ts), on every backend: exactly the runs the filter matches are acted on,
 * each with its own audit line; runs the action does not apply to are skipped with the reason; a viewer is
 * refused and bad input names its field, both before the store is opened, and change nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bulk, type Caller, type ControlDeps, type ControlStore } from '../../lib/control';
import { ControlInputError, ForbiddenError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };
const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'api' };

describe.each(list)('bulk by filter on $name', (backend) => {
  let h: StoreHandle;
  let store: ControlStore;
  let opened: number;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    opened = 0;
    deps = {
      store: async () => {
        opened++;
        return store;
      },
      claimTtlMs: 30_000,
      maxBytes: 1000,
    };
  });
  afterEach(() => h.close());

  /** 250 queued `alpha` runs, 40 queued `beta` runs, and 5 `alpha` runs a worker completed. */
  async function seed(): Promise<void> {
    for (let i = 0; i < 250; i++)
      await store.createRun({ id: `a-${i}`, workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    for (let i = 0; i < 40; i++)
      await store.createRun({ id: `b-${i}`, workflow: 'beta', inputJson: '{}', totalSteps: 1 });
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    for (let i = 0; i < 5; i++) {
      await store.createRun({ id: `done-${i}`, workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
      const run = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['alpha'], runId: `done-${i}` });
      await store.finishRun(run!.id, 'w1', { status: 'completed', outputJson: '1' }, run!.attempts);
    }
  }
  const statuses = async () => {
    const out: Record<string, number> = {};
    for (const run of await store.listRuns({ claimTtlMs: 30_000, limit: 10_000 })) {
      const key = `${run.workflow}:${run.status}`;
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  };

  it('pauses a run’s children by the parent filter, not the parent, a grandchild or another run', async () => {
    const run = (id: string, parentRunId?: string) =>
      store.createRun({ id, workflow: 'alpha', inputJson: '{}', totalSteps: 1, parentRunId });
    await run('p');
    await run('c1', 'p');
    await run('c2', 'p');
    await run('g1', 'c1');
    await run('x');
    const report = await bulk.apply(deps, OPERATOR, { action: 'pause', filter: { parent: 'p' }, reason: 'r' });
    expect(report).toEqual({ matched: 2, done: 2, skipped: [] });
    const paused = (await store.listRuns({ claimTtlMs: 30_000, status: 'paused' })).map((r) => r.id).sort();
    expect(paused).toEqual(['c1', 'c2']);
    expect((await store.listAudit({ limit: 10 }))[0]?.detail).toBe('bulk pause of runs matching parent=p; reason: r');
    const before = opened;
    await expect(
      bulk.apply(deps, OPERATOR, { action: 'cancel', filter: { parent: 'a b' }, reason: 'r' }),
    ).rejects.toMatchObject({ fields: { 'filter.parent': ['must not contain spaces or control characters'] } });
    expect(opened).toBe(before);
  });

  it('pauses the runs with every tag and key=value of the filter, and no other', async () => {
    const run = (id: string, tags: string[], metadata: Record<string, string> = {}) =>
      store.createRun({ id, workflow: 'alpha', inputJson: '{}', totalSteps: 1, tags, metadata });
    await run('a', ['red', 'big'], { customer: 'acme' });
    await run('b', ['red'], { customer: 'acme' });
    await run('c', ['red', 'big'], { customer: 'other' });
    await run('d', []);
    const filter = { tag: ['red', 'big'], meta: ['customer=acme'] };
    expect((await bulk.preview(deps, OPERATOR, { filter })).matched).toBe(1);
    const report = await bulk.apply(deps, OPERATOR, { action: 'pause', filter, reason: 'r' });
    expect(report).toEqual({ matched: 1, done: 1, skipped: [] });
    const paused = (await store.listRuns({ claimTtlMs: 30_000, status: 'paused' })).map((r) => r.id);
    expect(paused).toEqual(['a']);
    expect((await store.listAudit({ limit: 10 }))[0]?.detail).toBe(
      'bulk pause of runs matching tag=red tag=big meta="customer=acme"; reason: r',
    );
    const before = opened;
    await expect(
      bulk.apply(deps, OPERATOR, { action: 'cancel', filter: { meta: ['customer'] }, reason: 'r' }),
    ).rejects.toMatchObject({ fields: { 'filter.meta.0': ['must be key=value'] } });
    await expect(
      bulk.apply(deps, OPERATOR, { action: 'cancel', filter: { tag: ['a b'] }, reason: 'r' }),
    ).rejects.toMatchObject({
      fields: { 'filter.tag.0': ['letters, digits and . _ : / @ - only, starting with a letter or digit'] },
    });
    expect(opened).toBe(before);
  });

  it('cancels exactly the 250 runs a filter matches, and no other, with 250 audit lines', async () => {
    await seed();
    const report = await bulk.apply(deps, OPERATOR, {
      action: 'cancel',
      filter: { workflow: 'alpha', status: 'queued' },
      reason: 'bad deploy',
    });
    expect(report).toEqual({ matched: 250, done: 250, skipped: [] });
    expect(await statuses()).toEqual({ 'alpha:cancelled': 250, 'beta:queued': 40, 'alpha:completed': 5 });
    const lines = await store.listAudit({ limit: 1000 });
    expect(lines.length).toBe(250);
    expect(new Set(lines.map((l) => l.target))).toEqual(new Set(Array.from({ length: 250 }, (_, i) => `a-${i}`)));
    expect(
      lines.every(
        (l) =>
          l.action === 'cancel' &&
          l.actor === 'olga (operator)' &&
          l.detail === 'bulk cancel of runs matching status=queued workflow=alpha; reason: bad deploy',
      ),
    ).toBe(true);
    // Each run's own timeline has its operator event, as a single cancel writes.
    expect((await store.listEvents('a-17')).filter((e) => e.outcome === 'operator').length).toBe(1);
  });

  it('acts on the runs waiting for approval only, with waiting=approval: not those waiting for a signal', async () => {
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    for (const [id, kind] of [
      ['ask-1', 'approval'],
      ['ask-2', 'approval'],
      ['hook', 'signal'],
    ] as const) {
      await store.createRun({ id, workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
      const run = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['alpha'], runId: id });
      await store.recordWait({ runId: id, name: 'w', kind });
      expect(await store.parkRun(id, kind, 'w', 'w1', run!.attempts)).toBe('parked');
    }
    await store.createRun({ id: 'plain', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    expect(await bulk.preview(deps, OPERATOR, { filter: { waiting: 'approval' } })).toMatchObject({
      matched: 2,
      tooMany: false,
    });
    const report = await bulk.apply(deps, OPERATOR, { action: 'cancel', filter: { waiting: 'approval' } });
    expect(report).toEqual({ matched: 2, done: 2, skipped: [] });
    expect(await statuses()).toEqual({ 'alpha:cancelled': 2, 'alpha:waiting': 1, 'alpha:queued': 1 });
    expect((await store.listAudit({ limit: 10 })).map((l) => [l.target, l.detail]).sort()).toEqual([
      ['ask-1', 'bulk cancel of runs matching waiting=approval'],
      ['ask-2', 'bulk cancel of runs matching waiting=approval'],
    ]);
    await expect(
      bulk.apply(deps, OPERATOR, { action: 'cancel', filter: { waiting: 'approval', status: 'queued' } }),
    ).rejects.toMatchObject({ fields: { 'filter.waiting': [expect.stringMatching(/waiting runs only/)] } });
  });

  it('skips the matched runs the action does not apply to, saying why, and counts them in matched', async () => {
    await seed();
    const report = await bulk.apply(deps, OPERATOR, { action: 'pause', filter: { workflow: 'alpha' } });
    expect([report.matched, report.done, report.skipped.length]).toEqual([255, 250, 5]);
    expect(report.skipped.map((s) => s.id).sort()).toEqual(['done-0', 'done-1', 'done-2', 'done-3', 'done-4']);
    expect(report.skipped[0]!.reason).toBe('is completed: pause applies to queued, running, waiting runs');
    expect(await statuses()).toEqual({ 'alpha:paused': 250, 'beta:queued': 40, 'alpha:completed': 5 });
    expect((await store.listAudit({ limit: 1000 })).length).toBe(250);
    // The preview the confirmation shows: what matches, and what the action would apply to now.
    expect(await bulk.preview(deps, VIEWER, { filter: { workflow: 'alpha' } })).toEqual({
      matched: 255,
      // A rerun applies to the paused and the completed ones.
      applicable: { pause: 0, resume: 250, cancel: 250, retry: 0, rerun: 255 },
      tooMany: false,
    });
    expect(await bulk.preview(deps, VIEWER, { filter: { q: 'b-3' } })).toEqual({
      matched: 11,
      applicable: { pause: 11, resume: 0, cancel: 11, retry: 0, rerun: 0 },
      tooMany: false,
    });
  });

  it("refuses a viewer's bulk before the store is opened: nothing changes", async () => {
    await seed();
    opened = 0;
    const error = await bulk.apply(deps, VIEWER, { action: 'cancel', filter: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(opened).toBe(0);
    expect(await statuses()).toEqual({ 'alpha:queued': 250, 'beta:queued': 40, 'alpha:completed': 5 });
    expect(await store.listAudit()).toEqual([]);
  });

  it('refuses bad input naming the field, before the store is opened: nothing changes', async () => {
    await store.createRun({ id: 'r1', workflow: 'alpha', inputJson: '{}', totalSteps: 1 });
    opened = 0;
    const cases: [unknown, Record<string, string[]>][] = [
      [{ action: 'explode', filter: {} }, { action: ['must be one of pause, resume, cancel, retry, rerun'] }],
      [{ action: 'cancel' }, { filter: ['must be an object of status, waiting, workflow and q'] }],
      [
        { action: 'cancel', filter: { status: 'stuck' } },
        {
          'filter.status': [
            'must be one of queued, running, paused, waiting, completed, failed, cancelled, rejected, idle',
          ],
        },
      ],
      [
        { action: 'cancel', filter: { workflow: 'Not A Name' } },
        { 'filter.workflow': ['must be a workflow name (lowercase letters, digits, dashes)'] },
      ],
      [{ action: 'cancel', filter: { q: 'x'.repeat(201) } }, { 'filter.q': ['must be at most 200 characters'] }],
      [{ action: 'cancel', filter: { colour: 'red' } }, { 'filter.colour': ['is not a known field'] }],
      [{ action: 'cancel', filter: {}, reason: 'r'.repeat(501) }, { reason: ['at most 500 characters'] }],
      [{ action: 'rerun', filter: {} }, { fromStep: ['is required for rerun: a step number or name'] }],
      [{ action: 'pause', filter: {}, fromStep: 2 }, { fromStep: ['is only for rerun'] }],
      [{ action: 'rerun', filter: {}, fromStep: -1 }, { fromStep: ['must be 0 or more'] }],
      [
        { action: 'rerun', filter: {}, fromStep: '2.5' },
        { fromStep: ['must be a whole number, 0 or more (or a step name)'] },
      ],
      [{ action: 'rerun', ids: ['r1'], filter: {}, fromStep: 1 }, { ids: ['give either filter or ids, not both'] }],
      [{ action: 'rerun', ids: [], fromStep: 1 }, { ids: ['must name at least one run'] }],
      [{ action: 'rerun', ids: 'r1', fromStep: 1 }, { ids: ['must be a list of run ids'] }],
    ];
    for (const [input, fields] of cases) {
      const error = await bulk.apply(deps, OPERATOR, input as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(input).slice(0, 80)).toBeInstanceOf(ControlInputError);
      expect((error as ControlInputError).fields).toEqual(fields);
    }
    expect(opened).toBe(0);
    expect((await store.getRun('r1'))?.status).toBe<RunStatus>('queued');
    expect(await store.listAudit()).toEqual([]);
  });
});
