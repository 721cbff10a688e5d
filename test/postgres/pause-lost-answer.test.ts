/**
 * A pause whose answer is lost on the way back: the UPDATE ran and committed, the client sees a dead connection
 * and retries. The retry's conditional write finds the row paused already; that was this call's own change, so
 * it answers the row (the operator's action took effect and is audited), not "paused already".
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { openPostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, startPgProxy, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL lost pause answers');

describe.skipIf(!pgUp)('postgres: a pause whose answer is lost, retried', () => {
  it('answers the row it paused, for a schedule and for a webhook', async () => {
    const schema = await testSchema('wb_lost');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());

    await store.createSchedule({
      name: 'nightly',
      workflow: 'report',
      cron: '0 0 2 * * *',
      timeZone: 'UTC',
      inputJson: '{}',
      overlap: 'skip',
      catchUp: 'latest',
      catchUpCap: 10,
      source: 'operator',
      nextFireAt: 0,
    });
    proxy.loseAnswerTo('update "schedules"');
    expect(await store.setSchedulePaused('nightly', true)).toMatchObject({ paused: true });
    expect(proxy.lost).toBe(1);

    await store.createWebhook({
      id: 'wh',
      url: 'http://127.0.0.1:9/wh',
      events: ['run.failed'],
      secret: 'whsec_wh',
      inDoubtSeconds: 60,
    });
    proxy.loseAnswerTo('update "webhooks"');
    expect(await store.setWebhookPaused('wh', true)).toMatchObject({ paused: true });
    expect(proxy.lost).toBe(2);
  });
});
