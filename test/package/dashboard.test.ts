/**
 * The `waybill-dashboard` package beside `waybill`, as another project gets them: both tarballs (./pack.ts,
 * shared by the files of test/package) installed into a fresh project under os.tmpdir(). Its size on disk,
 * what it ships (the standalone server, no source maps, no native module: the project's own better-sqlite3
 * is used), and `npx waybill dashboard` / `npx waybill up` serving it with no `next` installed.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/until';
import { type Consumer, cleanEnv, makeConsumer, run, VERSION } from './consumer';
import { type Packed, packBoth } from './pack';
import { type InstallSize, inMB, nodeModulesSize, WITH_DASHBOARD_GOAL_BYTES } from './size';

let consumer: Consumer;
let packed: Packed;
let installed: InstallSize;

beforeAll(async () => {
  const both = await packBoth();
  packed = both.dashboard;
  consumer = await makeConsumer([both.waybill.tarball, both.dashboard.tarball]);
  installed = nodeModulesSize(consumer.dir);
}, 20 * 60_000);

afterAll(() => consumer?.remove(), 5 * 60_000);

describe('npm pack of packages/dashboard', () => {
  it('holds the standalone server, its static assets and the license, and no source maps or native modules', () => {
    const { files } = packed;
    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'standalone/server.js',
      'standalone/package.json',
      'standalone/.next/BUILD_ID',
      'standalone/node_modules/next/package.json',
      'standalone/node_modules/react/package.json',
    ]) {
      expect(files, needed).toContain(needed);
    }
    expect(files.some((f) => f.startsWith('standalone/.next/static/'))).toBe(true);
    expect(files.filter((f) => /\.(map|node)$/.test(f))).toEqual([]);
    expect(files.filter((f) => /^standalone\/node_modules\/(better-sqlite3|sharp|@img)\//.test(f))).toEqual([]);
    // The server's externals are shipped as packages, not as symlinks npm pack would drop.
    expect(files.some((f) => /^standalone\/\.next\/node_modules\/better-sqlite3-[0-9a-f]+\/index\.js$/.test(f))).toBe(
      true,
    );
    const pkg = JSON.parse(readFileSync(consumer.file('node_modules/waybill-dashboard/package.json'), 'utf8')) as {
      license: string;
      version: string;
      dependencies?: Record<string, string>;
    };
    expect(pkg).toMatchObject({ license: 'MIT', version: VERSION });
    expect(pkg.dependencies).toBeUndefined();
  });
});

describe('npm publish --dry-run of waybill-dashboard', () => {
  it('passes for the packed tarball (nothing is published)', async () => {
    const out = await run('npm', ['publish', packed.tarball, '--dry-run', '--loglevel=error'], { cwd: consumer.dir });
    expect(out.code, out.stderr).toBe(0);
  }, 120_000);
});

describe('npm install waybill waybill-dashboard', () => {
  it(`puts at most ${inMB(WITH_DASHBOARD_GOAL_BYTES)} on disk, and no next of the project's own`, () => {
    process.stderr.write(
      `npm install waybill waybill-dashboard: ${inMB(installed.bytes)} in node_modules, ${installed.packages} packages\n`,
    );
    expect(installed.bytes).toBeLessThanOrEqual(WITH_DASHBOARD_GOAL_BYTES);
    const top = readdirSync(consumer.file('node_modules'));
    for (const absent of ['next', 'react', 'react-dom', 'recharts']) expect(top, absent).not.toContain(absent);
  });
});

describe('npx waybill dashboard from the consumer', () => {
  it('dashboard refuses to listen beyond loopback without a token, as npm start does', async () => {
    const out = await consumer.npx(['waybill', 'dashboard'], {
      HOST: '0.0.0.0',
      DATABASE_URL: 'file:./data/refused.db',
    });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('HOST=0.0.0.0 would open the dashboard beyond this machine with no sign-in');
    expect(existsSync(consumer.file('data/refused.db'))).toBe(false);
  });

  it('dashboard refuses a waybill-dashboard of another version, naming both, exit 2', async () => {
    const manifest = consumer.file('node_modules/waybill-dashboard/package.json');
    const original = readFileSync(manifest, 'utf8');
    writeFileSync(manifest, JSON.stringify({ ...JSON.parse(original), version: '0.0.1' }));
    try {
      const out = await consumer.npx(['waybill', 'dashboard'], { DATABASE_URL: 'file:./data/mismatch.db' });
      expect(out.code).toBe(2);
      expect(out.stderr).toBe(
        `waybill: waybill-dashboard 0.0.1 is installed (${consumer.file('node_modules/waybill-dashboard')}), and this is waybill ${VERSION}: npm install waybill-dashboard@${VERSION}\n`,
      );
      expect(existsSync(consumer.file('data/mismatch.db'))).toBe(false);
    } finally {
      writeFileSync(manifest, original);
    }
  });

  it('dashboard serves the packaged build against a relative SQLite DATABASE_URL, and SIGTERM stops it', async () => {
    const port = await freePort();
    const dashboard = serve(['waybill', 'dashboard'], {
      DATABASE_URL: 'file:./data/dashboard.db',
      PORT: String(port),
      WAYBILL_WEB_PROCESSES: '1',
    });
    try {
      await dashboard.ready();
      const page = await fetch(`http://127.0.0.1:${port}/`);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('Waybill');
      // Its assets too, which Next's standalone output leaves for the packager to copy.
      const assets = [...html.matchAll(/\/_next\/static\/[^"'\s]+\.(?:css|js)/g)].map((m) => m[0]);
      expect(assets.length).toBeGreaterThan(0);
      for (const asset of new Set(assets))
        expect((await fetch(`http://127.0.0.1:${port}${asset}`)).status, asset).toBe(200);
      // The relative URL named the consumer's directory, not the installed package's.
      expect(existsSync(consumer.file('data/dashboard.db'))).toBe(true);
    } finally {
      dashboard.terminate();
    }
    await dashboard.exited;
    expect(dashboard.stdout()).toContain('waybill: SIGTERM: stopping the dashboard (waybill-dashboard)\n');
    expect(dashboard.stdout()).toContain('waybill: stopped');
    await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();
  });
});

describe('npx waybill up from the consumer', () => {
  it('runs the dashboard and a worker from the package: a run queued with npx waybill start completes, every step once', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: 'file:./data/up.db', PORT: String(port), WAYBILL_WEB_PROCESSES: '1' };
    const up = serve(['waybill', 'up', '--no-demo'], env);
    try {
      await up.ready();
      expect(up.stdout()).toMatch(/waybill worker, pid \d+/);
      const queued = await consumer.npx(
        [
          'waybill',
          'start',
          'agent-batch',
          '--id',
          'up-run',
          '--input',
          '{"count": 5, "latencyMs": 0, "failureRate": 0}',
        ],
        env,
      );
      expect(queued.code, queued.stderr).toBe(0);
      const db = new Database(consumer.file('data/up.db'), { readonly: true });
      try {
        const status = () =>
          (db.prepare("SELECT status FROM runs WHERE id = 'up-run'").get() as { status: string }).status;
        const deadline = Date.now() + 60_000;
        while (status() !== 'completed' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        expect(status()).toBe('completed');
        expect(
          db
            .prepare("SELECT count(*) AS n, count(DISTINCT idem_key) AS keys FROM committed WHERE run_id = 'up-run'")
            .get(),
        ).toEqual({ n: 5, keys: 5 });
      } finally {
        db.close();
      }
      const page = await fetch(`http://127.0.0.1:${port}/runs/up-run`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('up-run');
    } finally {
      up.terminate();
    }
    await up.exited;
    expect(up.stdout()).toContain(
      'waybill: SIGTERM: stopping the dashboard (waybill-dashboard) and the worker (waybill worker)',
    );
    expect(up.stdout()).toContain('waybill: stopped');
  });
});

/**
 * `npx <args>` in a process group of its own, signalled whole as a terminal's Ctrl-C or a service manager
 * does: npx runs waybill under `sh -c`, which passes no signal on.
 */
function serve(args: string[], env: Record<string, string>) {
  const proc = spawn('npx', ['--no-install', ...args], {
    cwd: consumer.dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: cleanEnv(env),
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  // 'close' comes once every process holding our pipes has exited: waybill itself, not only npm.
  const exited = once(proc, 'close');
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    exited,
    stdout: () => stdout,
    // The announcement's last line: its lines are written at once but may reach the pipe in separate chunks, so
    // its first line alone does not mean the worker's line below it has arrived.
    ready: () =>
      until('the announcement', () => stdout.includes('Ctrl-C stops them.'), {
        timeoutMs: 90_000,
        intervalMs: 100,
        gone: () => (gone ? `${stdout}\n${stderr}` : null),
      }),
    terminate: () => process.kill(-proc.pid!, 'SIGTERM'),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
