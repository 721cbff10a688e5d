/**
 * Rerun and fork from a step, with real `waybill worker` processes and the real CLI, on every backend. The
 * notify outbox counts each step's side effect by key (a refused resend counts too), so "executed exactly
 * once / twice" is counted where the side effect lands, not where we recorded it.
 */
import { describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { runCli } from '../cli/support';
import { executionsByKey, startWorker, until } from '../engine/support';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';

const kinds = await targetKinds('rewind process tests');

async function completed(store: Store, id: string, times: number) {
  return until(`run ${id} to complete`, async () => {
    const run = await store.getRun(id);
    return run?.status === 'completed' && run.attempts >= times ? run : null;
  });
}

const cli = (target: Target, args: string[]) =>
  runCli([...args, '--db', target.url, '--as', 'rita'], { env: { WAYBILL_SQLITE_SYNC: 'normal' } });

/** Every row of a run in every table it has rows in, as read back: equal dumps mean the run was not written. */
async function dumpRun(store: Store, id: string) {
  return {
    run: await store.getRun(id),
    progress: await store.loadProgress(id),
    committed: await store.listCommitted(id, { limit: 1000 }),
    events: await store.listEvents(id, { limit: 1000 }),
    steps: await Promise.all(Array.from({ length: 30 }, (_, n) => store.readStep(id, n))),
  };
}

describe.each(kinds)('rewinding runs on %s', (kind) => {
  it('rerun from step 20 of a completed 30-step run runs 20–29 once more, with the first results in history', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-rewind-');
    const store = await target.store();
    await store.createRun({
      id: 'r',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 30, outbox: 'o.jsonl' }),
      totalSteps: 30,
    });
    startWorker(target, ['--id', 'w1'], { WAYBILL_DATA_DIR: data.path });
    await completed(store, 'r', 1);
    const first = await Promise.all(Array.from({ length: 10 }, (_, i) => store.getCommitted(`r:step:${20 + i}`)));

    const answer = await cli(target, [
      'rerun',
      'r',
      '--from-step',
      '20',
      '--reason',
      'model answers were wrong',
      '--json',
    ]);
    expect(answer.stderr).toBe('');
    expect(answer.code).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({ moved: 10, rerun: 1, run: { id: 'r', status: 'queued' } });
    await completed(store, 'r', 2);

    const executions = executionsByKey(data.file('o.jsonl'));
    expect(executions.size).toBe(30);
    for (let n = 0; n < 30; n++) expect([n, executions.get(`r:step:${n}`)]).toEqual([n, n < 20 ? 1 : 2]);
    expect((await store.listCommitted('r', { limit: 100 })).length).toBe(30);
    for (let i = 0; i < 10; i++) {
      const record = await store.readStep('r', 20 + i);
      expect(record.history).toHaveLength(1);
      expect(record.history[0]).toMatchObject({
        ...first[i],
        supersededBy: 'rita',
        reason: 'model answers were wrong',
        rerun: 1,
      });
      expect(record.committed!.committedAt).toBeGreaterThan(record.history[0]!.supersededAt - 1e-6);
    }
    expect((await store.readStep('r', 19)).history).toEqual([]);
    const audit = await store.listAudit({ runId: 'r' });
    expect(audit.map((a) => [a.action, a.actor, a.detail])).toEqual([
      [
        'rerun',
        'rita',
        'rerun 1 from step 20: 10 results moved to history, state as it was at step 20; reason: model answers were wrong',
      ],
    ]);
  }, 240_000);

  it('rerun with an edited input runs the steps from N with it', async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    const items = Array.from({ length: 30 }, (_, n) => `first prompt ${n}`);
    await store.createRun({
      id: 'a',
      workflow: 'agent-batch',
      inputJson: JSON.stringify({ items, latencyMs: 0, failureRate: 0 }),
      totalSteps: 30,
    });
    startWorker(target, ['--id', 'w1']);
    await completed(store, 'a', 1);
    const edited = items.map((s, n) => (n >= 20 ? `edited prompt ${n}` : s));
    const answer = await cli(target, ['rerun', 'a', '--from-step', '20', '--input', JSON.stringify({ items: edited })]);
    expect(answer.code).toBe(0);
    await completed(store, 'a', 2);
    const text = async (n: number) =>
      (JSON.parse((await store.getCommitted(`a:step:${n}`))!.resultJson) as { text: string }).text;
    expect(await text(19)).toContain('first prompt 19');
    expect(await text(25)).toContain('edited prompt 25');
    expect(
      (await store.readStep('a', 25)).history.map((h) => (JSON.parse(h.resultJson) as { text: string }).text),
    ).toEqual([expect.stringContaining('first prompt 25')]);
    expect(JSON.parse((await store.getRun('a'))!.inputJson).items[25]).toBe('edited prompt 25');
    // runAgent records each step's item (agent-batch's is the position) beside its result.
    expect((await store.getCommitted('a:step:25'))!.inputJson).toBe('25');
    expect((await store.readStep('a', 25)).history[0]!.inputJson).toBe('25');
  }, 240_000);

  it('fork from step 10 executes exactly 20 steps under its own keys and leaves the original as it was', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-rewind-');
    const store = await target.store();
    await store.createRun({
      id: 'o',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 30, outbox: 'o.jsonl' }),
      totalSteps: 30,
    });
    startWorker(target, ['--id', 'w1'], { WAYBILL_DATA_DIR: data.path });
    await completed(store, 'o', 1);
    const before = JSON.stringify(await dumpRun(store, 'o'));

    const answer = await cli(target, ['fork', 'o', '--from-step', '10', '--id', 'f', '--json']);
    expect(answer.code).toBe(0);
    expect(JSON.parse(answer.stdout)).toMatchObject({
      copied: 10,
      run: { id: 'f', status: 'queued', forkedFromRun: 'o', forkedAtStep: 10 },
    });
    await completed(store, 'f', 1);

    const executions = executionsByKey(data.file('o.jsonl'));
    expect([...executions.keys()].filter((k) => k.startsWith('f:'))).toHaveLength(20);
    for (let n = 0; n < 30; n++) expect([n, executions.get(`f:step:${n}`)]).toEqual([n, n < 10 ? undefined : 1]);
    const forked = await store.listCommitted('f', { limit: 100 });
    expect(forked).toHaveLength(30);
    expect(forked.filter((r) => r.source === 'forked').map((r) => [r.step, r.forkedFrom])).toEqual(
      Array.from({ length: 10 }, (_, n) => [n, `o:step:${n}`]),
    );
    expect(await store.listForks('o')).toEqual([{ id: 'f', forkedAtStep: 10, createdAt: expect.any(Number) }]);
    expect(JSON.stringify(await dumpRun(store, 'o'))).toBe(before);
  }, 240_000);

  it('a worker SIGKILLed in the middle of a rerun: nothing lost, no step committed a third time', async () => {
    const target = await makeTarget(kind);
    const data = tempDir('waybill-rewind-');
    const store = await target.store();
    const env = { WAYBILL_DATA_DIR: data.path, WAYBILL_LEASE_MS: '2000', WAYBILL_RUN_LEASE_MS: '2000' };
    await store.createRun({
      id: 'k',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 30, outbox: 'o.jsonl', latencyMs: 40 }),
      totalSteps: 30,
    });
    const first = startWorker(target, ['--id', 'w1'], env);
    await completed(store, 'k', 1);
    expect((await cli(target, ['rerun', 'k', '--from-step', '5'])).code).toBe(0);
    // Killed once the rerun has committed a few steps again, with the next one in its hands.
    await until('the rerun to pass step 12', async () => (await store.getCommitted('k:step:12')) !== null, {
      timeoutMs: 120_000,
    });
    first.child.kill('SIGKILL');
    startWorker(target, ['--id', 'w2'], env);
    await completed(store, 'k', 2);

    const executions = executionsByKey(data.file('o.jsonl'));
    for (let n = 0; n < 5; n++) expect([n, executions.get(`k:step:${n}`)]).toEqual([n, 1]);
    // A resend the receiver refused is the one step the kill caught between its send and its commit.
    const thrice = [...executions].filter(([, count]) => count > 2);
    expect(thrice.length).toBeLessThanOrEqual(1);
    expect([...executions].filter(([, count]) => count > 3)).toEqual([]);
    for (let n = 5; n < 30; n++) expect([n, executions.get(`k:step:${n}`)! >= 2]).toEqual([n, true]);
    expect((await store.listCommitted('k', { limit: 100 })).length).toBe(30);
    for (let n = 0; n < 30; n++) {
      const record = await store.readStep('k', n);
      // Each step's result was committed once per execution: twice from step 5 on, never three times.
      expect([n, record.history.length, record.committed?.runId]).toEqual([n, n < 5 ? 0 : 1, 'k']);
    }
  }, 240_000);
});
