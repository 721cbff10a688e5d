/**
 * Where a wait's name or count is refused, on both backends: names the idempotency-key rule refuses (a lone
 * surrogate has no UTF-8 form, so PostgreSQL would store two such names as one) are refused by the engine's
 * ctx.waitForSignal and by lib/control's signal() before anything is written; a run holds at most
 * maxWaitsPerRun waits, so signals sent ahead cannot grow it without bound; and a signal named like an
 * approval the run has not reached yet neither fails the run nor approves it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { waits } from '../../lib/control';
import type { Caller } from '../../lib/control/caller';
import { startRun } from '../../lib/engine/runs';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ControlInputError, WaitDecidedError, WaitLimitError } from '../../lib/errors';
import type { RunStatus } from '../../lib/store/contract';
import { untilRun } from '../support/backends';
import { servedStores } from '../support/served-stores';

/** Waits for the signal its input names; `lone`: with a lone surrogate after it, which no input may carry itself. */
const named = defineWorkflow({
  name: 'named',
  input: z.object({ name: z.string(), lone: z.boolean().optional() }),
  run: async (ctx, input) => ctx.waitForSignal(input.lone ? `${input.name}\ud83d` : input.name),
});
const gated = defineWorkflow({
  name: 'gated',
  input: z.object({}),
  run: async (ctx) => ctx.waitForApproval('review'),
});
const registry = new WorkflowRegistry([named, gated]);

const alice: Caller = { actor: 'alice (operator)', role: 'operator', channel: 'api' };

const stores = servedStores();

describe.each([['sqlite'], ['postgres']] as const)('wait edges on %s', (name) => {
  async function setup() {
    const h = await stores.open(name);
    if (!h) return null;
    const deps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
    const worker = () => stores.serve(h, registry, { concurrency: 1 });
    const until = (id: string, want: RunStatus) => untilRun(h, id, want);
    const start = (workflow: string, input: object = {}) => startRun(h.store, registry, { workflow, input });
    return { h, deps, worker, until, start };
  }

  it('refuses wait names with a lone surrogate, in signal() and in ctx.waitForSignal, writing nothing', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const run = await s.start('named', { name: 'go' });
    for (const lone of ['go-\ud83d', 'go-\ud83c']) {
      const refused = await waits.signal(s.deps, alice, { runId: run.id, name: lone, payload: 1 }).catch((e) => e);
      expect(refused).toBeInstanceOf(ControlInputError);
      expect((refused as ControlInputError).fields).toEqual({
        name: ['must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)'],
      });
    }
    expect(await s.h.store.listWaits(run.id)).toEqual([]);
    expect(await s.h.store.listAudit({ runId: run.id })).toEqual([]);

    s.worker();
    const waiting = await s.start('named', { name: 'go-', lone: true });
    await s.until(waiting.id, 'failed');
    expect((await s.h.store.getRun(waiting.id))!.error).toContain(
      'signal name "go-\\ud83d" must not contain an unpaired surrogate',
    );
    expect(await s.h.store.listWaits(waiting.id)).toEqual([]);
  });

  it('a run holds at most maxWaitsPerRun waits: a signal that would add one more is refused, writing nothing', async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const deps = { ...s.deps, maxWaitsPerRun: 3 };
    const run = await s.start('named', { name: 'go' });
    // Five at one instant against a bound of three: exactly three are kept, whatever the interleaving.
    const sent = await Promise.allSettled(
      ['a', 'b', 'c', 'd', 'e'].map((n) => waits.signal(deps, alice, { runId: run.id, name: n, payload: n })),
    );
    const refused = sent.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect([sent.length - refused.length, refused.length]).toEqual([3, 2]);
    for (const error of refused) {
      expect(error).toBeInstanceOf(WaitLimitError);
      expect((error as WaitLimitError).message).toMatch(
        new RegExp(
          `^run ${run.id} holds 3 waits, the most a run may hold \\(WAYBILL_MAX_WAITS_PER_RUN\\); signal [a-e] was not sent; nothing was written$`,
        ),
      );
    }
    const kept = (await s.h.store.listWaits(run.id)).map((w) => w.name).sort();
    expect(kept).toHaveLength(3);
    expect((await s.h.store.listAudit({ runId: run.id })).map((a) => a.target).sort()).toEqual(
      kept.map((n) => `${run.id}/${n}`),
    );
    // A second send of a kept signal is the 409 it always was, not the limit.
    await expect(waits.signal(deps, alice, { runId: run.id, name: kept[0]!, payload: 2 })).rejects.toBeInstanceOf(
      WaitDecidedError,
    );
    expect(await s.h.store.listWaits(run.id)).toHaveLength(3);
  });

  it("a signal sent ahead under an approval's name neither fails the run nor approves it: a person still decides", async (t) => {
    const s = await setup();
    if (!s) return t.skip();
    const run = await s.start('gated');
    await waits.signal(s.deps, alice, { runId: run.id, name: 'review', payload: { approved: true } });
    s.worker();
    await s.until(run.id, 'waiting');
    const held = (await s.h.store.listWaits(run.id)).map((w) => [w.kind, w.name, w.decidedBy]);
    expect(held.sort()).toEqual([
      ['approval', 'review', null],
      ['signal', 'review', 'alice (operator)'],
    ]);
    // The worker is idle and the run stays parked: nothing but a decision on the approval moves it.
    for (let i = 0; i < 20; i++) await s.h.elapse(10);
    expect((await s.h.store.getRun(run.id))!.status).toBe('waiting');
    await waits.decide(s.deps, alice, { runId: run.id, approve: false, note: 'not this one' });
    await s.until(run.id, 'completed');
    expect(JSON.parse((await s.h.store.getRun(run.id))!.outputJson!)).toMatchObject({
      approved: false,
      by: 'alice (operator)',
      note: 'not this one',
      timedOut: false,
    });
  });
});
