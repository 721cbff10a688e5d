/**
 * Events in process, on both backends: an event starts one run per subscribed workflow however often it is
 * sent under one id, and none of a workflow not subscribed; a run waiting for an event with a match is woken
 * by a matching one and not by another (lib/control/events.ts, lib/engine/events.ts). Subscriptions are read
 * from the published rows, as the control plane reads them, so the worker's publication is written first.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { events } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { emit } from '../../lib/engine/emit';
import { eventMatches, eventRunId } from '../../lib/engine/events';
import { publicationsOf } from '../../lib/engine/publish';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { EventConflictError, ForbiddenError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

const order = z.object({ order: z.number() });
const ship = defineWorkflow({
  name: 'ship',
  input: order,
  on: ['order.created'],
  run: async (ctx, input) => (await ctx.step('ship', () => `shipped ${input.order}`)).result,
});
const bill = defineWorkflow({
  name: 'bill',
  input: order,
  on: ['order.created', 'order.refunded'],
  run: async (ctx, input) => (await ctx.step('bill', () => `billed ${input.order}`)).result,
});
const audit = defineWorkflow({
  name: 'audit',
  input: order,
  on: ['order.refunded'],
  run: async () => 'audited',
});
const payment = defineWorkflow({
  name: 'payment',
  input: order,
  async run(ctx, input) {
    const paid = await ctx.waitForEvent<{ order: number; amount: number }>('order.paid', {
      match: { order: input.order },
    });
    return paid;
  },
});
const registry = new WorkflowRegistry([ship, bill, audit, payment]);

const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };
const viewer: Caller = { actor: 'vic (viewer)', role: 'viewer', channel: 'api' };

const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('events on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    await h.store.registerWorker({ id: 'publisher', host: 'test', pid: 1 });
    await h.store.publishWorkflows('publisher', publicationsOf(registry));
    const deps = {
      store: async () => h.store,
      claimTtlMs: 30_000,
      maxBytes: 1_000_000,
      workflows: async () => registry,
    };
    const worker = () => stores.serve(h, registry, { concurrency: 2 });
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const runsOf = async () =>
      (await h.store.listRuns({ limit: 100, claimTtlMs: 30_000 })).map((r) => [r.workflow, r.id]).sort();
    return { h, deps, worker, until, runsOf };
  }

  it('starts one run per subscribed workflow for an event sent three times with one id', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const sent = { id: 'o-7', name: 'order.created', data: { order: 7 } };
    const first = await events.emit(s.deps, alice, sent);
    const second = await events.emit(s.deps, alice, sent);
    const third = await events.emit(s.deps, alice, { ...sent, data: { order: 7 } });

    expect(first.recorded).toBe(true);
    expect(first.runs).toEqual([
      { workflow: 'bill', runId: 'bill:event:o-7', existed: false },
      { workflow: 'ship', runId: 'ship:event:o-7', existed: false },
    ]);
    for (const again of [second, third]) {
      expect(again.recorded).toBe(false);
      expect(again.runs.map((r) => r.existed)).toEqual([true, true]);
    }
    expect(await s.runsOf()).toEqual([
      ['bill', 'bill:event:o-7'],
      ['ship', 'ship:event:o-7'],
    ]);
    const run = await s.h.store.getRun('ship:event:o-7');
    expect(JSON.parse(run!.inputJson)).toEqual({ order: 7 });

    s.worker();
    await s.until('ship:event:o-7', 'completed');
    await s.until('bill:event:o-7', 'completed');
    expect(JSON.parse((await s.h.store.getRun('ship:event:o-7'))!.outputJson!)).toBe('shipped 7');
    // One audit line for the event, however often it was sent.
    const lines = (await s.h.store.listAudit({ limit: 10 })).filter((a) => a.action === 'emit');
    expect(lines.map((a) => [a.target, a.detail])).toEqual([['event/o-7', 'order.created: started 2, woke 0']]);
  });

  it('refuses a re-send with other data, and a viewer, writing nothing', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    await events.emit(s.deps, alice, { id: 'o-8', name: 'order.refunded', data: { order: 8 } });
    await expect(events.emit(s.deps, alice, { id: 'o-8', name: 'order.refunded', data: { order: 9 } })).rejects.toThrow(
      EventConflictError,
    );
    await expect(events.emit(s.deps, viewer, { id: 'o-9', name: 'order.refunded', data: {} })).rejects.toThrow(
      ForbiddenError,
    );
    await expect(events.emit(s.deps, alice, { id: '', name: 'x', data: {} })).rejects.toMatchObject({
      fields: { id: [expect.any(String)] },
    });
    expect(await s.runsOf()).toEqual([
      ['audit', 'audit:event:o-8'],
      ['bill', 'bill:event:o-8'],
    ]);
    expect(await s.h.store.getEmittedEvent('o-9')).toBeNull();
  });

  it('wakes a run waiting with a match by a matching event, not by another', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    s.worker();
    const run = await startRun(s.h.store, registry, { workflow: 'payment', input: { order: 7 }, id: 'pay-7' });
    await s.until(run.id, 'waiting');

    const other = await events.emit(s.deps, alice, { id: 'p-1', name: 'order.paid', data: { order: 8, amount: 5 } });
    expect(other.woke).toEqual([]);
    await s.h.elapse(200);
    expect((await s.h.store.getRun(run.id))!.status).toBe('waiting');

    const paid = await events.emit(s.deps, alice, { id: 'p-2', name: 'order.paid', data: { order: 7, amount: 12 } });
    expect(paid.woke).toEqual(['pay-7']);
    await s.until(run.id, 'completed');
    const output = JSON.parse((await s.h.store.getRun(run.id))!.outputJson!);
    expect(output).toMatchObject({ received: true, id: 'p-2', data: { order: 7, amount: 12 } });
    // A re-send finds the wait decided and wakes nothing.
    expect(
      (await events.emit(s.deps, alice, { id: 'p-2', name: 'order.paid', data: { order: 7, amount: 12 } })).woke,
    ).toEqual([]);
  });

  it("the library's emit starts the subscribers as the control plane does, audited as library", async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    for (let i = 0; i < 3; i++) await emit(s.h.store, { id: 'r-1', name: 'order.refunded', data: { order: 1 } });
    expect(await s.runsOf()).toEqual([
      ['audit', 'audit:event:r-1'],
      ['bill', 'bill:event:r-1'],
    ]);
    const lines = (await s.h.store.listAudit({ limit: 10 })).filter((a) => a.action === 'emit');
    expect(lines.map((a) => [a.actor, a.target])).toEqual([['library', 'event/r-1']]);
  });

  it('names the run by a hash when the event id cannot be part of a run id', () => {
    expect(eventRunId('ship', 'o-7')).toBe('ship:event:o-7');
    const hashed = eventRunId('ship', 'order/7 ünicode');
    expect(hashed).toMatch(/^ship:event:[0-9a-f]{32}$/);
    expect(eventRunId('ship', 'order/7 ünicode')).toBe(hashed);
  });
});

describe('a wait’s match against an event’s data', () => {
  // The match was compared as JSON text: an object sent with its keys in another order matched nothing, while a
  // re-send in the first order was the same event, which woke nothing, and the run waited for ever.
  it('compares each field as a JSON value, an object’s keys in any order', () => {
    const match = { order: { id: 1, region: 'eu' } };
    expect(eventMatches(match, { order: { region: 'eu', id: 1 }, amount: 3 })).toBe(true);
    expect(eventMatches(match, { order: { id: 1, region: 'us' } })).toBe(false);
    expect(eventMatches(match, { order: { id: 1 } })).toBe(false);
    expect(eventMatches({ tags: ['a', 'b'] }, { tags: ['b', 'a'] })).toBe(false);
    expect(eventMatches(match, null)).toBe(false);
    expect(eventMatches(null, 'anything')).toBe(true);
  });
});
