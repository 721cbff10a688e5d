/**
 * The webhooks' dispatcher against a real receiver (node:http, test/support/webhook-receiver.ts) that verifies
 * each signature with the exported helper: a failed run's `run.failed` arrives signed and verifies; a wrong secret
 * does not; a receiver answering 503 gets the delivery again after each backoff (the store's clock moved, never
 * slept) under the same id, until it is delivered or, after the last attempt, failed. The helper itself refuses a
 * stale timestamp and a tampered body. And a receiver that knows only Stripe's scheme (node:crypto, no Waybill
 * code) verifies what the real dispatcher posts, and refuses it tampered or stale.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { WebhookDispatcher } from '../../lib/engine/webhooks/dispatch';
import { signWebhook, verifyWebhook } from '../../lib/index';
import { seededRandom } from '../../lib/random';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';
import { type Receiver, startReceiver } from '../support/webhook-receiver';

const list = await backends();

describe('verifyWebhook', () => {
  const body = '{"id":"d1","type":"run.failed"}';
  const at = 1_700_000_000;
  it('accepts its own signature within the tolerance, and nothing else', () => {
    const header = signWebhook('s3cret', body, at);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook('s3cret', header, body, { now: at * 1000 + 299_000 })).toBe(true);
    expect(verifyWebhook('s3cret', header, body, { now: at * 1000 + 301_000 })).toBe(false);
    expect(verifyWebhook('other', header, body, { now: at * 1000 })).toBe(false);
    expect(verifyWebhook('s3cret', header, `${body} `, { now: at * 1000 })).toBe(false);
    expect(verifyWebhook('s3cret', `${header.replace(/v1=\w+/, 'v1=00')}`, body, { now: at * 1000 })).toBe(false);
    expect(verifyWebhook('s3cret', `v1=x,${header}`, body, { now: at * 1000 })).toBe(true);
    expect(verifyWebhook('s3cret', 'garbage', body, { now: at * 1000 })).toBe(false);
    expect(verifyWebhook('s3cret', undefined, body)).toBe(false);
  });
});

/** What a plain node:http receiver got: the raw body bytes and the headers, nothing verified or parsed. */
async function rawReceiver(): Promise<{ url: string; got: { headers: IncomingHttpHeaders; body: Buffer }[] }> {
  const got: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got };
}

/**
 * Stripe's check written from its documentation, not from lib/engine/webhooks/signature.ts: split the header on
 * commas into key=value, take t and every v1, HMAC-SHA256 "<t>.<raw body>" under the secret, compare each v1 in
 * constant time, and refuse a t more than 300 s from now (seconds).
 */
function stripeCheck(secret: string, header: string, body: Buffer, nowS: number): boolean {
  const pairs = header.split(',').map((part) => {
    const at = part.indexOf('=');
    return [part.slice(0, at), part.slice(at + 1)] as const;
  });
  const t = pairs.find(([k]) => k === 't')?.[1];
  if (t === undefined || !/^\d+$/.test(t) || Math.abs(nowS - Number(t)) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  return pairs.some(([k, v]) => k === 'v1' && v.length === 64 && timingSafeEqual(expected, Buffer.from(v, 'hex')));
}

describe.each(list)('webhook dispatcher on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let receiver: Receiver;
  let secret = 'whsec_test';

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    secret = 'whsec_test';
    receiver = await startReceiver(() => secret, { now: () => h.clock.now() });
  });
  afterEach(async () => {
    await receiver.close();
    await h.close();
  });

  const dispatcher = (more: { maxAttempts?: number } = {}) =>
    new WebhookDispatcher({
      store,
      owner: 'd1',
      clock: h.clock,
      retryMs: 1000,
      maxRetryMs: 4000,
      timeoutMs: 5000,
      random: seededRandom(7),
      ...more,
    });

  const failRun = async (id: string) => {
    await store.createRun({ id, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    const run = await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['wf'], runId: id });
    await store.finishRun(id, 'w1', { status: 'failed', error: 'boom' }, run!.attempts);
  };

  it('posts a signed run.failed the receiver verifies, once, with its id in the header and the body', async () => {
    await store.createWebhook({ id: 'wh', url: receiver.url, events: ['run.failed'], secret, inDoubtSeconds: 60 });
    await failRun('r1');
    expect(await dispatcher().dispatchDue()).toBe(1);
    expect(receiver.accepted).toHaveLength(1);
    const [got] = receiver.accepted;
    expect(got).toMatchObject({ id: 'wh:run.failed:r1:1', event: 'run.failed' });
    expect(got!.body).toMatchObject({
      id: 'wh:run.failed:r1:1',
      type: 'run.failed',
      data: { runId: 'r1', workflow: 'wf', error: 'boom' },
    });
    expect(await store.getDelivery('wh:run.failed:r1:1')).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(await dispatcher().dispatchDue()).toBe(0);
    expect(receiver.answered).toBe(1);
  });

  it("signs a delivery as Stripe's scheme says, checked without Waybill's helper", async () => {
    const raw = await rawReceiver();
    await store.createWebhook({ id: 'wh', url: raw.url, events: ['run.failed'], secret, inDoubtSeconds: 60 });
    await failRun('r1');
    const sentAt = h.clock.now();
    expect(await dispatcher().dispatchDue()).toBe(1);
    const sentBy = h.clock.now();
    expect(raw.got).toHaveLength(1);
    const [{ headers, body }] = raw.got as [{ headers: IncomingHttpHeaders; body: Buffer }];
    const header = String(headers['waybill-signature']);
    // One timestamp, the dispatcher's clock in whole seconds, and one v1. On PostgreSQL that clock goes on with
    // the database's, so the second it names lies between the test's looks before and after the post.
    const t = Number(/^t=(\d+),/.exec(header)?.[1]);
    expect(t).toBeGreaterThanOrEqual(Math.floor(sentAt / 1000));
    expect(t).toBeLessThanOrEqual(Math.floor(sentBy / 1000));
    const v1 = createHmac('sha256', secret)
      .update(`${t}.${body.toString('utf8')}`)
      .digest('hex');
    expect(header).toBe(`t=${t},v1=${v1}`);
    expect(headers['waybill-delivery']).toBe('wh:run.failed:r1:1');
    expect(JSON.parse(body.toString('utf8'))).toMatchObject({ id: 'wh:run.failed:r1:1', type: 'run.failed' });
    const nowS = sentAt / 1000;
    expect(stripeCheck(secret, header, body, nowS)).toBe(true);
    // The helper agrees with the independent check, on the same bytes.
    expect(verifyWebhook(secret, header, body.toString('utf8'), { now: sentAt })).toBe(true);
    // Tampered: one byte of the body changed, a byte added, another secret.
    const flipped = Buffer.from(body);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 2) ^ 1, flipped.length - 2);
    expect(stripeCheck(secret, header, flipped, nowS)).toBe(false);
    expect(stripeCheck(secret, header, Buffer.concat([body, Buffer.from(' ')]), nowS)).toBe(false);
    expect(stripeCheck('whsec_other', header, body, nowS)).toBe(false);
    // Replayed: valid at 300 s old, refused at 301 s; and a fresh t spliced onto the old v1 does not sign.
    expect(stripeCheck(secret, header, body, t + 300)).toBe(true);
    expect(stripeCheck(secret, header, body, t + 301)).toBe(false);
    const fresh = header.replace(/^t=\d+/, `t=${t + 301}`);
    expect(stripeCheck(secret, fresh, body, t + 301)).toBe(false);
  });

  it('retries after each backoff under the same id until delivered; a bad signature is not delivered', async () => {
    await store.createWebhook({ id: 'wh', url: receiver.url, events: ['run.failed'], secret, inDoubtSeconds: 60 });
    await failRun('r1');
    const d = dispatcher();
    receiver.answer = 503;
    expect(await d.dispatchDue()).toBe(0);
    expect(await store.getDelivery('wh:run.failed:r1:1')).toMatchObject({
      status: 'pending',
      attempts: 1,
      lastStatus: 503,
    });
    secret = 'rotated'; // the receiver now expects another secret: 400, not delivered
    receiver.answer = 200;
    await h.elapse(4000);
    expect(await d.dispatchDue()).toBe(0);
    expect(receiver.refused).toBe(1);
    secret = 'whsec_test';
    await h.elapse(4000);
    expect(await d.dispatchDue()).toBe(1);
    expect(receiver.answered).toBe(3);
    expect(receiver.accepted.map((a) => a.id)).toEqual(['wh:run.failed:r1:1']);
    expect(await store.getDelivery('wh:run.failed:r1:1')).toMatchObject({
      status: 'delivered',
      attempts: 3,
      lastStatus: 200,
    });
  });

  it('fails a delivery after its last attempt; a resend delivers it', async () => {
    await store.createWebhook({ id: 'wh', url: receiver.url, events: ['run.failed'], secret, inDoubtSeconds: 60 });
    await failRun('r1');
    await receiver.close(); // not listening: a refused connection
    const d = dispatcher({ maxAttempts: 2 });
    await d.dispatchDue();
    await h.elapse(4000);
    await d.dispatchDue();
    const failed = await store.getDelivery('wh:run.failed:r1:1');
    expect(failed).toMatchObject({ status: 'failed', attempts: 2, lastStatus: null, lastError: 'ECONNREFUSED' });
    await receiver.listen();
    await h.elapse(60_000);
    expect(await d.dispatchDue()).toBe(0);
    await store.resendDelivery(failed!.id);
    expect(await d.dispatchDue()).toBe(1);
    expect(receiver.accepted.map((a) => a.id)).toEqual([failed!.id]);
  });
});
