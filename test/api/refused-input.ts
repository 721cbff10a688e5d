/**
 * Input no store can keep as given, over real HTTP (the route handlers on a real port) on one real store: a NUL
 * (PostgreSQL's text refuses it with 22021, a 500 until it was checked at the edge; SQLite kept it), an
 * unpaired surrogate (no UTF-8 form: both stores kept U+FFFD instead), a step number past PostgreSQL's integer,
 * a metadata key `__proto__` (dropped by the parser, so the run started without it), and a pause or resume that
 * changes nothing (it wrote an audit line for an action that did not take effect), and a run's input holding a NUL
 * or an unpaired surrogate (stored as JSON escapes, but on PostgreSQL every pick of its workflow then failed, its
 * limits' key being read from the input as JSON). Each is a 4xx naming the field, and nothing is written.
 *
 * Used by refused-input.sqlite.test.ts and refused-input.postgres.test.ts, which give the database: the
 * server's store and configuration are read from the environment once the suite has set it, as in production.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunLimits } from '../../lib/domain/run-limits';
import { openStore } from '../../lib/store/index';
import { type Answer, request } from '../support/http';

const OPERATOR = 'refused-operator-token-0123456789';
const VIEWER = 'refused-viewer-token-0123456789ab';
const NUL = '\u0000';
const LONE = '\ud800';
/** Cursors shaped like the API's (runs, committed, claims) whose strings hold a NUL: `[1,"a\u0000"]` and so on. */
const NUL_CURSORS = {
  runs: Buffer.from(JSON.stringify([1, `a${NUL}`])).toString('base64url'),
  committed: Buffer.from(JSON.stringify(['k', `a${NUL}`])).toString('base64url'),
  claims: Buffer.from(JSON.stringify(['c', 1, `a${NUL}`])).toString('base64url'),
};

/** `rows`: a query's rows as another client reads them (a stable order is the query's to give). */
export interface Target {
  url: string;
  rows(sql: string): Promise<unknown[]>;
  close(): Promise<void>;
}

export function refusedInputSuite(name: string, makeTarget: () => Promise<Target>) {
  describe(`input no store can keep, over HTTP on ${name}`, () => {
    const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
    let target: Target;
    let server: { url: string; close(): Promise<void> };

    beforeAll(async () => {
      target = await makeTarget();
      process.env.DATABASE_URL = target.url;
      process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
      process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
      process.env.WAYBILL_SESSION_SECRET = 'refused-suite-session-secret-0123';
      const { startRouteServer } = await import('../support/route-server');
      server = await startRouteServer();
      const started = await api('POST', '/api/v1/runs', OPERATOR, {
        workflow: 'agent-batch',
        input: { count: 1 },
        id: 'r1',
      });
      expect(started.status, JSON.stringify(started.body)).toBe(201);
    });
    afterAll(async () => {
      await server?.close();
      await (await cache.waybillStore?.catch(() => undefined))?.close();
      await target?.close();
    });

    const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
      request(server.url, method, path, token, body);
    /** Status and named fields, what a client reads to fix its request. */
    const refusal = async (method: string, path: string, body?: unknown) => {
      const answer = await api(method, path, OPERATOR, body);
      return { status: answer.status, fields: answer.body?.error?.fields };
    };
    const written = async () =>
      JSON.stringify([
        await target.rows('SELECT id, status FROM runs ORDER BY id'),
        await target.rows('SELECT * FROM schedules ORDER BY name'),
        await target.rows('SELECT * FROM webhooks ORDER BY id'),
        await target.rows('SELECT * FROM claims ORDER BY idem_key'),
        await target.rows('SELECT action, target, detail FROM audit ORDER BY id'),
      ]);
    const hook = { url: 'https://hooks.example.com/waybill', events: ['run.failed'] };
    const nul = ['must not contain NUL characters'];
    const lone = ['must not contain an unpaired surrogate (it is not valid UTF-16, so it has no UTF-8 form to store)'];

    it('refuses a NUL in a webhook, a name, an id, a token or a cursor: 400 naming it, nothing written', async () => {
      const before = await written();
      expect(await refusal('POST', '/api/v1/webhooks', { ...hook, url: `${hook.url}${NUL}` })).toEqual({
        status: 400,
        fields: { url: nul },
      });
      expect(await refusal('POST', '/api/v1/webhooks', { ...hook, secret: `${'s'.repeat(16)}${NUL}` })).toEqual({
        status: 400,
        fields: { secret: nul },
      });
      expect(await refusal('POST', '/api/v1/schedules/%00/pause')).toEqual({ status: 400, fields: { name: nul } });
      expect(await refusal('DELETE', '/api/v1/schedules/%00')).toEqual({ status: 400, fields: { name: nul } });
      expect(await refusal('POST', '/api/v1/webhooks/%00/pause')).toEqual({ status: 400, fields: { id: nul } });
      expect(await refusal('DELETE', '/api/v1/webhooks/%00')).toEqual({ status: 400, fields: { id: nul } });
      expect(await refusal('POST', '/api/v1/webhooks/deliveries/%00/resend')).toEqual({
        status: 400,
        fields: { id: nul },
      });
      expect(await refusal('GET', '/api/v1/webhooks/deliveries?webhookId=%00')).toEqual({
        status: 400,
        fields: { webhookId: nul },
      });
      expect(await refusal('POST', '/api/v1/checkpoint/renew', { key: 'r1:step:0', token: `a${NUL}` })).toEqual({
        status: 400,
        fields: { token: nul },
      });
      expect(
        await refusal('POST', '/api/v1/checkpoint/commit', {
          runId: 'r1',
          key: 'r1:step:0',
          token: `a${NUL}`,
          result: 1,
        }),
      ).toEqual({ status: 400, fields: { token: nul } });
      // A forged cursor is refused as every cursor this API did not write is.
      const notOurs = { status: 400, fields: { cursor: ['not a cursor this API returned'] } };
      expect(await refusal('GET', `/api/v1/runs?cursor=${NUL_CURSORS.runs}`)).toEqual(notOurs);
      expect(await refusal('GET', `/api/v1/runs/r1/committed?cursor=${NUL_CURSORS.committed}`)).toEqual(notOurs);
      expect(await refusal('GET', `/api/v1/claims?cursor=${NUL_CURSORS.claims}`)).toEqual(notOurs);
      expect(await written()).toBe(before);
    });

    it('refuses a step number past 2^31 in the path with 400, as bodies do', async () => {
      expect(await refusal('GET', '/api/v1/runs/r1/steps/2147483648')).toEqual({
        status: 400,
        fields: { n: ['must be < 2^31'] },
      });
      expect((await api('GET', '/api/v1/runs/r1/steps/2147483647', VIEWER)).status).toBe(404);
    });

    it('refuses an unpaired surrogate in metadata, a reason or a secret, and a metadata key __proto__', async () => {
      const before = await written();
      const start = (extra: Record<string, unknown>) =>
        refusal('POST', '/api/v1/runs', { workflow: 'agent-batch', input: { count: 1 }, id: 'r2', ...extra });
      expect(await start({ metadata: { k: `x${LONE}y` } })).toEqual({ status: 400, fields: { 'metadata.k': lone } });
      expect(await start({ metadata: JSON.parse('{"__proto__":"x","ok":"y"}') })).toEqual({
        status: 400,
        fields: { 'metadata.__proto__': ['letters, digits and . _ - only, starting with a letter or digit'] },
      });
      expect(await refusal('POST', '/api/v1/runs/r1/cancel', { reason: `why${LONE}` })).toEqual({
        status: 400,
        fields: { reason: lone },
      });
      expect(await refusal('POST', '/api/v1/webhooks', { ...hook, secret: `${'s'.repeat(16)}${LONE}` })).toEqual({
        status: 400,
        fields: { secret: lone },
      });
      expect(await written()).toBe(before);
    });

    it("refuses an unpaired surrogate in a protocol client's error or model, a resolve's note, an approval's note", async () => {
      expect((await api('POST', '/api/v1/checkpoint/c1/begin', OPERATOR, { workflow: 'client' })).status).toBe(200);
      const claimed = await api('POST', '/api/v1/checkpoint/claim', OPERATOR, {
        runId: 'c1',
        key: 'c1:step:0',
        step: 0,
      });
      expect(claimed.body.outcome).toBe('claimed');
      const { token } = claimed.body;
      const held = async () =>
        JSON.stringify([
          await written(),
          await target.rows('SELECT * FROM step_events ORDER BY id'),
          await target.rows('SELECT * FROM model_calls ORDER BY idem_key'),
        ]);
      const before = await held();
      // Each was kept with U+FFFD in place of the surrogate: what was read back was not what was sent.
      expect(
        await refusal('POST', '/api/v1/checkpoint/usage', {
          runId: 'c1',
          key: 'c1:step:0',
          token,
          n: 0,
          model: `gpt${LONE}`,
          inputTokens: 1,
          outputTokens: 1,
        }),
      ).toEqual({ status: 400, fields: { model: lone } });
      expect(
        await refusal('POST', '/api/v1/checkpoint/release', { key: 'c1:step:0', token, error: `boom${LONE}` }),
      ).toEqual({ status: 400, fields: { error: lone } });
      expect(
        await refusal('POST', '/api/v1/claims/resolve', { key: 'c1:step:0', result: 1, force: true, note: `n${LONE}` }),
      ).toEqual({ status: 400, fields: { note: lone } });
      expect(await refusal('POST', '/api/v1/checkpoint/c1/end', { outcome: 'failed', error: `boom${LONE}` })).toEqual({
        status: 400,
        fields: { error: lone },
      });
      expect(await refusal('POST', '/api/v1/runs/r1/approvals/review', { approve: false, note: `no${LONE}` })).toEqual({
        status: 400,
        fields: { note: lone },
      });
      expect(await held()).toBe(before);
      // The claim is still the client's: the same calls with text a store keeps go through.
      expect((await api('POST', '/api/v1/checkpoint/release', OPERATOR, { key: 'c1:step:0', token })).status).toBe(200);
    });

    it('refuses a signal without its payload naming payload, not in zod’s words; null is a payload', async () => {
      const before = await written();
      const missing = await api('POST', '/api/v1/runs/r1/signals/go', OPERATOR, {});
      expect([missing.status, missing.body.error]).toEqual([
        400,
        { code: 'INVALID_INPUT', message: 'invalid body: payload: is required', fields: { payload: ['is required'] } },
      ]);
      const misspelt = await api('POST', '/api/v1/runs/r1/signals/go', OPERATOR, { paylaod: 1 });
      expect([misspelt.status, misspelt.body.error.fields]).toEqual([
        400,
        { paylaod: ['is not a known field'], payload: ['is required'] },
      ]);
      expect(await written()).toBe(before);
      expect((await api('POST', '/api/v1/runs/r1/signals/go', OPERATOR, { payload: null })).status).toBe(200);
    });

    it('answers a pause or resume that changes nothing 409 INVALID_TRANSITION, as runs do, unaudited', async () => {
      const schedule = { name: 'nightly', workflow: 'agent-batch', cron: '0 0 3 * * *', input: { count: 1 } };
      expect((await api('POST', '/api/v1/schedules', OPERATOR, schedule)).status).toBe(201);
      const added = await api('POST', '/api/v1/webhooks', OPERATOR, hook);
      const id = added.body.webhook.id as string;
      const act = async (path: string) => {
        const answer = await api('POST', path, OPERATOR);
        return [answer.status, answer.body.error?.code ?? null, answer.body.error?.message ?? null];
      };
      expect(await act('/api/v1/schedules/nightly/resume')).toEqual([
        409,
        'INVALID_TRANSITION',
        'cannot resume schedule nightly: it is not paused',
      ]);
      expect(await act('/api/v1/schedules/nightly/pause')).toEqual([200, null, null]);
      expect(await act('/api/v1/schedules/nightly/pause')).toEqual([
        409,
        'INVALID_TRANSITION',
        'cannot pause schedule nightly: it is paused already',
      ]);
      expect(await act('/api/v1/schedules/nightly/resume')).toEqual([200, null, null]);
      expect(await act(`/api/v1/webhooks/${id}/resume`)).toEqual([
        409,
        'INVALID_TRANSITION',
        `cannot resume webhook ${id}: it is not paused`,
      ]);
      expect(await act(`/api/v1/webhooks/${id}/pause`)).toEqual([200, null, null]);
      expect(await act(`/api/v1/webhooks/${id}/pause`)).toEqual([
        409,
        'INVALID_TRANSITION',
        `cannot pause webhook ${id}: it is paused already`,
      ]);
      expect((await api('POST', '/api/v1/webhooks/wh_nope/pause', OPERATOR)).status).toBe(404);
      expect(
        await target.rows(
          "SELECT action, target FROM audit WHERE action LIKE 'schedule%' OR action LIKE 'webhook%' ORDER BY id",
        ),
      ).toEqual([
        { action: 'schedule-add', target: 'nightly' },
        { action: 'webhook-add', target: id },
        { action: 'schedule-pause', target: 'nightly' },
        { action: 'schedule-resume', target: 'nightly' },
        { action: 'webhook-pause', target: id },
      ]);
    });

    it('refuses a run whose input holds a NUL or an unpaired surrogate, its limits key or any field: 400, nothing written', async () => {
      const limits: RunLimits = {
        concurrency: { limit: 1, key: 'customer' },
        rateLimit: { limit: 5, periodMs: 1000, key: 'customer' },
      };
      const store = await openStore(target.url);
      try {
        await store.registerWorker({ id: 'w-limits', host: 'h', pid: 1, slots: 4 });
        const inputSchemaJson = JSON.stringify({
          type: 'object',
          properties: { customer: { type: 'string' }, note: { type: 'string' } },
          required: ['customer'],
        });
        await store.publishWorkflows('w-limits', [
          { name: 'per-customer', description: null, inputSchemaJson, totalSteps: 1, version: null, limits },
        ]);
        const before = await written();
        const start = (input: unknown) =>
          refusal('POST', '/api/v1/runs', { workflow: 'per-customer', input, id: 'poison' });
        expect(await start({ customer: `acme${NUL}` })).toEqual({ status: 400, fields: { 'input.customer': nul } });
        expect(await start({ customer: `acme${LONE}` })).toEqual({ status: 400, fields: { 'input.customer': lone } });
        expect(await start({ customer: 'acme', note: `a${NUL}b` })).toEqual({
          status: 400,
          fields: { 'input.note': nul },
        });
        // An outside client's run of that name writes its input too: the same rule.
        expect(
          await refusal('POST', '/api/v1/checkpoint/c2/begin', { workflow: 'per-customer', input: { customer: LONE } }),
        ).toEqual({ status: 400, fields: { 'input.customer': lone } });
        expect(await written()).toBe(before);
        // The workflow's runs are still started and picked, under its limits.
        const fine = await api('POST', '/api/v1/runs', OPERATOR, {
          workflow: 'per-customer',
          input: { customer: 'acme' },
          id: 'fine',
        });
        expect(fine.status, JSON.stringify(fine.body)).toBe(201);
        const picked = await store.claimRun({
          workerId: 'w-limits',
          leaseMs: 60_000,
          workflows: ['per-customer'],
          limits: { 'per-customer': limits },
        });
        expect(picked?.id).toBe('fine');
      } finally {
        await store.close();
      }
    });
  });
}
