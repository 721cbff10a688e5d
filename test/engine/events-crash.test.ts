/**
 * Issue 27's events under a crash, on both backends: a process sending an event is SIGKILLed after the event was
 * recorded and before any subscriber started, or after the first subscriber started; the next send of that event
 * id starts exactly the runs still missing, and every later send starts nothing: one run per subscribed
 * workflow in the end, none twice.
 */
import { describe, expect, it } from 'vitest';
import { emit } from '../../lib/engine/emit';
import { killHard, spawnFixture } from '../support/child';
import { makeTarget, targetKinds } from '../support/targets';

const kinds = await targetKinds('event crash tests');
const publication = (name: string) => ({
  name,
  description: null,
  inputSchemaJson: '{"type":"object"}',
  totalSteps: 1,
  version: null,
  events: ['order.created'],
});

describe.each(kinds)('an event send killed midway on %s', (kind) => {
  it.each(['after-record', 'after-first-start'] as const)(
    'is completed by the next send when killed %s',
    async (point) => {
      const target = await makeTarget(kind);
      const store = await target.store();
      await store.registerWorker({ id: 'publisher', host: 'test', pid: 1 });
      await store.publishWorkflows('publisher', [publication('bill'), publication('ship')]);
      const event = { id: `o-${point}`, name: 'order.created', data: { order: 7 } };

      const sender = spawnFixture('emit-crash.ts', { url: target.url, point, event });
      await sender.waitForLine(new RegExp(`^POINT ${point}$`));
      await killHard(sender);

      const runIds = async () => (await store.listRuns({ limit: 100, claimTtlMs: 30_000 })).map((r) => r.id).sort();
      expect((await store.getEmittedEvent(event.id))?.name).toBe('order.created');
      expect(await runIds()).toEqual(point === 'after-record' ? [] : ['bill:event:o-after-first-start']);

      const again = await emit(store, event);
      expect(again.recorded).toBe(false);
      expect(again.runs.map((r) => [r.workflow, r.existed])).toEqual([
        ['bill', point === 'after-first-start'],
        ['ship', false],
      ]);
      const third = await emit(store, event);
      expect(third.runs.map((r) => r.existed)).toEqual([true, true]);
      expect(await runIds()).toEqual([`bill:event:${event.id}`, `ship:event:${event.id}`]);
    },
    120_000,
  );
});
