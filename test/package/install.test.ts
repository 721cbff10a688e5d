/**
 * The package as another project gets it: `npm pack` (its prepack build), `npm install` of the tarball into
 * a fresh project under os.tmpdir(), then that project's own files under plain `node` (no tsx), its own
 * `npx waybill`, and the repository's `tsc` over a TypeScript consumer. Packed and installed once for the file.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, testSchema, testUrl } from '../support/postgres';
import { cleanEnv, makeConsumer, ROOT, run, VERSION, type Consumer } from './consumer';

let consumer: Consumer;
const pgUp = await postgresAvailable('package install tests (the PostgreSQL backend from the package)');

beforeAll(async () => {
  consumer = await makeConsumer();
  consumer.write('agent.mjs', AGENT);
  consumer.write('open.mjs', OPEN);
  consumer.write('worker.mjs', ENGINE);
  consumer.write('consumer.ts', TYPED_CONSUMER);
}, 20 * 60_000);

afterAll(() => consumer?.remove(), 5 * 60_000);

/** 50 steps of runAgent; each side effect appends its idempotency key to a file, and step KILL_AT dies after its effect, before its commit. */
const AGENT = `import { appendFileSync } from 'node:fs';
import { Checkpoint, openStore, runAgent } from 'waybill';

const [url, effects, killAt] = process.argv.slice(2);
const store = await openStore(url);
// A short lease, so the run restarted after a SIGKILL takes the dead process's claim over within a second.
const checkpoint = new Checkpoint(store, 'consumer-run', { workerId: 'consumer-' + process.pid, leaseMs: 300 });
const items = Array.from({ length: 50 }, (_, i) => i);
const report = await runAgent(items, checkpoint, async (item, { idempotencyKey }) => {
  appendFileSync(effects, idempotencyKey + '\\n');
  if (item === Number(killAt)) process.kill(process.pid, 'SIGKILL');
  return { doubled: item * 2 };
});
await store.close();
console.log(JSON.stringify(report));
`;

/** A workflow of the consumer's, run by a Worker of its own in its own process: what waybill/engine is for. */
const ENGINE = `import { setTimeout as sleep } from 'node:timers/promises';
import { defineWorkflow, openStore } from 'waybill';
import { Worker, WorkflowRegistry, startRun } from 'waybill/engine';
import { z } from 'zod';

const calls = new Map();
const greet = defineWorkflow({
  name: 'greet',
  input: z.object({ times: z.number().int().min(1) }),
  totalSteps: (input) => input.times,
  async run(ctx, input) {
    for (let i = 0; i < input.times; i++) {
      await ctx.step(\`hello-\${i}\`, ({ idempotencyKey }) => {
        calls.set(idempotencyKey, (calls.get(idempotencyKey) ?? 0) + 1);
        return i;
      });
    }
    return { greeted: input.times };
  },
});
const store = await openStore(process.argv[2]);
const registry = new WorkflowRegistry([greet]);
const queued = await startRun(store, registry, { workflow: 'greet', input: { times: 7 }, id: 'engine-run' });
const worker = new Worker({ store, registry, pollMs: 20, heartbeatMs: 200 });
const running = worker.run();
let run = await store.getRun('engine-run');
for (let i = 0; i < 1500 && run.status !== 'completed' && run.status !== 'failed'; i++) {
  await sleep(20);
  run = await store.getRun('engine-run');
}
worker.stop();
await running;
await store.close();
console.log(JSON.stringify({ status: run.status, totalSteps: queued.totalSteps, workflow: run.workflow, calls: [...calls.values()] }));
`;

/** Opens a store and says which, or prints the error it got. */
const OPEN = `import { openStore, WaybillError } from 'waybill';
try {
  const store = await openStore(process.argv[2]);
  console.log(JSON.stringify({ opened: store.dialect }));
  await store.close();
} catch (error) {
  console.log(JSON.stringify({ error: error.name, code: error.code, waybill: error instanceof WaybillError, message: error.message }));
}
`;

/** Every public name a user reaches for, used the way the README uses them. No top-level await: any target from ES2015 compiles it. */
const TYPED_CONSUMER = `import {
  Checkpoint, openStore, runAgent, stepKey, defineWorkflow, LeaseLostError, IdempotencyKeyReuseError, WaybillError,
  DriverMissingError, type AgentReport, type StepResult, type Store, type RunRow,
} from 'waybill';
import { Worker, WorkflowRegistry, startRun, createLogger, type WorkerOptions, type RunContext } from 'waybill/engine';
import { z } from 'zod';

const greet = defineWorkflow({
  name: 'greet',
  input: z.object({ name: z.string(), times: z.number().int().default(1) }),
  totalSteps: (input) => input.times,
  async run(ctx: RunContext, input) {
    const name: string = input.name;
    return ctx.step('hello', async ({ idempotencyKey }) => name + ':' + idempotencyKey);
  },
});

export async function main(): Promise<void> {
  const store: Store = await openStore('file:./data/typed.db');
  const checkpoint = new Checkpoint(store, 'typed-run', { workerId: 'typed', leaseMs: 30_000 });
  const report: AgentReport = await runAgent(['a', 'b'], checkpoint, async (item, { idempotencyKey, step }) => item + idempotencyKey + step);
  const one: StepResult<number> = await checkpoint.runOnce(stepKey('typed-run', 9), () => 9);
  const registry = new WorkflowRegistry([greet]);
  const options: Omit<WorkerOptions, 'store'> = { registry, concurrency: 2, log: createLogger({ app: 'typed' }) };
  // openStore() returns the full Store: the engine takes it as it is, no cast.
  const run: RunRow = await startRun(store, registry, { workflow: 'greet', input: { name: 'x' } });
  const worker = new Worker({ ...options, store });
  worker.stop();
  const errors: WaybillError[] = [new LeaseLostError('k'), new IdempotencyKeyReuseError('k', 'a', 'b')];
  void [report.executed, one.status, run.id, errors, DriverMissingError];
  await store.close();
}
`;

describe('npm pack', () => {
  it('holds the build, the migrations and the bins, and no sources, tests or databases', () => {
    const { files } = consumer;
    for (const needed of [
      'package.json',
      'README.md',
      'bin/waybill.mjs',
      'bin/entry.mjs',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/engine.js',
      'dist/engine.d.ts',
      'dist/cli.js',
      'dist/http-guard.mjs',
      'drizzle/sqlite/meta/_journal.json',
      'drizzle/pg/meta/_journal.json',
      '.next/BUILD_ID',
      'next.config.js',
    ]) {
      expect(files, needed).toContain(needed);
    }
    const unwanted = files.filter(
      (f) =>
        /^(lib|app|test|e2e|bench|scripts|examples|data|node_modules)\//.test(f) ||
        f.startsWith('.next/cache/') ||
        /\.(db|db-wal|db-shm|tsbuildinfo)$/.test(f) ||
        (/\.tsx?$/.test(f) && !f.endsWith('.d.ts')) ||
        /_snapshot\.json$/.test(f),
    );
    expect(unwanted).toEqual([]);
    // The dashboard's externals are shipped as packages, not as symlinks npm pack would drop.
    expect(files.some((f) => /^\.next\/node_modules\/better-sqlite3-[0-9a-f]+\/index\.js$/.test(f))).toBe(true);
  });
});

describe('the core under plain node', () => {
  it('runs 50 steps of runAgent on a SQLite file, SIGKILLed mid-step and resumed: every step committed exactly once', async () => {
    const url = 'file:./data/agent.db';
    const effects = consumer.file('effects.log');
    // pg is not installed at all while it runs: a SQLite user never loads it.
    const [killed, resumed] = await consumer.without('pg', async () => [
      await consumer.node(['agent.mjs', url, effects, '30']),
      await consumer.node(['agent.mjs', url, effects, '-1']),
    ]);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout) as {
      processed: number;
      executed: number;
      skipped: number;
      awaited: number;
    };
    // Steps 0-29 were committed by the first process; 30 (killed after its side effect) runs again, then 31-49.
    expect(report).toEqual({ processed: 50, executed: 20, skipped: 0, awaited: 0 });

    const db = new Database(consumer.file('data/agent.db'), { readonly: true });
    try {
      const committed = db
        .prepare(
          "SELECT count(*) AS n, count(DISTINCT idem_key) AS keys, count(DISTINCT step) AS steps FROM committed WHERE run_id = 'consumer-run'",
        )
        .get();
      expect(committed).toEqual({ n: 50, keys: 50, steps: 50 });
      expect(db.prepare("SELECT step FROM progress WHERE run_id = 'consumer-run'").get()).toEqual({ step: 50 });
    } finally {
      db.close();
    }
    const keys = readFileSync(effects, 'utf8').trim().split('\n');
    // 51 side effects for 50 keys: the one step caught between its effect and its commit ran twice, with the
    // same idempotency key for its receiver to deduplicate on; no other step ran twice.
    expect(keys).toHaveLength(51);
    expect(new Set(keys).size).toBe(50);
    expect(keys.filter((k) => k === 'consumer-run:step:30')).toHaveLength(2);
  });

  it('runs a workflow of its own on a Worker of its own (waybill/engine): completed, every step once', async () => {
    const out = await consumer.node(['worker.mjs', 'file:./data/engine.db']);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({
      status: 'completed',
      totalSteps: 7,
      workflow: 'greet',
      calls: [1, 1, 1, 1, 1, 1, 1],
    });
  });

  it('a missing driver is an error naming the package to install', async () => {
    const pgMissing = await consumer.without('pg', () =>
      consumer.node(['open.mjs', 'postgres://nobody@127.0.0.1:1/none']),
    );
    expect(JSON.parse(pgMissing.stdout)).toMatchObject({
      error: 'DriverMissingError',
      code: 'DRIVER_MISSING',
      waybill: true,
      message: expect.stringContaining('needs the pg package, which is not installed here: npm install pg'),
    });
    const sqliteMissing = await consumer.without('better-sqlite3', () =>
      consumer.node(['open.mjs', 'file:./data/missing.db']),
    );
    expect(JSON.parse(sqliteMissing.stdout)).toMatchObject({
      error: 'DriverMissingError',
      code: 'DRIVER_MISSING',
      message:
        'file:./data/missing.db needs the better-sqlite3 package, which is not installed here: npm install better-sqlite3',
    });
    expect(existsSync(consumer.file('data/missing.db'))).toBe(false);
  });

  it.skipIf(!pgUp)('opens PostgreSQL with better-sqlite3 not installed at all', async () => {
    const schema = await testSchema('wb_pkg');
    const url = new URL(testUrl());
    url.searchParams.set('schema', schema.name);
    const out = await consumer.without('better-sqlite3', () => consumer.node(['open.mjs', url.toString()]));
    expect(JSON.parse(out.stdout)).toEqual({ opened: 'postgres' });
  });
});

describe('the declarations in a TypeScript consumer (strict, skipLibCheck off)', () => {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const check = (options: Record<string, unknown>) => {
    const config = { compilerOptions: { strict: true, noEmit: true, ...options }, files: ['consumer.ts'] };
    const name = `tsconfig.${String(options.moduleResolution)}.json`;
    consumer.write(name, JSON.stringify(config));
    return run(process.execPath, [tsc, '-p', name], { cwd: consumer.dir });
  };

  it(
    'type-checks under module/moduleResolution nodenext and under bundler',
    async () => {
      const [nodenext, bundler] = await Promise.all([
        check({ module: 'nodenext', moduleResolution: 'nodenext' }),
        // TypeScript 5's default target (ES5) has no Map or Set, which zod's own declarations need; ES2015 is
        // the lowest target they compile under. Everything else is left at its default.
        check({ module: 'preserve', moduleResolution: 'bundler', target: 'es2015' }),
      ]);
      expect(nodenext.stdout + nodenext.stderr).toBe('');
      expect(nodenext.code).toBe(0);
      expect(bundler.stdout + bundler.stderr).toBe('');
      expect(bundler.code).toBe(0);
    },
    5 * 60_000,
  );
});

describe('npx waybill from the consumer', () => {
  it('--version prints the package version and --help lists the commands', async () => {
    const version = await consumer.npx(['waybill', '--version']);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toBe(`${VERSION}\n`);
    const help = await consumer.npx(['waybill', '--help']);
    expect(help.code, help.stderr).toBe(0);
    for (const command of ['start', 'worker', 'dashboard', 'up']) expect(help.stdout).toContain(`waybill ${command}`);
  });

  it('dashboard refuses to listen beyond loopback without a token, as npm start does', async () => {
    const out = await consumer.npx(['waybill', 'dashboard'], {
      HOST: '0.0.0.0',
      DATABASE_URL: 'file:./data/refused.db',
    });
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('HOST=0.0.0.0 would open the dashboard beyond this machine with no sign-in');
    expect(existsSync(consumer.file('data/refused.db'))).toBe(false);
  });

  it('dashboard refuses a next other than the one that built the packaged dashboard, naming both', async () => {
    const recorded = consumer.file('node_modules/waybill/.next/waybill-build.json');
    const original = readFileSync(recorded, 'utf8');
    const built = (JSON.parse(original) as { next: string }).next;
    expect(built).toBe(
      (JSON.parse(readFileSync(consumer.file('node_modules/next/package.json'), 'utf8')) as { version: string })
        .version,
    );
    writeFileSync(recorded, JSON.stringify({ next: '0.0.1' }));
    try {
      const out = await consumer.npx(['waybill', 'dashboard'], {
        DATABASE_URL: 'file:./data/mismatch.db',
        PORT: String(await freePort()),
      });
      expect(out.code).toBe(1);
      expect(out.stderr).toContain(`was built with next 0.0.1, and next ${built} is installed`);
      expect(out.stderr).toContain('Install next@0.0.1');
      expect(existsSync(consumer.file('data/mismatch.db'))).toBe(false);
    } finally {
      writeFileSync(recorded, original);
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
      expect(await page.text()).toContain('Waybill');
      // The relative URL named the consumer's directory, not the installed package's.
      expect(existsSync(consumer.file('data/dashboard.db'))).toBe(true);
    } finally {
      dashboard.terminate();
    }
    await dashboard.exited;
    expect(dashboard.stdout()).toContain('waybill: SIGTERM: stopping the dashboard (next start)\n');
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
      'waybill: SIGTERM: stopping the dashboard (next start) and the worker (waybill worker)',
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
  return {
    exited,
    stdout: () => stdout,
    ready: () =>
      until(
        () => stdout.includes('Waybill is running at'),
        exited,
        () => `${stdout}\n${stderr}`,
      ),
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

/** Polls `ready` until it holds; fails at once, with the output, if the process exits first. */
async function until(
  ready: () => boolean,
  exited: Promise<unknown>,
  output: () => string,
  timeoutMs = 90_000,
): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (gone) throw new Error(`exited before it was ready:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs} ms:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
