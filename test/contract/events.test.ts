/**
 * Events on every backend: recorded once under their id; a re-send of the same event is `recorded: false` with
 * the first row; the same id with another name or data is refused naming what differs, and nothing is written.
 * A workflow's published row keeps the event names it subscribes to.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventConflictError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('events on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('records an event once; a re-send changes nothing', async () => {
    const first = await store.recordEmittedEvent({ id: 'e-1', name: 'order.created', dataJson: '{"order":7,"a":1}' });
    expect(first.recorded).toBe(true);
    expect(first.event).toMatchObject({ id: 'e-1', name: 'order.created', dataJson: '{"order":7,"a":1}' });
    expect(typeof first.event.createdAt).toBe('number');

    const again = await store.recordEmittedEvent({ id: 'e-1', name: 'order.created', dataJson: '{"a":1,"order":7}' });
    expect(again).toEqual({ recorded: false, event: first.event });
    expect(await store.getEmittedEvent('e-1')).toEqual(first.event);
    expect(await store.getEmittedEvent('e-2')).toBeNull();
  });

  it('refuses the same id with another name or data, naming what differs, and writes nothing', async () => {
    const first = await store.recordEmittedEvent({ id: 'e-1', name: 'order.created', dataJson: '{"order":7}' });
    const name = store.recordEmittedEvent({ id: 'e-1', name: 'order.paid', dataJson: '{"order":7}' });
    await expect(name).rejects.toThrow(EventConflictError);
    await expect(name).rejects.toThrow('event e-1 was sent before with another name; nothing was written');
    await expect(store.recordEmittedEvent({ id: 'e-1', name: 'order.paid', dataJson: '{"order":8}' })).rejects.toThrow(
      'another name and data',
    );
    await expect(store.recordEmittedEvent({ id: 'e-1', name: 'order.created', dataJson: '{}' })).rejects.toThrow(
      'another data;',
    );
    expect(await store.getEmittedEvent('e-1')).toEqual(first.event);
  });

  it("keeps a published workflow's subscriptions", async () => {
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    const base = { description: null, inputSchemaJson: '{"type":"object"}', totalSteps: null, version: null };
    await store.publishWorkflows('w1', [
      { ...base, name: 'ship', events: ['order.created', 'order.paid'] },
      { ...base, name: 'plain' },
    ]);
    const rows = await store.listPublishedWorkflows({ liveWithinMs: 60_000 });
    expect(rows.map((r) => [r.name, r.events])).toEqual([
      ['plain', []],
      ['ship', ['order.created', 'order.paid']],
    ]);
  });
});
