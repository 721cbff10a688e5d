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
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from '../support/otlp-receiver';
import { until } from '../support/until';
import { type Consumer, cleanEnv, makeConsumer, must, ROOT, run } from './consumer';
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
let server: ReturnType<typeof spawn> | null = null;
let receiver: OtlpReceiver | null = null;

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
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'close');
  }
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
      const nextBin = consumer.file('node_modules/next/dist/bin/next');
      receiver = await startOtlpReceiver({ closeWithTest: false });
      const env = {
        NEXT_TELEMETRY_DISABLED: '1',
        CONSUMER_DATABASE_URL: `file:${consumer.file('agent.db')}`,
        DATABASE_URL: `file:${consumer.file('engine.db')}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'next-consumer',
      };
      // Without the OpenTelemetry SDK, as a project that never installed it: nothing may resolve it at build time.
      await consumer.without(SDK, async () =>
        must('next build', await run(process.execPath, [nextBin, 'build'], { cwd: consumer.dir, env: cleanEnv(env) })),
      );
      // Bundled into the build, waybill is not loaded from node_modules at all: the app runs without it there.
      rmSync(consumer.file('node_modules/waybill'), { recursive: true });

      const port = await freePort();
      server = spawn(process.execPath, [nextBin, 'start', '--port', String(port), '--hostname', '127.0.0.1'], {
        cwd: consumer.dir,
        env: cleanEnv(env),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      server.stdout!.setEncoding('utf8').on('data', (c: string) => (output += c));
      server.stderr!.setEncoding('utf8').on('data', (c: string) => (output += c));
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; !(await reachable(base)); i++) {
        if (server.exitCode !== null || i > 600) throw new Error(`next start did not come up:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }

      const post = (run: string) =>
        fetch(`${base}/api/agent`, { method: 'POST', body: JSON.stringify({ run, items: 5 }) }).then(async (r) => ({
          status: r.status,
          body: await r.text(),
        }));
      const first = await post('route-run');
      expect(first.status, `${first.body}\n${output}`).toBe(200);
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
      expect(acted.status, `${acted.body}\n${output}`).toBe(200);
      expect(acted.body).toContain('"executed"');
      expect((await action('/', 'checkpointOnce', 'action-run')).body).toContain('"skipped"');

      // waybill/engine, as the docs start runs: a route handler, then the same start again, bad input, a taken id.
      const start = (body: unknown) =>
        fetch(`${base}/api/runs`, { method: 'POST', body: JSON.stringify(body) }).then(async (r) => ({
          status: r.status,
          body: await r.text(),
        }));
      const started = await start({ id: 'next-greet', name: 'next' });
      expect(started.status, `${started.body}\n${output}`).toBe(201);
      expect(JSON.parse(started.body)).toEqual({ id: 'next-greet', status: 'queued' });
      expect(await start({ id: 'next-greet', name: 'next' })).toEqual({ status: 200, body: started.body });
      const refused = await start({ id: 'next-bad', name: '' });
      expect(refused.status, refused.body).toBe(400);
      expect(JSON.parse(refused.body).error).toContain('invalid input for greet');
      expect((await start({ id: 'next-greet', name: 'someone else' })).status).toBe(409);
      // The docs' server action.
      const greeted = await action('/runs', 'startGreeting', 'action');
      expect(greeted.status, `${greeted.body}\n${output}`).toBe(200);
      const actionRun = /"(greet-\d{4}-\d{2}-\d{2}-[0-9a-f]{8})"/.exec(greeted.body)?.[1];
      expect(actionRun, greeted.body).toBeDefined();

      // A worker in the app runs one: its spans are exported, so the bundle loaded the SDK from node_modules.
      const worked = await fetch(`${base}/api/work`, {
        method: 'POST',
        body: JSON.stringify({ id: 'next-greet' }),
      }).then(async (r) => ({ status: r.status, body: await r.text() }));
      expect(worked.status, `${worked.body}\n${output}`).toBe(200);
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
      expect(output).not.toContain('WAYBILL_TRACING_OFF');
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
});

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
