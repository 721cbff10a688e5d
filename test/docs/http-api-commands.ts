/**
 * docs/reference/http-api.md's curl lines, each checked against the answer the page draws after it (`→ …`).
 * The page lists calls rather than a story, so where a call needs a state no earlier line made (a run parked
 * at an approval, an orphaned claim) its handler makes it first, through the API or a worker, as the
 * dashboard's own worker would have; and a `"token": "…"` is the token the claim above it answered, as a
 * reader pastes it.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Context, Handler } from './context';
import { ROOT } from './fences';
import { background, ok, sh } from './shell';

// biome-ignore lint/suspicious/noExplicitAny: an answer is read field by field, as the page describes it
type Json = any;

async function curl(context: Context, command: string): Promise<Json> {
  const out = await ok(context.terminal, command);
  try {
    return JSON.parse(out.stdout);
  } catch {
    throw new Error(`not JSON: ${out.stdout}${out.stderr}`);
  }
}

/** A request of the test's own, to make the state a line needs. */
async function arrange(context: Context, method: string, path: string, body?: unknown): Promise<Json> {
  const answer = await fetch(`${context.terminal.dashboard}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${context.terminal.env.WAYBILL_OPERATOR_TOKEN}`,
      'Content-Type': 'application/json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${text}`);
  return JSON.parse(text);
}

/** Runs the queue with a worker, as `npm start`'s does, until the runs are in these states. */
async function work(
  context: Context,
  want: Record<string, string>,
  start: () => Promise<unknown> = async () => undefined,
  worker = background(context.terminal, 'npx waybill worker'),
): Promise<void> {
  await context.until('the worker up', () => worker.output().includes('"msg":"serving workflows"') || worker.gone());
  await start();
  await context.until(`runs ${JSON.stringify(want)}`, () => {
    if (worker.gone()) throw new Error(`the worker stopped:\n${worker.output()}`);
    return Object.entries(want).every(([id, status]) => context.store.status(id) === status);
  });
  await worker.stop('SIGTERM');
}

/** An orphaned claim of `key`: claimed with the shortest lease, which then passes. */
async function orphan(context: Context, key: string): Promise<void> {
  const runId = key.split(':')[0]!;
  const claim = await arrange(context, 'POST', '/api/v1/checkpoint/claim', { runId, key, leaseMs: 1500 });
  expect(claim.outcome).toBe('claimed');
  await context.until(`${key} orphaned`, async () => {
    const listed = await arrange(context, 'GET', `/api/v1/claims?orphaned=true&runId=${runId}`);
    return listed.claims.some((c: Json) => c.key === key);
  });
}

let protocolToken = '';
const withToken = (command: string) => command.replaceAll('"token": "…"', `"token": "${protocolToken}"`);

export const httpApi: Record<string, Handler> = {
  'export WAYBILL=http://127.0.0.1:3000 AUTH="Authorization: Bearer $WAYBILL_OPERATOR_TOKEN" JSON="Content-Type: application/json"':
    async (command, context) => {
      const out = await ok(context.terminal, `${command}; printf '%s\\n%s\\n%s' "$WAYBILL" "$AUTH" "$JSON"`);
      const [waybill, auth, json] = out.stdout.split('\n');
      expect(auth).toBe(`Authorization: Bearer ${context.terminal.env.WAYBILL_OPERATOR_TOKEN}`);
      Object.assign(context.terminal.env, { WAYBILL: waybill!, AUTH: auth!, JSON: json! });
    },

  'curl -H "$AUTH" "$WAYBILL/api/v1/runs?status=running&workflow=agent-batch&q=batch&limit=50"': async (c, context) => {
    expect(await curl(context, c)).toEqual({ runs: [], nextCursor: null });
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs" -d '{"workflow": "agent-batch", "input": {"count": 50}, "id": "nightly-7"}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer).toMatchObject({ run: { id: 'nightly-7', status: 'queued' }, existed: false });
      // The run the lines below read, rerun and fork, run by a worker; and a run parked at its approval.
      await arrange(context, 'POST', '/api/v1/runs', { workflow: 'review-and-send', id: 'review-1', input: {} });
      await work(context, { 'nightly-7': 'completed', 'review-1': 'waiting' });
    },
  'curl -H "$AUTH" "$WAYBILL/api/v1/runs/nightly-7"': async (c, context) => {
    const answer = await curl(context, c);
    expect(Object.keys(answer)).toEqual(
      expect.arrayContaining(['run', 'progress', 'counts', 'claims', 'claimsNextCursor', 'actions']),
    );
    expect(Object.keys(answer.progress)).toEqual(expect.arrayContaining(['step', 'state', 'counters']));
    expect(Object.keys(answer.counts)).toEqual(expect.arrayContaining(['committed', 'claims', 'orphanedClaims']));
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/bulk" -d '{"action": "cancel", "filter": {"status": "queued", "workflow": "crawl"}, "reason": "bad deploy"}'`]:
    async (c, context) => {
      expect(await curl(context, c)).toEqual({ matched: 0, done: 0, skipped: [] });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/bulk" -d '{"action": "rerun", "fromStep": "fetch-3", "filter": {"status": "failed"}}'`]:
    async (c, context) => {
      expect(await curl(context, c)).toEqual({ matched: 0, done: 0, skipped: [] });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/review-1/approvals/review" -d '{"approve": false, "note": "wrong amount"}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer.wait).toMatchObject({ name: 'review', kind: 'approval', note: 'wrong amount' });
    },
  'curl -H "$AUTH" "$WAYBILL/api/v1/runs/nightly-7/committed?limit=100"': async (c, context) => {
    const answer = await curl(context, c);
    expect(answer.committed).toHaveLength(50);
    expect(Object.keys(answer.committed[0])).toEqual(expect.arrayContaining(['key', 'step', 'result', 'source']));
  },
  'curl -H "$AUTH" "$WAYBILL/api/v1/runs/py-1/logs?after=120&limit=100"': async (c, context) => {
    // A program's run: python-agent, which a worker given the dashboard's address serves.
    await work(
      context,
      { 'py-1': 'completed' },
      () => arrange(context, 'POST', '/api/v1/runs', { workflow: 'python-agent', id: 'py-1', input: { steps: 3 } }),
      background(context.terminal, 'npx waybill worker --url http://127.0.0.1:3000'),
    );
    expect(Object.keys(await curl(context, c))).toEqual(expect.arrayContaining(['lines', 'next', 'more']));
  },
  'curl -H "$AUTH" "$WAYBILL/api/v1/runs/nightly-7/steps/37"': async (c, context) => {
    const answer = await curl(context, c);
    expect(answer).toMatchObject({ key: 'nightly-7:step:37', status: 'committed' });
    expect(Object.keys(answer)).toEqual(expect.arrayContaining(['attempts', 'history', 'events', 'priorProgress']));
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/nightly-7/rerun" -d '{"fromStep": 37, "reason": "wrong answer"}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer).toMatchObject({ run: { id: 'nightly-7', status: 'queued' }, fromStep: 37 });
      expect(Object.keys(answer)).toEqual(expect.arrayContaining(['moved', 'rerun', 'state', 'stateStep']));
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/nightly-7/fork" -d '{"fromStep": 10, "id": "nightly-7-b"}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer).toMatchObject({ run: { id: 'nightly-7-b' }, copied: 10, fromStep: 10 });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/nightly-7/budget" -d '{"budgetUsd": 10, "reason": "worth it"}'`]:
    async (c, context) => {
      expect(await curl(context, c)).toMatchObject({ run: { id: 'nightly-7', budgetUsd: 10 } });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/runs/nightly-7/signals/settled" -d '{"payload": {"id": "evt_1"}}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer.wait).toMatchObject({ name: 'settled', kind: 'signal' });
      // Twice: 409.
      const again = await ok(context.terminal, c);
      expect(JSON.parse(again.stdout).error.code).toBe('CONFLICT');
    },
  'curl -H "$AUTH" -X POST "$WAYBILL/api/v1/runs/nightly-7/pause"': async (c, context) => {
    expect(await curl(context, c)).toMatchObject({ run: { id: 'nightly-7', status: 'paused' } });
  },

  'curl -H "$AUTH" "$WAYBILL/api/v1/claims?orphaned=true&runId=run-42"': async (c, context) => {
    await orphan(context, 'run-42:step:12');
    const answer = await curl(context, c);
    expect(answer.claims.map((claim: Json) => [claim.key, claim.runId, claim.orphaned])).toEqual([
      ['run-42:step:12', 'run-42', true],
    ]);
    expect(answer.nextCursor).toBeNull();
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/claims/expire" -d '{"key": "run-42:step:12"}'`]: async (
    c,
    context,
  ) => {
    expect(await curl(context, c)).toMatchObject({ expired: true });
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/claims/resolve" -d '{"key": "run-42:step:12", "result": {"sent": true}, "note": "provider confirms"}'`]:
    async (c, context) => {
      await orphan(context, 'run-42:step:12');
      expect(await curl(context, c)).toMatchObject({ resolved: true });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/claims/sweep" -d '{}'`]: async (c, context) => {
    await orphan(context, 'run-42:step:13');
    expect(await curl(context, c)).toMatchObject({ expired: 1, keys: ['run-42:step:13'] });
  },

  'curl -H "$AUTH" "$WAYBILL/api/v1/checkpoint/run-42/progress"': async (c, context) => {
    expect((await curl(context, c)).error.code).toBe('NOT_FOUND');
  },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/checkpoint/claim" -d '{"runId": "run-42", "key": "run-42:step:7", "step": 7, "fingerprint": "sha256-of-input", "leaseMs": 30000}'`]:
    async (c, context) => {
      const answer = await curl(context, c);
      expect(answer).toMatchObject({ outcome: 'claimed', attempt: 1, tookOver: false });
      protocolToken = answer.token;
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/checkpoint/renew" -d '{"key": "run-42:step:7", "token": "…", "leaseMs": 30000}'`]:
    async (c, context) => {
      expect(await curl(context, withToken(c))).toMatchObject({ key: 'run-42:step:7', renewed: true });
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/checkpoint/release" -d '{"key": "run-42:step:7", "token": "…", "error": "HTTP 500 from the model"}'`]:
    async (c, context) => {
      await curl(context, withToken(c));
      // Claimed again, for the commit below.
      const again = await arrange(context, 'POST', '/api/v1/checkpoint/claim', {
        runId: 'run-42',
        key: 'run-42:step:7',
        step: 7,
        fingerprint: 'sha256-of-input',
      });
      expect(again.outcome).toBe('claimed');
      protocolToken = again.token;
    },
  [`curl -H "$AUTH" -H "$JSON" -X POST "$WAYBILL/api/v1/checkpoint/commit" -d '{"runId": "run-42", "key": "run-42:step:7", "token": "…",
     "result": {"answer": 42}, "step": 7, "fingerprint": "sha256-of-input", "progress": {"step": 8, "state": {"processed": 8}},
     "input": {"prompt": "…"}}'`]: async (c, context) => {
    expect(await curl(context, withToken(c))).toEqual({ key: 'run-42:step:7', committed: true, run: null });
  },
  [`curl -H "$AUTH" -H "$JSON" -X PUT "$WAYBILL/api/v1/checkpoint/run-42/progress" -d '{"step": 8, "state": {"processed": 8}, "counters": {"skipped": 1}}'`]:
    async (c, context) => {
      await curl(context, c);
      const progress = await curl(context, 'curl -H "$AUTH" "$WAYBILL/api/v1/checkpoint/run-42/progress"');
      expect(progress).toMatchObject({ step: 8, state: { processed: 8 }, counters: { executed: 1, skipped: 1 } });
    },

  'WAYBILL_URL=$WAYBILL WAYBILL_TOKEN=$WAYBILL_OPERATOR_TOKEN RUN_ID=article-1 STEPS=20 python3 examples/article_loop.py':
    async (c, context) => {
      // Run from a checkout: its examples/ here, so that the loop's effects file lands in the temp directory.
      mkdirSync(join(context.terminal.cwd, 'examples'), { recursive: true });
      copyFileSync(join(ROOT, 'examples/article_loop.py'), join(context.terminal.cwd, 'examples/article_loop.py'));
      const out = await sh(context.terminal, c);
      expect(out.code, out.stderr).toBe(0);
      const committed = await arrange(context, 'GET', '/api/v1/runs/article-1/committed?limit=100');
      expect(committed.committed).toHaveLength(20);
    },
};
