/**
 * A concurrency or rate key read from an object or an array, refused at the edges over a real store (D3): POST
 * /api/v1/runs and /api/v1/schedules answer 400 naming the field, the limit and what was found; POST
 * /api/v1/events lists the subscribed start it refused; `waybill start`, `waybill schedule add` and `waybill emit`
 * say the same words (exit 2 for the first two), and `waybill worker` whose module declares a schedule with such an
 * input exits 2 before it opens the store. Nothing is written by any of them; a string key starts as ever. The
 * rule and the library's paths (children, reruns, the pick of old rows) are test/engine/limit-key-refusal.test.ts's.
 *
 * Used by limit-key.sqlite.test.ts and limit-key.postgres.test.ts, which give the database: the route handlers
 * read their store from the environment once the suite has set it, as in production.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicationsOf } from '../../lib/engine/publish';
import { WorkflowRegistry } from '../../lib/engine/workflow';
import { openStore } from '../../lib/store/index';
import { runCli } from '../cli/support';
import { type Answer, request } from '../support/http';
import { makeTempDir } from '../support/tmp';
import { writeModule } from '../workflows/user-module';

const OPERATOR = 'limitkey-operator-token-0123456789';
const VIEWER = 'limitkey-viewer-token-0123456789ab';
const must = 'must be a string, a number or a boolean';
const OBJECT = `is an object; percust's concurrency key ${must}`;
const ARRAY = `is an array; percust's concurrency key ${must}`;
const RATE = `is an object; percust's rate limit key ${must}`;

/** percust as a user's module declares it: keyed by customer, rated by provider.name, started by order.placed. */
const PERCUST = (schedules = '') => `
export const percust = defineWorkflow({
  name: 'percust',
  input: z.object({ customer: z.unknown().optional(), provider: z.unknown().optional() }),
  concurrency: { limit: 2, key: 'customer' },
  rateLimit: { limit: 100, period: 'second', key: 'provider.name' },
  on: ['order.placed'],
  ${schedules}
  async run() { return 1; },
});
`;

export interface Target {
  url: string;
  rows(sql: string): Promise<unknown[]>;
  close(): Promise<void>;
}

export function limitKeySuite(name: string, makeTarget: () => Promise<Target>) {
  describe(`a limit key that is an object or an array, at the edges on ${name}`, () => {
    const cache = globalThis as { waybillStore?: Promise<{ close(): Promise<void> }> };
    const dir = makeTempDir('waybill-limit-key-');
    let target: Target;
    let server: { url: string; close(): Promise<void> };

    beforeAll(async () => {
      target = await makeTarget();
      process.env.DATABASE_URL = target.url;
      process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR;
      process.env.WAYBILL_VIEWER_TOKEN = VIEWER;
      process.env.WAYBILL_SESSION_SECRET = 'limitkey-suite-session-secret-012';
      // Published as a worker of the module publishes it: the control plane has its row, not its code.
      const { loadWorkflowModule } = await import('../../lib/engine/publish');
      const registry = new WorkflowRegistry(await loadWorkflowModule(writeModule(dir.path, 'p.mjs', PERCUST())));
      const store = await openStore(target.url);
      await store.registerWorker({ id: 'w-pub', host: 'elsewhere', pid: 1 });
      await store.publishWorkflows('w-pub', publicationsOf(registry));
      await store.close();
      const { startRouteServer } = await import('../support/route-server');
      server = await startRouteServer();
    });
    afterAll(async () => {
      await server?.close();
      await (await cache.waybillStore?.catch(() => undefined))?.close();
      await target?.close();
      dir.remove();
    });

    const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
      request(server.url, method, path, OPERATOR, body);
    const written = async () =>
      JSON.stringify([
        await target.rows('SELECT id FROM runs ORDER BY id'),
        await target.rows('SELECT name FROM schedules ORDER BY name'),
        await target.rows('SELECT action, target FROM audit ORDER BY id'),
        await target.rows('SELECT id FROM workers ORDER BY id'),
      ]);
    const cli = (args: string[]) => runCli(['--db', target.url, ...args]);

    it('answers POST /api/v1/runs and /api/v1/schedules 400 naming it, lists the event start refused', async () => {
      const before = await written();
      const cases: [unknown, string, string][] = [
        [{ customer: { id: 1 } }, 'input.customer', OBJECT],
        [{ customer: ['a'] }, 'input.customer', ARRAY],
        [{ customer: 'acme', provider: { name: { id: 'openai' } } }, 'input.provider.name', RATE],
      ];
      for (const [input, field, problem] of cases) {
        const error = { code: 'INVALID_INPUT', message: `${field} ${problem}`, fields: { [field]: [problem] } };
        const started = await api('POST', '/api/v1/runs', { workflow: 'percust', input, id: 'r1' });
        expect([started.status, started.body.error]).toEqual([400, error]);
        const schedule = { name: 'nightly', workflow: 'percust', cron: '0 0 3 * * *', input };
        const added = await api('POST', '/api/v1/schedules', schedule);
        expect([added.status, added.body.error]).toEqual([400, error]);
      }
      expect(await written()).toBe(before);

      const sent = await api('POST', '/api/v1/events', { id: 'e1', name: 'order.placed', data: { customer: {} } });
      expect([sent.status, sent.body.runs, sent.body.refused]).toEqual([
        201,
        [],
        [{ workflow: 'percust', message: `input.customer ${OBJECT}` }],
      ]);
      expect(await target.rows('SELECT id FROM runs')).toEqual([]);

      // A string key starts as ever.
      const fine = await api('POST', '/api/v1/runs', { workflow: 'percust', input: { customer: 'acme' }, id: 'ok' });
      expect(fine.status, JSON.stringify(fine.body)).toBe(201);
    });

    it('`waybill start`, `schedule add` and `emit` say the same words; nothing is written', async () => {
      const before = await written();
      const [start, rated, add] = await Promise.all([
        cli(['start', 'percust', '--input', '{"customer":{"id":1}}']),
        cli(['start', 'percust', '--input', '{"provider":{"name":{"id":1}}}']),
        cli(['schedule', 'add', 'nightly', 'percust', '--cron', '0 0 3 * * *', '--input', '{"customer":[1]}']),
      ]);
      expect([start.code, start.stdout, start.stderr]).toEqual([2, '', `waybill start: input.customer ${OBJECT}\n`]);
      expect([rated.code, rated.stderr]).toEqual([2, `waybill start: input.provider.name ${RATE}\n`]);
      expect([add.code, add.stdout, add.stderr]).toEqual([2, '', `waybill schedule: input.customer: ${ARRAY}\n`]);
      expect(await written()).toBe(before);

      const emitted = await cli(['emit', 'order.placed', '--id', 'e2', '--data', '{"customer":{"id":2}}']);
      expect([emitted.code, emitted.stdout]).toEqual([
        0,
        `recorded event order.placed e2\n  not started: percust: input.customer ${OBJECT}\n`,
      ]);
      expect(await target.rows("SELECT id FROM runs WHERE id LIKE 'percust:event:%'")).toEqual([]);
    });

    it('stops `waybill worker` whose module declares a schedule with such an input, before it opens the store', async () => {
      const before = await written();
      const path = writeModule(
        dir.path,
        'declared.mjs',
        PERCUST(`schedules: [{ name: 'nightly', cron: '0 0 3 * * *', input: { customer: { id: 1 } } }],`),
      );
      // Killed after 30 s: a `waybill worker` that does not refuse serves until stopped, and the test is to fail then.
      const worker = await runCli(['--db', target.url, 'worker', '--workflows', path], { timeoutMs: 30_000 });
      expect([worker.code, worker.stdout, worker.stderr]).toEqual([
        2,
        '',
        `waybill worker: workflow "percust": schedule "nightly": input.customer ${OBJECT}\n`,
      ]);
      expect(await written()).toBe(before);
    });
  });
}
