/**
 * A Next.js app of the user's own, outside the repository, with `waybill` installed from its tarball
 * (./pack.ts) and `next` from the registry (npm's cache first) at the repository's version: a route handler and
 * a server action import `waybill`, `next build` passes, and requests to the running app checkpoint their
 * steps in a SQLite file: every step once, and again a skip. The app has no next.config: Next bundles waybill
 * (its migrations inside its JavaScript) and leaves better-sqlite3 and pg, on its own list, to node_modules, as
 * README's "Install as a package" tells a Next.js user.
 *
 * The same app holds the files of docs/in-your-project.md's "In a Next.js app" (its blocks tagged
 * `js next-app:<file>`, read from the page, so the two cannot drift): a route handler and a server action that
 * start runs with `waybill/engine`. That import brings the bundle's lazy import() of the OpenTelemetry packages,
 * optional peers Turbopack resolved at build time ("Module not found: Can't resolve '@opentelemetry/core'"):
 * the app is built without them, as a project that never installed them is, then served with them installed and
 * tracing configured, and a worker inside the app runs a started run whose spans reach an OTLP receiver.
 *
 * It is built without better-sqlite3 too, as a project on PostgreSQL may be (an optional dependency: npm drops it
 * when its native build fails, `--omit=optional` leaves it out): the static imports of it in the bundle failed
 * `next build` with "Module not found: Can't resolve 'better-sqlite3'". The same build then serves SQLite with it
 * installed, and without it starts and works a run on PostgreSQL and says what to install for a SQLite URL.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver';
import { postgresAvailable, testSchema } from '../support/postgres';
import { until } from '../support/until';
import { type Consumer, cleanEnv, makeConsumer, must, ROOT, run, SQLITE_INSTALL } from './consumer';
import { packBoth } from './pack';

/** What docs/operations.md's Tracing section installs; prom-client brings @opentelemetry/api in any case. */
const OTEL = [
  '@opentelemetry/api',
  '@opentelemetry/core',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/semantic-conventions',
];
const SDK = OTEL.filter((name) => name !== '@opentelemetry/api');

/** The files of docs/in-your-project.md's "In a Next.js app": its blocks tagged `js next-app:<file>`. */
function docsFiles(): Record<string, string> {
  const page = readFileSync(join(ROOT, 'docs', 'in-your-project.md'), 'utf8');
  const start = page.indexOf('\n## In a Next.js app\n');
  if (start < 0) throw new Error('docs/in-your-project.md has no "## In a Next.js app" section');
  const end = page.indexOf('\n## ', start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  return Object.fromEntries(
    [...section.matchAll(/^```js next-app:(\S+)\n([\s\S]*?)^```$/gm)].map((m) => [m[1]!, m[2]!]),
  );
}

const LAYOUT = `export default function RootLayout({ children }) {
  return <html lang="en"><body>{children}</body></html>;
}
`;

const ROUTE = `import { Checkpoint, openStore, runAgent } from 'waybill';

export const dynamic = 'force-dynamic';

export async function POST(request) {
  const { run, items } = await request.json();
  const store = await openStore(process.env.CONSUMER_DATABASE_URL);
  try {
    const checkpoint = new Checkpoint(store, run, { workerId: 'next-route', leaseMs: 30_000 });
    const list = Array.from({ length: items }, (_, i) => i);
    const report = await runAgent(list, checkpoint, async (item, { idempotencyKey }) => ({ item, idempotencyKey }));
    return Response.json(report);
  } finally {
    await store.close();
  }
}
`;

const ACTIONS = `'use server';
import { Checkpoint, openStore, stepKey } from 'waybill';

export async function checkpointOnce(run) {
  const store = await openStore(process.env.CONSUMER_DATABASE_URL);
  try {
    const checkpoint = new Checkpoint(store, run, { workerId: 'next-action', leaseMs: 30_000 });
    const { status } = await checkpoint.runOnce(stepKey(run, 0), () => 'from the action');
    return status;
  } finally {
    await store.close();
  }
}
`;

const PAGE = `import { checkpointOnce } from './actions';

export default function Page() {
  return <form action={checkpointOnce.bind(null, 'form-run')}><button type="submit">checkpoint</button></form>;
}
`;

/** Not in the docs: the test's worker, inside the app until one run has ended, so its spans come from Next's bundle. */
const WORK_ROUTE = `import { Worker } from 'waybill/engine';
import { registry, waybillStore } from '../../../lib/waybill.js';

export async function POST(request) {
  const { id } = await request.json();
  const store = await waybillStore();
  const worker = new Worker({ store, registry, onlyRun: id, webhooks: false, pollMs: 50 });
  const working = worker.run();
  let run = await store.getRun(id);
  for (let i = 0; i < 600 && run?.status !== 'completed' && run?.status !== 'failed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    run = await store.getRun(id);
  }
  worker.stop();
  await working;
  return Response.json({ status: run?.status, output: JSON.parse(run?.outputJson ?? 'null') });
}
`;

/** The page that makes the docs' server action part of the build. */
const RUNS_PAGE = `import { startGreeting } from './actions';

export default function Page() {
  return <form action={startGreeting.bind(null, 'form')}><button type="submit">greet</button></form>;
}
`;

let consumer: Consumer;
let receiver: OtlpReceiver | null = null;
const servers: Served[] = [];
const pgUp = await postgresAvailable('Next.js consumer (a PostgreSQL-only app without better-sqlite3)');

beforeAll(async () => {
  const { waybill } = await packBoth();
  const next = (JSON.parse(readFileSync(`${ROOT}/node_modules/next/package.json`, 'utf8')) as { version: string })
    .version;
  const react = (JSON.parse(readFileSync(`${ROOT}/node_modules/react/package.json`, 'utf8')) as { version: string })
    .version;
  const otel = OTEL.map((name) => `${name}@${version(name)}`);
  consumer = await makeConsumer([waybill.tarball, `next@${next}`, `react@${react}`, `react-dom@${react}`, ...otel]);
  consumer.write('app/layout.js', LAYOUT);
  consumer.write('app/page.js', PAGE);
  consumer.write('app/actions.js', ACTIONS);
  consumer.write('app/api/agent/route.js', ROUTE);
  const files = docsFiles();
  expect(Object.keys(files).sort()).toEqual([
    'app/api/runs/route.js',
    'app/runs/actions.js',
    'lib/waybill.js',
    'workflows.mjs',
  ]);
  for (const [name, text] of Object.entries(files)) consumer.write(name, text);
  consumer.write('app/runs/page.js', RUNS_PAGE);
  consumer.write('app/api/work/route.js', WORK_ROUTE);
}, 20 * 60_000);

afterAll(async () => {
  for (const served of servers) await served.stop();
  await receiver?.close();
  consumer?.remove();
}, 5 * 60_000);

describe("a Next.js app of the user's own", () => {
  it('gets, bundled for the edge runtime, an error that names waybill and the Node.js runtime', async () => {
    // Next bundles an edge route with the `edge-light` condition, and evaluates its modules while it collects
    // page data, so `next build` stops with this message. node resolves the same condition when asked to; the
    // named imports are checked against the edge build's exports before it runs, as a bundler checks them.
    const out = await consumer.node([
      '--conditions=edge-light',
      '--input-type=module',
      '-e',
      "import { openStore } from 'waybill'; import { startRun, WorkflowRegistry } from 'waybill/engine';",
    ]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(
      `Error: waybill needs the Node.js runtime: this module was bundled for the edge runtime; remove "export const runtime = 'edge'" from the route that imports waybill (or set it to 'nodejs')`,
    );
  });

  it(
    'builds with waybill in route handlers and server actions, and its requests checkpoint every step once and start runs',
    async () => {
      await built();
      receiver = await startOtlpReceiver({ closeWithTest: false });
      const served = await serve({
        CONSUMER_DATABASE_URL: `file:${consumer.file('agent.db')}`,
        DATABASE_URL: `file:${consumer.file('engine.db')}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'next-consumer',
      });
      const { base } = served;
      const output = () => served.output;

      const post = (run: string) =>
        fetch(`${base}/api/agent`, { method: 'POST', body: JSON.stringify({ run, items: 5 }) }).then(async (r) => ({
          status: r.status,
          body: await r.text(),
        }));
      const first = await post('route-run');
      expect(first.status, `${first.body}\n${output()}`).toBe(200);
      expect(JSON.parse(first.body)).toEqual({ processed: 5, executed: 5, skipped: 0, awaited: 0 });
      // The same run again: it resumes after its last committed step, so none runs twice.
      expect(JSON.parse((await post('route-run')).body)).toEqual({ processed: 5, executed: 0, skipped: 0, awaited: 0 });

      // The server actions, called as the pages' forms call them: their ids from the build's manifest.
      const manifest = JSON.parse(
        readFileSync(consumer.file('.next/server/server-reference-manifest.json'), 'utf8'),
      ) as {
        node: Record<string, { exportedName?: string }>;
      };
      const actionId = (name: string) => {
        const ids = Object.entries(manifest.node).filter(([, entry]) => entry.exportedName === name);
        expect(ids, JSON.stringify(manifest.node)).toHaveLength(1);
        return ids[0]![0];
      };
      expect(Object.keys(manifest.node)).toHaveLength(2);
      const action = (page: string, name: string, arg: string) =>
        fetch(`${base}${page}`, {
          method: 'POST',
          headers: {
            'Next-Action': actionId(name),
            'Content-Type': 'text/plain;charset=UTF-8',
            Accept: 'text/x-component',
          },
          body: JSON.stringify([arg]),
        }).then(async (r) => ({ status: r.status, body: await r.text() }));
      const acted = await action('/', 'checkpointOnce', 'action-run');
      expect(acted.status, `${acted.body}\n${output()}`).toBe(200);
      expect(acted.body).toContain('"executed"');
      expect((await action('/', 'checkpointOnce', 'action-run')).body).toContain('"skipped"');

      // waybill/engine, as the docs start runs: a route handler, then the same start again, bad input, a taken id.
      const start = (body: unknown) =>
        fetch(`${base}/api/runs`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({
          status: r.status,
          body: await r.text(),
        }));
      const started = await start({ id: 'next-greet', name: 'next' });
      expect(started.status, `${started.body}\n${output()}`).toBe(201);
      expect(JSON.parse(started.body)).toEqual({ id: 'next-greet', status: 'queued' });
      expect(await start({ id: 'next-greet', name: 'next' })).toEqual({ status: 200, body: started.body });
      const refused = await start({ id: 'next-bad', name: '' });
      expect(refused.status, refused.body).toBe(400);
      expect(JSON.parse(refused.body).error).toContain('invalid input for greet');
      expect((await start({ id: 'next-greet', name: 'someone else' })).status).toBe(409);
      // The docs' server action.
      const greeted = await action('/runs', 'startGreeting', 'action');
      expect(greeted.status, `${greeted.body}\n${output()}`).toBe(200);
      const actionRun = /"(greet-\d{4}-\d{2}-\d{2}-[0-9a-f]{8})"/.exec(greeted.body)?.[1];
      expect(actionRun, greeted.body).toBeDefined();

      // A worker in the app runs one: its spans are exported, so the bundle loaded the SDK from node_modules.
      const worked = await fetch(`${base}/api/work`, {
        method: 'POST',
        body: JSON.stringify({ id: 'next-greet' }),
      }).then(async (r) => ({ status: r.status, body: await r.text() }));
      expect(worked.status, `${worked.body}\n${output()}`).toBe(200);
      expect(JSON.parse(worked.body)).toEqual({ status: 'completed', output: 'hello, next' });
      await until('the step span', () => receiver!.spans.some((s) => s.name === 'step'), { timeoutMs: 30_000 });
      expect(
        receiver.spans.map((s) => ({ name: s.name, service: s.service, run: s.attributes['waybill.run_id'] })),
      ).toEqual(
        expect.arrayContaining([
          { name: 'run', service: 'next-consumer', run: 'next-greet' },
          { name: 'step', service: 'next-consumer', run: 'next-greet' },
        ]),
      );
      expect(output()).not.toContain('WAYBILL_TRACING_OFF');
      const engineDb = new Database(consumer.file('engine.db'), { readonly: true });
      try {
        expect(engineDb.prepare('SELECT id, workflow, status FROM runs ORDER BY id').all()).toEqual([
          { id: actionRun, workflow: 'greet', status: 'queued' },
          { id: 'next-greet', workflow: 'greet', status: 'completed' },
        ]);
      } finally {
        engineDb.close();
      }

      const db = new Database(consumer.file('agent.db'), { readonly: true });
      try {
        expect(db.prepare('SELECT run_id, count(*) AS n FROM committed GROUP BY run_id ORDER BY run_id').all()).toEqual(
          [
            { run_id: 'action-run', n: 1 },
            { run_id: 'route-run', n: 5 },
          ],
        );
      } finally {
        db.close();
      }
    },
    15 * 60_000,
  );

  it('without better-sqlite3, says for a SQLite URL what to install, and creates no file', async () => {
    await built();
    const missing = consumer.file('no-driver.db');
    await consumer.without('better-sqlite3', async () => {
      const served = await serve({ CONSUMER_DATABASE_URL: `file:${missing}` });
      try {
        const answer = await fetch(`${served.base}/api/agent`, {
          method: 'POST',
          body: JSON.stringify({ run: 'no-driver', items: 1 }),
        });
        expect(answer.status).toBe(500);
        // The route does not catch it: Next logs the error, with its message, as the request fails.
        await until('the error in the log', () => served.output.includes('DRIVER_MISSING'), { timeoutMs: 30_000 });
        expect(served.output).toContain(
          `file:${missing} needs the better-sqlite3 package, which is not installed here: npm install ${SQLITE_INSTALL}`,
        );
      } finally {
        await served.stop();
      }
    });
    expect(existsSync(missing)).toBe(false);
  });

  it.skipIf(!pgUp)(
    'without better-sqlite3, starts a run on PostgreSQL and a worker in the app completes it',
    async () => {
      await built();
      const schema = await testSchema('wb_next');
      await consumer.without('better-sqlite3', async () => {
        const served = await serve({ DATABASE_URL: schema.url });
        try {
          const post = (path: string, body: unknown) =>
            fetch(`${served.base}${path}`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({
              status: r.status,
              body: await r.text(),
            }));
          const started = await post('/api/runs', { id: 'pg-greet', name: 'postgres' });
          expect(started.status, `${started.body}\n${served.output}`).toBe(201);
          const worked = await post('/api/work', { id: 'pg-greet' });
          expect(worked.status, `${worked.body}\n${served.output}`).toBe(200);
          expect(JSON.parse(worked.body)).toEqual({ status: 'completed', output: 'hello, postgres' });
          expect(served.output).not.toContain('better-sqlite3');
        } finally {
          await served.stop();
        }
      });
      expect(await schema.admin.query(`SELECT id, workflow, status FROM ${schema.t('runs')}`)).toEqual([
        { id: 'pg-greet', workflow: 'greet', status: 'completed' },
      ]);
    },
  );
});

let building: Promise<void> | undefined;

/**
 * `next build` of the app, once for the file's tests: without the OpenTelemetry SDK and without better-sqlite3,
 * as a project that never installed them (nothing may resolve them at build time), then with node_modules/waybill
 * deleted: bundled into the build, waybill is not loaded from node_modules at all.
 */
function built(): Promise<void> {
  building ??= consumer.without([...SDK, 'better-sqlite3'], async () => {
    const nextBin = consumer.file('node_modules/next/dist/bin/next');
    const env = cleanEnv({ NEXT_TELEMETRY_DISABLED: '1' });
    must('next build', await run(process.execPath, [nextBin, 'build'], { cwd: consumer.dir, env }));
    rmSync(consumer.file('node_modules/waybill'), { recursive: true });
  });
  return building;
}

interface Served {
  base: string;
  /** Its stdout and stderr so far. */
  readonly output: string;
  stop(): Promise<void>;
}

/** `next start` of the build on a free port, with `env`; stopped by the test, or by afterAll if it failed first. */
async function serve(env: Record<string, string>): Promise<Served> {
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [consumer.file('node_modules/next/dist/bin/next'), 'start', '--port', String(port), '--hostname', '127.0.0.1'],
    { cwd: consumer.dir, env: cleanEnv({ NEXT_TELEMETRY_DISABLED: '1', ...env }), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (output += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
  const served: Served = {
    base: `http://127.0.0.1:${port}`,
    get output() {
      return output;
    },
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      await once(proc, 'close');
    },
  };
  servers.push(served);
  for (let i = 0; !(await reachable(served.base)); i++) {
    if (proc.exitCode !== null || i > 600) throw new Error(`next start did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return served;
}

function version(name: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
    .version;
}

async function reachable(url: string): Promise<boolean> {
  try {
    await fetch(url);
    return true;
  } catch {
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
