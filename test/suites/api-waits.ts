/**
 * Approvals and signals over real HTTP (the route handlers on a real port, a real worker in process), on one
 * real store: an operator's approval delivers review-and-send's message exactly once; a viewer's approval, a
 * cross-site one and a second decision are refused with nothing written; two decisions at one instant: one
 * wins, the other is told who did; the runs list filters by what a run waits for, and refuses a bad filter
 * naming it.
 *
 * Used by test/api/waits.sqlite.test.ts and waits.postgres.test.ts, which give the database: the server's
 * store and configuration are read from the environment once the suite has set it, as in production.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../lib/engine/worker';
import { builtinRegistry } from '../../lib/engine/workflows';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import type { Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { until } from '../support/until';

const OPERATOR = 'waits-operator-token-0123456789ab';
const VIEWER = 'waits-viewer-token-0123456789abcd';

/** `rows`: a query's rows as another client reads them (a stable order is the query's to give). */
export interface Target {
  url: string;
  rows(sql: string): Promise<unknown[]>;
  close(): Promise<void>;
}

export function waitsApiSuite(name: string, makeTarget: () => Promise<Target>) {
  describe(`approvals and signals over HTTP on ${name}`, () => {
    const dir = makeTempDir('waybill-api-waits-');
    const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
    let target: Target;
    let server: { url: string; close(): Promise<void> };
    let store: Store;
    let worker: Worker;
    let working: Promise<void>;

    beforeAll(async () => {
      target = await makeTarget();
      process.env.DATABASE_URL = target.url;
      process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
      process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
      process.env.WAYBILL_SESSION_SECRET = 'waits-suite-session-secret-01234';
      process.env.WAYBILL_MAX_WAITS_PER_RUN = '2';
      const { startRouteServer } = await import('../support/route-server');
      server = await startRouteServer();
      store = await openStore(target.url, { synchronous: 'normal' });
      worker = new Worker({ store, registry: builtinRegistry({ dataDir: dir.path }), pollMs: 20, heartbeatMs: 100 });
      working = worker.run();
    });
    afterAll(async () => {
      worker?.stop();
      await working;
      await store?.close();
      await server?.close();
      await (await cache.waybillStore?.catch(() => undefined))?.close();
      await target?.close();
      dir.remove();
      delete process.env.WAYBILL_MAX_WAITS_PER_RUN;
    });

    const api = (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> =>
      request(server.url, method, path, token, body);

    const statusOf = async (id: string) => (await store.getRun(id))?.status;
    const written = async () =>
      JSON.stringify([
        await target.rows('SELECT * FROM waits ORDER BY run_id, name'),
        await target.rows('SELECT * FROM audit ORDER BY id'),
        await target.rows('SELECT id, status FROM runs ORDER BY id'),
      ]);

    /** A run of a workflow no worker serves, parked at an approval as a worker would have left it. */
    async function parkedApproval(id: string, wait = 'review') {
      await store.createRun({ id, workflow: 'nobody-serves', inputJson: '{}', totalSteps: null });
      const taken = await store.claimRun({
        workerId: 'seeder',
        leaseMs: 60_000,
        workflows: ['nobody-serves'],
        runId: id,
      });
      await store.recordWait({ runId: id, name: wait, kind: 'approval', detailsJson: '{"message":"hi"}' });
      expect(await store.parkRun(id, 'approval', wait, 'seeder', taken!.attempts)).toBe('parked');
    }

    it('approves once: the message is delivered exactly once; viewer, cross-site and second decisions are refused', async () => {
      const started = await api('POST', '/api/v1/runs', OPERATOR, {
        workflow: 'review-and-send',
        input: {},
        id: 'api-send',
      });
      expect(started.status).toBe(201);
      await until('the run to wait', async () => (await statusOf('api-send')) === 'waiting', { intervalMs: 20 });

      const detail = await api('GET', '/api/v1/runs/api-send', VIEWER);
      expect(detail.body.run.status).toBe('waiting');
      expect(detail.body.waits).toHaveLength(1);
      expect(detail.body.waits[0]).toMatchObject({ name: 'review', kind: 'approval', decidedAt: null, dueAt: null });
      expect(detail.body.waits[0].details.message).toMatch(/^summary of/);

      const before = await written();
      const viewer = await api('POST', '/api/v1/runs/api-send/approvals/review', VIEWER, { approve: true });
      expect([viewer.status, viewer.body.error.code]).toEqual([403, 'FORBIDDEN']);
      const crossSite = await fetch(`${server.url}/api/v1/runs/api-send/approvals/review`, {
        method: 'POST',
        body: JSON.stringify({ approve: true }),
        headers: {
          authorization: `Bearer ${OPERATOR}`,
          'content-type': 'application/json',
          origin: 'http://evil.example',
          'sec-fetch-site': 'cross-site',
        },
      });
      expect(crossSite.status).toBe(403);
      const unknown = await api('POST', '/api/v1/runs/api-send/approvals/nope', OPERATOR, { approve: true });
      expect(unknown.status).toBe(404);
      const bad = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, { approve: 'yes' });
      expect([bad.status, Object.keys(bad.body.error.fields)]).toEqual([400, ['approve']]);
      const rejectNoNote = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, { approve: false });
      expect([rejectNoNote.status, Object.keys(rejectNoNote.body.error.fields)]).toEqual([400, ['note']]);
      expect(await written()).toBe(before);

      const approved = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, {
        approve: true,
        note: 'ok by me',
      });
      expect(approved.status).toBe(200);
      expect(approved.body.wait).toMatchObject({
        decision: { approved: true },
        decidedBy: 'operator token (api)',
        note: 'ok by me',
      });
      const afterApproval = await written();
      const again = await api('POST', '/api/v1/runs/api-send/approvals/review', OPERATOR, {
        approve: false,
        note: 'changed my mind',
      });
      expect([again.status, again.body.error.code]).toEqual([409, 'CONFLICT']);

      await until('the run to complete', async () => (await statusOf('api-send')) === 'completed', { intervalMs: 20 });
      const outbox = readOutbox(dir.file('review-and-send.jsonl'));
      expect([outbox.delivered, outbox.duplicates, [...outbox.byKey.keys()]]).toEqual([1, 0, ['api-send:send']]);
      expect(
        await target.rows("SELECT action, target, detail FROM audit WHERE action IN ('approve', 'reject') ORDER BY id"),
      ).toEqual([{ action: 'approve', target: 'api-send/review', detail: 'ok by me' }]);
      // The refused second decision wrote nothing: the waits and the audit are as the approval left them.
      const [waitsNow, auditNow] = JSON.parse(await written()) as unknown[];
      const [waitsThen, auditThen] = JSON.parse(afterApproval) as unknown[];
      expect([waitsNow, auditNow]).toEqual([waitsThen, auditThen]);
    });

    /** A signed-in operator's decision, as the dashboard's browser sends it (session cookie, same origin). */
    async function decideAs(person: string, runId: string, body: object): Promise<Answer> {
      const { config } = await import('../../lib/config');
      const { SESSION_COOKIE, signSession } = await import('../../lib/auth/session');
      const cookie = signSession(config(), { role: 'operator', name: person }, Date.now()).value;
      const response = await fetch(`${server.url}/api/v1/runs/${runId}/approvals/review`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: {
          cookie: `${SESSION_COOKIE}=${cookie}`,
          'content-type': 'application/json',
          origin: server.url,
          'sec-fetch-site': 'same-origin',
        },
      });
      return { status: response.status, body: await response.json() };
    }

    it('two operators deciding at one instant, ten times: one wins, the other is told who did; only the winner is written', async () => {
      const ids = Array.from({ length: 10 }, (_, i) => `race-${i}`);
      for (const id of ids) await parkedApproval(id);
      for (const id of ids) {
        const [ann, bob] = await Promise.all([
          decideAs('ann', id, { approve: true, note: 'ship it' }),
          decideAs('bob', id, { approve: false, note: 'wrong amount' }),
        ]);
        expect([ann!.status, bob!.status].sort()).toEqual([200, 409]);
        const annWon = ann!.status === 200;
        const [winner, loser] = annWon ? ['ann', bob!] : ['bob', ann!];
        expect(loser.body.error).toMatchObject({
          code: 'CONFLICT',
          message: `wait review of run ${id} was already decided by ${winner} (operator); nothing was changed`,
        });
        const wait = (await store.getWait(id, 'approval', 'review'))!;
        expect([wait.decidedBy, wait.note, JSON.parse(wait.decisionJson!)]).toEqual(
          annWon
            ? ['ann (operator)', 'ship it', { approved: true }]
            : ['bob (operator)', 'wrong amount', { approved: false }],
        );
        expect(await target.rows(`SELECT actor, action, detail FROM audit WHERE run_id = '${id}' ORDER BY id`)).toEqual(
          [
            annWon
              ? { actor: 'ann (operator)', action: 'approve', detail: 'ship it' }
              : { actor: 'bob (operator)', action: 'reject', detail: 'wrong amount' },
          ],
        );
        expect(await statusOf(id)).toBe('queued');
      }
    });

    it('lists runs by what they wait for (?waiting=), and refuses a bad filter naming it, changing nothing', async () => {
      await parkedApproval('list-ask');
      const listed = await api('GET', '/api/v1/runs?waiting=approval&limit=500', VIEWER);
      expect(listed.status).toBe(200);
      const ids: string[] = listed.body.runs.map((r: { id: string }) => r.id);
      expect(ids).toContain('list-ask');
      expect(listed.body.runs.every((r: { status: string }) => r.status === 'waiting')).toBe(true);
      const both = await api('GET', '/api/v1/runs?waiting=approval&status=waiting&q=list-ask', VIEWER);
      expect(both.body.runs.map((r: { id: string }) => r.id)).toEqual(['list-ask']);
      expect((await api('GET', '/api/v1/runs?waiting=signal&q=list-ask', VIEWER)).body.runs).toEqual([]);

      const before = await written();
      const badKind = await api('GET', '/api/v1/runs?waiting=human', VIEWER);
      expect([badKind.status, badKind.body.error.fields]).toEqual([
        400,
        { waiting: ['must be one of approval, signal, sleep, child, event'] },
      ]);
      const contradiction = await api('GET', '/api/v1/runs?waiting=approval&status=queued', VIEWER);
      expect([contradiction.status, contradiction.body.error.fields]).toEqual([
        400,
        { waiting: ['lists waiting runs only: leave status out, or make it waiting'] },
      ]);
      const twice = await api('GET', '/api/v1/runs?waiting=approval&waiting=signal', VIEWER);
      expect([twice.status, Object.keys(twice.body.error.fields)]).toEqual([400, ['waiting']]);
      const bulk = await api('POST', '/api/v1/runs/bulk', OPERATOR, {
        action: 'cancel',
        filter: { waiting: 'human' },
      });
      expect([bulk.status, bulk.body.error.fields]).toEqual([
        400,
        { 'filter.waiting': ['must be one of approval, signal, sleep, child, event'] },
      ]);
      expect(await written()).toBe(before);
    });

    it('a signal over the API is kept for a run that has not reached its wait, and a second is 409', async () => {
      expect((await api('POST', '/api/v1/runs/nobody/signals/go', OPERATOR, { payload: 1 })).status).toBe(404);
      await store.createRun({ id: 'sig-run', workflow: 'no-such-workflow', inputJson: '{}', totalSteps: null });
      const sent = await api('POST', '/api/v1/runs/sig-run/signals/go', OPERATOR, { payload: { n: 1 } });
      expect([sent.status, sent.body.wait.decision]).toEqual([200, { payload: { n: 1 } }]);
      const twice = await api('POST', '/api/v1/runs/sig-run/signals/go', OPERATOR, { payload: { n: 2 } });
      expect(twice.status).toBe(409);
      expect((await store.getWait('sig-run', 'signal', 'go'))!.decisionJson).toBe('{"payload":{"n":1}}');
      expect((await api('POST', '/api/v1/runs/sig-run/signals/go', VIEWER, { payload: 3 })).status).toBe(403);
    });

    it('refuses a signal that would give a run more than WAYBILL_MAX_WAITS_PER_RUN waits (413), writing nothing', async () => {
      await store.createRun({ id: 'sig-many', workflow: 'no-such-workflow', inputJson: '{}', totalSteps: null });
      for (const n of ['a', 'b']) {
        expect((await api('POST', `/api/v1/runs/sig-many/signals/${n}`, OPERATOR, { payload: n })).status).toBe(200);
      }
      const before = await written();
      const third = await api('POST', '/api/v1/runs/sig-many/signals/c', OPERATOR, { payload: 'c' });
      expect([third.status, third.body.error]).toEqual([
        413,
        {
          code: 'PAYLOAD_TOO_LARGE',
          message:
            'run sig-many holds 2 waits, the most a run may hold (WAYBILL_MAX_WAITS_PER_RUN); signal c was not sent; nothing was written',
        },
      ]);
      expect(await written()).toBe(before);
    });
  });
}
