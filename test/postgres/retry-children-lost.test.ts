/**
 * A parent's cancel and retry whose answers are lost on the way back: the transaction committed (the cancel took its
 * child, the retry brought it back), the client sees a dead connection and tries again. The second attempt recognises
 * its own action, writes nothing twice, and a retry still names the child it brought back, so lib/control writes the
 * child's audit line.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { openPostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, startPgProxy, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL lost retry answers');

describe.skipIf(!pgUp)('postgres: a parent’s retry whose answer is lost, retried', () => {
  it('answers the child it brought back, and writes each event once', async () => {
    const schema = await testSchema('wb_lost');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());

    const run = { workflow: 'wf', inputJson: '{}', totalSteps: null };
    await store.createRun({ ...run, id: 'p' });
    await store.createRun({ ...run, id: 'p:c', parentRunId: 'p' });
    // The cancel's too: the line its child's cancel adds to the parent's timeline comes after the cancel's own.
    proxy.loseAnswerTo('COMMIT');
    expect(await store.actOnRun('p', 'cancel', 'ann')).toMatchObject({ id: 'p', status: 'cancelled' });
    expect((await store.getRun('p:c'))?.status).toBe('cancelled');

    proxy.loseAnswerTo('COMMIT');
    const retried = await store.actOnRun('p', 'retry', 'ann');
    expect(proxy.lost).toBe(2);
    expect(retried).toMatchObject({ id: 'p', status: 'queued', retriedChildren: [{ runId: 'p:c', parentId: 'p' }] });
    expect((await store.getRun('p:c'))?.status).toBe('queued');
    expect((await store.getWait('p', 'child', 'p:c'))?.decidedAt).toBeNull();
    expect((await store.listEvents('p')).map((e) => e.detail)).toEqual([
      'cancel by ann: queued → cancelled',
      'child p:c cancelled',
      'retry by ann: cancelled → queued',
      'child p:c retried with this run: its wait for it is open again',
    ]);
    expect((await store.listEvents('p:c')).map((e) => e.detail)).toEqual([
      'cancel by ann (with its parent p): queued → cancelled',
      'retry by ann (with its parent p): cancelled → queued',
    ]);
  });
});
