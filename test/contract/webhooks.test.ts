/**
 * The webhooks' outbox on every backend: a run's end, a park on an approval and a pause at a budget write one
 * delivery per subscription in their own transaction, under an id a rewrite cannot duplicate; dispatchers take
 * due deliveries by a lease (two stores never take one), a failed attempt is due again after its backoff by the
 * store's clock, the last one leaves it failed, and a resend makes it due at once.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../../lib/errors';
import type { Store, WebhookEvent } from '../../lib/store/contract';
import { pruneAll } from '../../lib/store/shared/prune';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const hook = (id: string, events: WebhookEvent[]) => ({
  id,
  url: `http://127.0.0.1:9/${id}`,
  events,
  secret: `whsec_${id}`,
  inDoubtSeconds: 60,
});

describe.each(list)('webhook outbox on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  /** A run of workflow `wf` taken by w1 and ended so. */
  const end = async (id: string, status: 'failed' | 'completed') => {
    await store.createRun({ id, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    const run = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'], runId: id });
    expect(
      await store.finishRun(id, 'w1', { status, error: status === 'failed' ? 'boom' : undefined }, run!.attempts),
    ).toBe(true);
  };

  it('keeps, pauses, resumes and deletes a webhook; a taken id is refused', async () => {
    const created = await store.createWebhook(hook('wh1', ['run.failed']));
    expect(created).toMatchObject({ id: 'wh1', events: ['run.failed'], paused: false, inDoubtSeconds: 60 });
    await expect(store.createWebhook({ ...hook('wh1', ['run.failed']), secret: 'other' })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await store.setWebhookPaused('wh1', true)).toMatchObject({ paused: true });
    expect(await store.setWebhookPaused('wh1', true)).toBeNull();
    expect(await store.setWebhookPaused('wh1', false)).toMatchObject({ paused: false });
    await expect(store.setWebhookPaused('nope', true)).rejects.toBeInstanceOf(NotFoundError);
    expect((await store.listWebhooks()).map((w) => w.id)).toEqual(['wh1']);
    await end('r1', 'failed');
    expect(await store.listDeliveries({ webhookId: 'wh1' })).toHaveLength(1);
    expect(await store.deleteWebhook('wh1')).toBe(true);
    expect(await store.deleteWebhook('wh1')).toBe(false);
    expect(await store.listDeliveries()).toEqual([]);
  });

  it("writes a run's end once per subscription to it, with the run's execution in its id", async () => {
    await store.createWebhook(hook('failures', ['run.failed']));
    await store.createWebhook(hook('all', ['run.failed', 'run.completed']));
    await store.createWebhook(hook('paused', ['run.failed', 'run.completed']));
    await store.setWebhookPaused('paused', true);
    await end('bad', 'failed');
    await end('good', 'completed');
    const rows = await store.listDeliveries();
    expect(rows.map((d) => d.id).sort()).toEqual([
      'all:run.completed:good:1',
      'all:run.failed:bad:1',
      'failures:run.failed:bad:1',
    ]);
    const failed = rows.find((d) => d.id === 'failures:run.failed:bad:1')!;
    expect(failed).toMatchObject({ event: 'run.failed', runId: 'bad', status: 'pending', attempts: 0 });
    expect(JSON.parse(failed.payloadJson)).toMatchObject({
      type: 'run.failed',
      data: { runId: 'bad', workflow: 'wf', status: 'failed', error: 'boom', attempt: 1 },
    });
    // A scanned event written again is not written twice.
    const again = { event: 'run.failed' as const, key: 'bad:1', runId: 'bad', data: {} };
    expect(await store.enqueueWebhookEvent(again)).toBe(0);
    expect(await store.enqueueWebhookEvent({ ...again, key: 'bad:2' })).toBe(2);
    expect(await store.enqueueWebhookEvent({ ...again, key: 'bad:3', webhookId: 'all' })).toBe(1);
    expect(await store.listDeliveries()).toHaveLength(6);
  });

  it('writes an approval park once, and a pause at a budget with the pause', async () => {
    await store.createWebhook(hook('ops', ['run.waiting_approval', 'run.budget_reached']));
    await store.createRun({ id: 'nap', workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    for (const worker of ['w1', 'w2']) {
      const taken = await store.claimRun({ workerId: worker, leaseMs: 60_000, workflows: ['wf'] });
      await store.recordWait({ runId: 'nap', name: 'ship', kind: 'approval' });
      expect(await store.parkRun('nap', 'approval', 'ship', worker, taken!.attempts)).toBe('parked');
      await h.exec(`UPDATE runs SET status = 'queued' WHERE id = 'nap'`);
    }
    await store.actOnRun('nap', 'pause', 'gateway', {
      event: 'run.budget_reached',
      key: 'nap:1',
      runId: 'nap',
      data: { budgetUsd: 1 },
    });
    expect((await store.listDeliveries()).map((d) => d.id).sort()).toEqual([
      'ops:run.budget_reached:nap:1',
      'ops:run.waiting_approval:nap:ship',
    ]);
  });

  it('hands a due delivery to one dispatcher, retries it after its backoff, and fails it after the last', async () => {
    await store.createWebhook(hook('wh', ['run.failed']));
    await end('r1', 'failed');
    const other = await h.reopen();
    const [a, b] = await Promise.all([
      store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 }),
      other.claimDueDeliveries({ owner: 'd2', leaseMs: 60_000, limit: 10 }),
    ]);
    expect(a.length + b.length).toBe(1);
    const [taken] = [...a, ...b];
    const owner = a.length ? 'd1' : 'd2';
    expect(taken).toMatchObject({ id: 'wh:run.failed:r1:1', url: 'http://127.0.0.1:9/wh', secret: 'whsec_wh' });
    expect(await store.recordDeliveryAttempt(taken!.id, 'someone else', retry(503, 1000))).toBe(false);
    expect(await store.recordDeliveryAttempt(taken!.id, owner, retry(503, 5000))).toBe(true);
    expect(await store.getDelivery(taken!.id)).toMatchObject({ status: 'pending', attempts: 1, lastStatus: 503 });
    expect(await store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 })).toEqual([]);
    await h.elapse(6000);
    const [due] = await store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 });
    expect(due?.id).toBe(taken!.id);
    expect(
      await store.recordDeliveryAttempt(due!.id, 'd1', {
        delivered: false,
        status: null,
        error: 'refused',
        retryInMs: null,
      }),
    ).toBe(true);
    expect(await store.getDelivery(due!.id)).toMatchObject({ status: 'failed', attempts: 2, lastError: 'refused' });
    await h.elapse(6000);
    expect(await store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 })).toEqual([]);

    expect(await store.resendDelivery(due!.id)).toMatchObject({ status: 'pending', attempts: 0 });
    const [again] = await store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 });
    expect(
      await store.recordDeliveryAttempt(again!.id, 'd1', {
        delivered: true,
        status: 200,
        error: null,
        retryInMs: null,
      }),
    ).toBe(true);
    const delivered = await store.getDelivery(due!.id);
    expect(delivered).toMatchObject({ status: 'delivered', attempts: 1, lastStatus: 200 });
    expect(delivered!.deliveredAt).not.toBeNull();
    await expect(store.resendDelivery('nope')).rejects.toBeInstanceOf(NotFoundError);
  });

  it("prunes a pruned run's sent deliveries with it, never one still owed", async () => {
    await store.createWebhook(hook('wh', ['run.failed', 'run.completed']));
    await end('sent', 'completed');
    await end('owed', 'failed');
    const due = await store.claimDueDeliveries({ owner: 'd1', leaseMs: 60_000, limit: 10 });
    for (const d of due) {
      const delivered = d.runId === 'sent';
      await store.recordDeliveryAttempt(d.id, 'd1', { ...retry(delivered ? 200 : 503, 1000), delivered });
    }
    await h.elapse(5000);
    await pruneAll(store, { before: await h.now() });
    expect(await store.getRun('sent')).toBeNull();
    expect(await store.getRun('owed')).toBeNull();
    expect((await store.listDeliveries()).map((d) => d.id)).toEqual(['wh:run.failed:owed:1']);
  });

  it("gives a dispatcher's deliveries to the next once its lease passed; a paused webhook's wait", async () => {
    await store.createWebhook(hook('wh', ['run.failed']));
    await end('r1', 'failed');
    expect(await store.claimDueDeliveries({ owner: 'dead', leaseMs: 200, limit: 10 })).toHaveLength(1);
    expect(await store.claimDueDeliveries({ owner: 'd2', leaseMs: 200, limit: 10 })).toHaveLength(0);
    await h.elapse(1000);
    await store.setWebhookPaused('wh', true);
    expect(await store.claimDueDeliveries({ owner: 'd2', leaseMs: 200, limit: 10 })).toHaveLength(0);
    await store.setWebhookPaused('wh', false);
    expect(await store.claimDueDeliveries({ owner: 'd2', leaseMs: 60_000, limit: 10 })).toHaveLength(1);
    expect(await store.recordDeliveryAttempt('wh:run.failed:r1:1', 'dead', retry(500, 0))).toBe(false);
  });
});

function retry(status: number, inMs: number) {
  return { delivered: false, status, error: `HTTP ${status}`, retryInMs: inMs };
}
