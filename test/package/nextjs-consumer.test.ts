/**
 * A Next.js app of the user's own, outside the repository, with `waybill` installed from its tarball
 * (./pack.ts) and `next` from the registry (npm's cache first) at the repository's version: a route handler and
 * a server action import `waybill`, `next build` passes, and requests to the running app checkpoint their
 * steps in a SQLite file: every step once, and again a skip. The app has no next.config: Next bundles waybill
 * (its migrations inside its JavaScript) and leaves better-sqlite3 and pg, on its own list, to node_modules, as
 * README's "Install as a package" tells a Next.js user.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Consumer, cleanEnv, makeConsumer, must, ROOT, run } from './consumer';
import { packBoth } from './pack';

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

let consumer: Consumer;
let server: ReturnType<typeof spawn> | null = null;

beforeAll(async () => {
  const { waybill } = await packBoth();
  const next = (JSON.parse(readFileSync(`${ROOT}/node_modules/next/package.json`, 'utf8')) as { version: string })
    .version;
  const react = (JSON.parse(readFileSync(`${ROOT}/node_modules/react/package.json`, 'utf8')) as { version: string })
    .version;
  consumer = await makeConsumer([waybill.tarball, `next@${next}`, `react@${react}`, `react-dom@${react}`]);
  consumer.write('app/layout.js', LAYOUT);
  consumer.write('app/page.js', PAGE);
  consumer.write('app/actions.js', ACTIONS);
  consumer.write('app/api/agent/route.js', ROUTE);
}, 20 * 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'close');
  }
  consumer?.remove();
}, 5 * 60_000);

describe("a Next.js app of the user's own", () => {
  it(
    'builds with waybill in a route handler and a server action, and its requests checkpoint every step once',
    async () => {
      const nextBin = consumer.file('node_modules/next/dist/bin/next');
      const env = { NEXT_TELEMETRY_DISABLED: '1', CONSUMER_DATABASE_URL: `file:${consumer.file('agent.db')}` };
      must('next build', await run(process.execPath, [nextBin, 'build'], { cwd: consumer.dir, env: cleanEnv(env) }));
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

      // The server action, called as the page's form calls it: its id from the build's manifest.
      const manifest = JSON.parse(
        readFileSync(consumer.file('.next/server/server-reference-manifest.json'), 'utf8'),
      ) as {
        node: Record<string, { exportedName?: string }>;
      };
      const ids = Object.keys(manifest.node);
      expect(ids).toHaveLength(1);
      const action = (run: string) =>
        fetch(base, {
          method: 'POST',
          headers: { 'Next-Action': ids[0]!, 'Content-Type': 'text/plain;charset=UTF-8', Accept: 'text/x-component' },
          body: JSON.stringify([run]),
        }).then(async (r) => ({ status: r.status, body: await r.text() }));
      const acted = await action('action-run');
      expect(acted.status, `${acted.body}\n${output}`).toBe(200);
      expect(acted.body).toContain('"executed"');
      expect((await action('action-run')).body).toContain('"skipped"');

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
