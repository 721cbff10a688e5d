/**
 * A run's budget at the gateway, on every backend: a workflow whose steps call the model through the official
 * openai SDK, with a budget the stand-in upstream's priced answers reach after K steps. The call after them is
 * refused (402, the SDK's own error) and never goes upstream, the run is paused with its reason, audited; the
 * worker lets it go paused, not failed. Raised and resumed, it completes, each step paid for once.
 */
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Config, parseConfig } from '../../lib/config';
import { type Caller, runs } from '../../lib/control';
import { Worker } from '../../lib/engine/worker';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { BUDGET_REASON } from '../../lib/gateway/budget';
import { runUsage } from '../../lib/gateway/ledger';
import type { PriceTable } from '../../lib/gateway/prices';
import { type GatewayServer, startGatewayServer } from '../../lib/gateway/server';
import type { RunStatus } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';
import { type ModelUpstream, startModelUpstream } from '../support/model-upstream';

const list = await backends();

const STEPS = 5;
/** Steps paid for before the budget is reached. */
const K = 2;
/** A dollar a token, input only: each step's prompt ("budget step <n>") is three words, so three dollars. */
const PRICES: PriceTable = { dated: 'test', models: { 'budget-model': { input: 1_000_000, output: 0 } } };
const PER_CALL_USD = 3;
/** Below K calls' spend, above K - 1's: the call after the K-th is the one refused. */
const BUDGET_USD = (K - 0.5) * PER_CALL_USD;
const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'api' };

describe.each(list)('a run budget at the gateway on $name', (backend) => {
  let h: StoreHandle;
  let upstream: ModelUpstream;
  let gateway: GatewayServer;
  let cfg: Config;

  beforeEach(async () => {
    h = await backend.open();
    upstream = await startModelUpstream();
    cfg = parseConfig({ DATABASE_URL: 'file:unused.db', WAYBILL_GATEWAY_OPENAI_URL: `${upstream.url}/v1` });
    gateway = await startGatewayServer(
      { store: h.store, settings: cfg, prices: PRICES, auth: cfg, pollMs: 10 },
      '127.0.0.1',
      0,
    );
  });
  afterEach(async () => {
    await gateway.close();
    await upstream.close();
    await h.close();
  });

  const client = () => new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'local', maxRetries: 0 });
  const asking = defineWorkflow({
    name: 'asking',
    input: z.object({}),
    totalSteps: STEPS,
    budgetUsd: BUDGET_USD,
    // No retry to wait out: the worker must tell the refused step's failure from a failing run by the run's
    // status alone, before any heartbeat has told it the run is paused.
    maxAttempts: 1,
    async run(ctx) {
      const { step } = await ctx.load();
      for (let n = step; n < STEPS; n++) {
        await ctx.runOnce(
          `${ctx.runId}:step:${n}`,
          async ({ idempotencyKey }) =>
            (
              await client().chat.completions.create(
                { model: 'budget-model', messages: [{ role: 'user', content: `budget step ${n}` }] },
                { headers: { 'Idempotency-Key': idempotencyKey } },
              )
            ).choices[0]!.message.content,
          { step: n },
        );
        await ctx.saveProgress(n + 1, {});
      }
      return 'done';
    },
  });

  /** Moves the clock until the run is `status` and no worker holds it. */
  const settled = async (runId: string, status: RunStatus) => {
    for (let i = 0; i < 3000; i++) {
      const run = await h.store.getRun(runId);
      if (run?.status === status && run.owner === null) return run;
      await h.elapse(10);
    }
    throw new Error(`run ${runId} never settled ${status}: ${JSON.stringify(await h.store.getRun(runId))}`);
  };

  it(`pauses the run once ${K} steps spent its budget, with no further upstream call; raised and resumed, it completes`, async () => {
    const registry = new WorkflowRegistry([asking]);
    const worker = new Worker({ store: h.store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    const running = worker.run();
    const deps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 100_000, workflows: async () => registry };
    try {
      await runs.start(deps, OPERATOR, { workflow: 'asking', id: 'b1' });
      const paused = await settled('b1', 'paused');
      // The workflow's default, filled in by the worker that took the run.
      expect(paused.budgetUsd).toBe(BUDGET_USD);
      expect(paused.error).toBeNull();
      expect(upstream.calls.map((c) => c.prompt)).toEqual(['budget step 0', 'budget step 1']);
      expect((await runUsage(h.store, 'b1')).costUsd).toBe(K * PER_CALL_USD);
      expect(await h.store.getCommitted(`b1:step:${K}`)).toBeNull();
      const audit = await h.store.listAudit({ runId: 'b1' });
      expect(audit.map((a) => [a.actor, a.action, a.detail])).toEqual([
        ['gateway', 'pause', `reason: ${BUDGET_REASON}`],
        ['olga (operator)', 'start', 'workflow asking'],
      ]);

      const raised = await runs.budget(deps, OPERATOR, { runId: 'b1', budgetUsd: 100, reason: 'worth it' });
      expect(raised.budgetUsd).toBe(100);
      await runs.act(deps, OPERATOR, { action: 'resume', runId: 'b1' });
      const done = await settled('b1', 'completed');
      expect(done.budgetUsd).toBe(100);
    } finally {
      worker.stop();
      await h.settle(running);
    }
    expect(upstream.calls.map((c) => c.prompt)).toEqual(Array.from({ length: STEPS }, (_, n) => `budget step ${n}`));
    const audit = await h.store.listAudit({ runId: 'b1' });
    expect(audit.map((a) => [a.actor, a.action, a.detail])).toEqual([
      ['olga (operator)', 'resume', null],
      ['olga (operator)', 'budget', `budget $${BUDGET_USD} → $100; reason: worth it`],
      ['gateway', 'pause', `reason: ${BUDGET_REASON}`],
      ['olga (operator)', 'start', 'workflow asking'],
    ]);
  });

  it("keeps a start's own budget over the workflow's default: the run spends past the default and completes", async () => {
    const registry = new WorkflowRegistry([asking]);
    const worker = new Worker({ store: h.store, registry, pollMs: 10, heartbeatMs: 50, clock: h.clock });
    const running = worker.run();
    const deps = { store: async () => h.store, claimTtlMs: 30_000, maxBytes: 100_000, workflows: async () => registry };
    try {
      await runs.start(deps, OPERATOR, { workflow: 'asking', id: 'b3', budgetUsd: 100 });
      expect((await settled('b3', 'completed')).budgetUsd).toBe(100);
    } finally {
      worker.stop();
      await h.settle(running);
    }
    expect(upstream.calls).toHaveLength(STEPS);
    expect((await h.store.listAudit({ runId: 'b3' })).map((a) => [a.action, a.detail])).toEqual([
      ['start', 'workflow asking; budget $100'],
    ]);
  });

  it('refuses in each SDK shape with 402 and asks nobody; a stored answer is still replayed', async () => {
    await h.store.createRun({ id: 'b2', workflow: 'asking', inputJson: '{}', totalSteps: 2, budgetUsd: 1 });
    const ask = (n: number) =>
      client().chat.completions.create(
        { model: 'budget-model', messages: [{ role: 'user', content: `budget step ${n}` }] },
        { headers: { 'Idempotency-Key': `b2:step:${n}` } },
      );
    const first = await ask(0);
    // $3 spent of $1: the next call is refused, with the SDK's error.
    await expect(ask(1)).rejects.toMatchObject({
      status: 402,
      error: { type: 'budget_reached', code: 'BUDGET_REACHED' },
    });
    expect((await h.store.getRun('b2'))?.status).toBe('paused');
    // A replay costs nothing: answered from the store.
    expect(await ask(0)).toEqual(first);
    const anthropic = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'b2:step:1' },
      body: JSON.stringify({ model: 'budget-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(anthropic.status).toBe(402);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'budget_reached' } });
    expect(upstream.received).toBe(1);
    // One pause, however many refusals.
    expect((await h.store.listAudit({ runId: 'b2' })).map((a) => [a.actor, a.action])).toEqual([['gateway', 'pause']]);
  });
});

describe('a workflow default budget', () => {
  it('is refused at definition when it is not a budget, naming the field', () => {
    const define = (budgetUsd: number) =>
      defineWorkflow({ name: 'costly', input: z.object({}), budgetUsd, run: async () => null });
    expect(define(2.5).budgetUsd).toBe(2.5);
    expect(() => define(0)).toThrow('workflow "costly": budgetUsd must be more than 0 US dollars');
    expect(() => define(Number.POSITIVE_INFINITY)).toThrow(
      'workflow "costly": budgetUsd must be a number of US dollars',
    );
  });
});
