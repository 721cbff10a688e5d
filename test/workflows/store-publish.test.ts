/**
 * Publishing workflows, on both backends: a worker's publication upserts each workflow (the last worker to
 * start wins on a name) and records what it serves; the list says which live workers serve each, and a
 * stopped or silent worker serves nothing. The control plane's catalog built from it checks input against
 * the published JSON Schema.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { WorkflowCatalog } from '../../lib/engine/catalog';
import { publicationsOf } from '../../lib/engine/publish';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const flow = (version: string, max: number) =>
  defineWorkflow({
    name: 'crawl',
    version,
    description: `crawl ${version}`,
    totalSteps: 10,
    input: z.object({ pages: z.number().int().max(max), depth: z.number().int().default(2) }),
    async run() {},
  });

describe.each(list)('published workflows on $name', (backend) => {
  let handle: StoreHandle;
  afterEach(async () => handle?.close());

  it('upserts by name, records who serves what, and judges liveness by heartbeat and stop', async () => {
    handle = await backend.open();
    const store = handle.store;
    expect(await store.listPublishedWorkflows({ liveWithinMs: 10_000 })).toEqual([]);

    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.publishWorkflows('w1', publicationsOf(new WorkflowRegistry([flow('v1', 5)])));
    await store.registerWorker({ id: 'w2', host: 'h', pid: 2 });
    await store.publishWorkflows('w2', publicationsOf(new WorkflowRegistry([flow('v2', 50)])));

    const [row] = await store.listPublishedWorkflows({ liveWithinMs: 10_000 });
    expect(row).toMatchObject({
      name: 'crawl',
      version: 'v2',
      description: 'crawl v2',
      totalSteps: 10,
      publishedBy: 'w2',
      servedBy: ['w1', 'w2'],
    });
    expect(JSON.parse(row!.inputSchemaJson).properties.pages).toMatchObject({ type: 'integer', maximum: 50 });
    expect(typeof row!.updatedAt).toBe('number');

    // The catalog checks against the newest publication; the built-ins stay known beside it.
    const catalog = new WorkflowCatalog(new WorkflowRegistry(), [row!]);
    expect(catalog.check('crawl', { pages: 40 })).toEqual({
      ok: true,
      workflow: 'crawl',
      input: { pages: 40, depth: 2 },
      totalSteps: 10,
    });
    expect(catalog.check('crawl', { pages: 51 })).toEqual({
      ok: false,
      issues: [{ path: ['pages'], message: 'must be at most 50' }],
    });
    expect(catalog.check('nope', {})).toBeUndefined();

    await store.stopWorker('w1');
    expect((await store.listPublishedWorkflows({ liveWithinMs: 10_000 }))[0]!.servedBy).toEqual(['w2']);
    // Silent past the window: w2 no longer counts as serving it, though it never said it stopped.
    await handle.elapse(400);
    expect((await store.listPublishedWorkflows({ liveWithinMs: 200 }))[0]!.servedBy).toEqual([]);
    await store.heartbeatWorker('w2');
    expect((await store.listPublishedWorkflows({ liveWithinMs: 200 }))[0]!.servedBy).toEqual(['w2']);
  });

  it('sets the total of a run only for its owner and only where none was set', async () => {
    handle = await backend.open();
    const store = handle.store;
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.createRun({ id: 'r1', workflow: 'crawl', inputJson: '{}', totalSteps: null });
    await store.setRunTotal('r1', 'w1', 7); // not its owner yet: queued, nobody's
    expect((await store.getRun('r1'))!.totalSteps).toBeNull();
    expect((await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['crawl'] }))!.id).toBe('r1');
    await store.setRunTotal('r1', 'w2', 9);
    expect((await store.getRun('r1'))!.totalSteps).toBeNull();
    await store.setRunTotal('r1', 'w1', 7);
    await store.setRunTotal('r1', 'w1', 8);
    expect((await store.getRun('r1'))!.totalSteps).toBe(7);
  });
});
