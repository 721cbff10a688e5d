/**
 * The step outcomes a process test does not reach, in this process against a real OTLP/HTTP receiver and a real
 * SQLite store: a step that awaits another holder's commit is `awaited`, one whose claim an operator expired
 * under it is `lease_lost`, one that throws is `failed` (the span marked an error), each a child of the run span;
 * a child run it starts keeps the run span as its own trace context.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver } from '../support/otlp-receiver';
import { until } from '../support/until';

const receiver = await startOtlpReceiver({ closeWithTest: false });
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;

const { Checkpoint } = await import('../../lib/checkpoint/checkpoint');
const { ManualClock } = await import('../../lib/clock');
const { RunContext } = await import('../../lib/engine/context');
const { silentLogger } = await import('../../lib/engine/log');
const { startRun } = await import('../../lib/engine/runs');
const { defineWorkflow, WorkflowRegistry } = await import('../../lib/engine/workflow');
const { z } = await import('zod');
const { NonRetryableError } = await import('../../lib/errors');
const { flushTraces } = await import('../../lib/tracing');
const { sqliteBackend } = await import('../support/backends');

afterAll(() => receiver.close());

const RUN_SPAN = '00-5bf92f3577b34da6a3ce929d0e0e4736-10f067aa0ba902b7-01';

describe('step spans in this process', () => {
  it('awaited, lease_lost, failed and a child run, each once, under the run span', async () => {
    const h = await sqliteBackend.open();
    try {
      const registry = new WorkflowRegistry([defineWorkflow({ name: 'kid', input: z.object({}), run: async () => 1 })]);
      const checkpoint = new Checkpoint(h.store, 'r', { workerId: 'w-a', clock: h.clock, leaseMs: 5000 });
      const ctx = new RunContext(
        'r',
        checkpoint,
        new AbortController().signal,
        silentLogger,
        undefined,
        h.clock,
        undefined,
        {
          traceparent: RUN_SPAN,
          family: async () => ({
            start: (request) => startRun(h.store, registry, request),
            getRun: (id) => h.store.getRun(id),
          }),
        },
      );

      // awaited: another worker holds r:held until the gate opens, then commits; this step waits for that.
      const other = new Checkpoint(h.store, 'r', { workerId: 'w-b', clock: h.clock, leaseMs: 5000 });
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const holder = other.runOnce('r:held', async () => {
        holding();
        await gate;
        return 'theirs';
      });
      await held;
      // It finds the key held and sleeps on the store's clock (one timer more); the holder commits; the clock moves on.
      const clock = h.clock as InstanceType<typeof ManualClock>;
      const timers = clock.pending;
      let answered = false;
      const waiting = ctx.runOnce('r:held', () => 'mine').finally(() => (answered = true));
      await until('the step waiting for the holder', () => clock.pending > timers);
      open();
      await holder;
      while (!answered) await h.elapse(100);
      expect(await waiting).toEqual({ result: 'theirs', status: 'awaited' });

      // lease_lost: the operator expires the claim while the step runs; its commit is refused.
      await expect(
        ctx.step('lost', async () => {
          await h.store.expireClaim('r:lost', { actor: 'op', force: true, claimTtlMs: 30_000 });
          return 1;
        }),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' });

      // failed: the side effect throws, and is not retried.
      await expect(
        ctx.step('boom', () => {
          throw new NonRetryableError('no');
        }),
      ).rejects.toThrow('no');

      // A child run is started in the parent's trace: its row keeps the parent execution's run span.
      expect(await ctx.startChild('k', 'kid', {})).toBe('r:k');
      expect((await h.store.getRun('r:k'))?.traceparent).toBe(RUN_SPAN);

      const steps = () => receiver.spans.filter((s) => s.name === 'step');
      await until('four step spans', async () => {
        await flushTraces();
        return steps().length >= 4;
      });
      expect(
        steps()
          .map((s) => [
            s.attributes['waybill.key'],
            s.attributes['waybill.outcome'],
            s.attributes['waybill.attempt'],
            s.status,
          ])
          .sort(),
      ).toEqual([
        ['r:boom', 'failed', 1, 2],
        ['r:child:k', 'executed', 1, 0],
        ['r:held', 'awaited', 1, 0],
        ['r:lost', 'lease_lost', 1, 2],
      ]);
      expect(new Set(steps().map((s) => `${s.traceId} ${s.parentSpanId}`))).toEqual(
        new Set(['5bf92f3577b34da6a3ce929d0e0e4736 10f067aa0ba902b7']),
      );
    } finally {
      await h.close();
    }
  });
});
