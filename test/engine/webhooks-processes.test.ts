/**
 * The proof, with real `waybill worker` processes on every backend and a receiver of the test's own that
 * verifies every signature with the exported helper (the webhook added with `waybill webhook add`, its secret
 * the one it printed): a failed run's `run.failed` arrives signed and verifies; then, with the receiver answering
 * 503, then hanging (the worker SIGKILLed while it waits on a post), then not listening at all, runs fail and
 * complete and another worker is started; once the receiver is back, every event has arrived — at least once,
 * and exactly the expected ids once deduplicated by id.
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ROOT, runCli } from '../cli/support';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { startReceiver } from '../support/webhook-receiver';
import { startWorker, until } from './support';

const kinds = await targetKinds('webhook process tests');

/** `outcome`: one step, then the run fails (NonRetryableError, no retry) or completes, as its input says. */
function workflowModule(dir: string): string {
  const url = (path: string) => JSON.stringify(pathToFileURL(join(ROOT, path)).href);
  const file = join(dir, 'outcome.mjs');
  writeFileSync(
    file,
    `import { defineWorkflow } from ${url('lib/engine/workflow.ts')};
import { NonRetryableError } from ${url('lib/errors.ts')};
import { z } from ${url('node_modules/zod/index.js')};
export const outcome = defineWorkflow({ name: 'outcome', input: z.object({ fail: z.boolean() }), totalSteps: 1,
  async run(ctx, input) {
    await ctx.step('work', async () => 'done');
    if (input.fail) throw new NonRetryableError('told to fail');
  } });
`,
  );
  return file;
}

const ENV = {
  WAYBILL_HEARTBEAT_MS: '100',
  WAYBILL_RUN_LEASE_MS: '3000',
  WAYBILL_WEBHOOK_POLL_MS: '100',
  WAYBILL_WEBHOOK_RETRY_MS: '100',
  WAYBILL_WEBHOOK_MAX_RETRY_MS: '400',
  WAYBILL_WEBHOOK_TIMEOUT_MS: '1000',
};

describe.each(kinds)('alert webhooks with real workers on %s', (kind) => {
  it('delivers every event, signed, across a receiver outage and a SIGKILLed worker', async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    const module = workflowModule(tempDir('waybill-webhooks-').path);
    let secret = '';
    const receiver = await startReceiver(() => secret);
    onTestFinished(() => receiver.close());
    const added = await runCli(['webhook', 'add', receiver.url, '--event', 'run.failed', '--event', 'run.completed'], {
      env: { DATABASE_URL: target.url },
    });
    expect(added.code, added.stderr).toBe(0);
    const [, id, printed] = /^added webhook (wh_\w+): .*\nsecret (\S+) /.exec(added.stdout)!;
    secret = printed!;
    const delivery = (event: string, run: string) => `${id}:${event}:${run}:1`;
    const start = (id: string, fail: boolean) =>
      store.createRun({ id, workflow: 'outcome', inputJson: JSON.stringify({ fail }), totalSteps: 1 });
    const finished = (ids: string[]) => async () => {
      const rows = await Promise.all(ids.map((id) => store.getRun(id)));
      return rows.every((r) => r?.status === 'failed' || r?.status === 'completed');
    };
    /** Every delivery of these runs attempted at least once, none delivered yet. */
    const attempted = (runs: string[]) => async () => {
      const rows = (await store.listDeliveries({ limit: 500 })).filter((d) => runs.includes(d.runId!));
      return rows.length === runs.length && rows.every((d) => d.attempts >= 1 && d.status === 'pending');
    };

    let worker = startWorker(target, ['--workflows', module, '--id', 'w1'], ENV);
    await start('first', true);
    await until('the first run.failed to arrive', () => receiver.accepted.length === 1, { timeoutMs: 60_000 });
    expect(receiver.accepted[0]).toMatchObject({
      id: delivery('run.failed', 'first'),
      event: 'run.failed',
      body: { type: 'run.failed', data: { runId: 'first', workflow: 'outcome', error: 'told to fail' } },
    });

    // Down, answering 503: runs end, their deliveries are tried and refused.
    receiver.answer = 503;
    await Promise.all([start('a', true), start('b', false), start('c', true)]);
    await until('a, b, c to end', finished(['a', 'b', 'c']), { timeoutMs: 60_000 });
    await until('their deliveries to be tried', attempted(['a', 'b', 'c']), { timeoutMs: 60_000 });

    // Hanging: the worker is SIGKILLed while it waits on a post (its lease on the delivery dies with it), then
    // down, not listening; more runs queue, another worker takes over.
    receiver.answer = 0;
    await start('h', true);
    await until('a post of h to hang', () => receiver.hung.includes(delivery('run.failed', 'h')), {
      timeoutMs: 60_000,
    });
    worker.child.kill('SIGKILL');
    await once(worker.child, 'exit');
    await receiver.close();
    await Promise.all([start('d', false), start('e', true)]);
    worker = startWorker(target, ['--workflows', module, '--id', 'w2'], ENV);
    await until('d, e to end', finished(['d', 'e']), { timeoutMs: 60_000 });
    await until('every delivery to be tried', attempted(['a', 'b', 'c', 'd', 'e', 'h']), { timeoutMs: 60_000 });
    const refusedWhileDown = (await store.listDeliveries({ limit: 500 })).filter((d) => d.lastError === 'ECONNREFUSED');
    expect(refusedWhileDown.length).toBeGreaterThan(0);

    // Back up: everything arrives.
    receiver.answer = 200;
    await receiver.listen();
    const expected = [
      delivery('run.failed', 'first'),
      delivery('run.failed', 'a'),
      delivery('run.completed', 'b'),
      delivery('run.failed', 'c'),
      delivery('run.completed', 'd'),
      delivery('run.failed', 'e'),
      delivery('run.failed', 'h'),
    ];
    await until('every event to arrive', () => expected.every((id) => receiver.ids().has(id)), { timeoutMs: 60_000 });
    await until('every delivery to be recorded delivered', async () =>
      (await store.listDeliveries({ limit: 500 })).every((d) => d.status === 'delivered'),
    );
    expect([...receiver.ids()].sort()).toEqual([...expected].sort());
    expect(receiver.accepted.length).toBeGreaterThanOrEqual(expected.length);
    expect(receiver.refused).toBe(0);
    expect(new Set(receiver.accepted.map((a) => `${a.id}=${a.event}`)).size).toBe(expected.length);
    const rows = await store.listDeliveries({ limit: 500 });
    expect(rows.map((d) => d.id).sort()).toEqual([...expected].sort());
    expect(rows.filter((d) => d.id !== delivery('run.failed', 'first')).every((d) => d.attempts >= 2)).toBe(true);
  }, 180_000);
});
