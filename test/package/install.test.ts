/**
 * The `waybill` package as another project gets it: `npm install` of its tarball (./pack.ts, shared by the
 * files of test/package) into a fresh project under os.tmpdir(), with nothing else: its size on disk, that
 * project's own files under plain `node` (no tsx), its own `npx waybill`, the repository's `tsc` over a
 * TypeScript consumer, and a project on zod 3. The dashboard package is dashboard.test.ts's.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, testSchema, testUrl } from '../support/postgres';
import { type Consumer, makeConsumer, must, ROOT, run, SQLITE_INSTALL, VERSION } from './consumer';
import { type Packed, packBoth } from './pack';
import { type InstallSize, inMB, LIBRARY_GOAL_BYTES, nodeModulesSize } from './size';

let consumer: Consumer;
let packed: Packed;
let installed: InstallSize;
const pgUp = await postgresAvailable('package install tests (the PostgreSQL backend from the package)');

beforeAll(async () => {
  packed = (await packBoth()).waybill;
  consumer = await makeConsumer([packed.tarball]);
  installed = nodeModulesSize(consumer.dir);
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
  it('holds the build (migrations inside it), the bins and the licenses, and no dashboard, sources, tests or databases', () => {
    const { files } = packed;
    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'licenses/THIRD-PARTY.md',
      'licenses/Apache-2.0.txt',
      'bin/waybill.mjs',
      'bin/entry.mjs',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/engine.js',
      'dist/engine.d.ts',
      'dist/cli.js',
      'dist/http-guard.mjs',
    ]) {
      expect(files, needed).toContain(needed);
    }
    const unwanted = files.filter(
      (f) =>
        /^(lib|app|test|e2e|bench|scripts|examples|data|drizzle|node_modules|packages|\.next)\//.test(f) ||
        /\.(db|db-wal|db-shm|tsbuildinfo)$/.test(f) ||
        (/\.tsx?$/.test(f) && !f.endsWith('.d.ts')) ||
        /_snapshot\.json$/.test(f),
    );
    expect(unwanted).toEqual([]);
  });

  it('declares MIT, zod 4 as a peer, and no web framework among its dependencies', () => {
    const pkg = JSON.parse(readFileSync(consumer.file('node_modules/waybill/package.json'), 'utf8')) as {
      license: string;
      private?: boolean;
      dependencies: Record<string, string>;
      optionalDependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional: boolean }>;
    };
    expect(pkg.license).toBe('MIT');
    expect(pkg.private).toBeUndefined();
    // OpenTelemetry's packages are optional peers: `npm install waybill` leaves them out (they would add some
    // 27 MB), and a project that wants traces installs them beside it (docs/operations.md, Tracing).
    const otel = [
      '@opentelemetry/api',
      '@opentelemetry/core',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace-base',
      '@opentelemetry/semantic-conventions',
    ];
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual([...otel, 'zod']);
    expect(pkg.peerDependencies.zod).toBe('^4.0.0');
    expect(pkg.peerDependenciesMeta).toEqual(Object.fromEntries(otel.map((name) => [name, { optional: true }])));
    // prom-client brings @opentelemetry/api of its own; the SDK and the exporter are not installed.
    expect(existsSync(consumer.file('node_modules/@opentelemetry/sdk-trace-base'))).toBe(false);
    expect(existsSync(consumer.file('node_modules/@opentelemetry/exporter-trace-otlp-http'))).toBe(false);
    // croner: the workers read schedules' cron expressions (lib/engine/schedules/cron.ts); prom-client: a worker
    // measures its commits and serves them on its health port (lib/engine/worker/metrics.ts).
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['croner', 'pg', 'pino', 'prom-client']);
    expect(pkg.optionalDependencies).toEqual({ 'better-sqlite3': expect.any(String) });
  });
});

describe('npm publish --dry-run', () => {
  it('passes for the packed tarball (nothing is published)', async () => {
    const out = await run('npm', ['publish', packed.tarball, '--dry-run', '--loglevel=error'], { cwd: consumer.dir });
    expect(out.code, out.stderr).toBe(0);
  }, 120_000);
});

describe('npm install waybill', () => {
  it(`puts at most ${inMB(LIBRARY_GOAL_BYTES)} on disk, with no next, react or dashboard`, () => {
    process.stderr.write(
      `npm install waybill: ${inMB(installed.bytes)} in node_modules, ${installed.packages} packages\n`,
    );
    expect(installed.bytes).toBeLessThanOrEqual(LIBRARY_GOAL_BYTES);
    const top = readdirSync(consumer.file('node_modules'));
    for (const absent of [
      'next',
      'react',
      'react-dom',
      'recharts',
      'tailwindcss',
      'server-only',
      'drizzle-orm',
      'waybill-dashboard',
    ])
      expect(top, absent).not.toContain(absent);
    // The peer, installed by npm beside it: zod 4.
    const zod = JSON.parse(readFileSync(consumer.file('node_modules/zod/package.json'), 'utf8')) as { version: string };
    expect(zod.version).toMatch(/^4\./);
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

  it('configured to trace without the OpenTelemetry packages, a worker says so once and runs untraced', async () => {
    const out = await consumer.node(['worker.mjs', 'file:./data/untraced.db'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
    });
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ status: 'completed', calls: [1, 1, 1, 1, 1, 1, 1] });
    expect(out.stderr.match(/WAYBILL_TRACING_OFF/g)).toHaveLength(1);
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
      message: `file:./data/missing.db needs the better-sqlite3 package, which is not installed here: npm install ${SQLITE_INSTALL}`,
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
    // One line a command, its name first: `  start      queue a run`.
    for (const command of ['start', 'worker', 'dashboard', 'up', 'migrate'])
      expect(help.stdout).toMatch(new RegExp(`^  ${command} +\\S`, 'm'));
  });

  it('dashboard and up without waybill-dashboard installed: one line naming what to install, exit 2, nothing created', async () => {
    for (const command of ['dashboard', 'up']) {
      const out = await consumer.npx(['waybill', command], { DATABASE_URL: 'file:./data/no-dashboard.db' });
      expect(out.code, out.stderr).toBe(2);
      expect(out.stderr).toBe(
        `waybill: the dashboard is a package of its own, which is not installed here: npm install waybill-dashboard@${VERSION}\n`,
      );
      expect(out.stdout).toBe('');
    }
    expect(existsSync(consumer.file('data/no-dashboard.db'))).toBe(false);
  });
});

describe('a project on zod 3', () => {
  it(
    'is told in one line that waybill needs zod 4, by the library and by the CLI (exit 2)',
    async () => {
      // zod 3 in the project's node_modules, where npm would leave it for a project that asked for it (with
      // --legacy-peer-deps, or a package manager that only warns about peers).
      const zod3 = mkdtempSync(join(tmpdir(), 'waybill-zod3-'));
      try {
        must(
          'npm install zod@3',
          await run('npm', ['install', 'zod@3', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
            cwd: zod3,
            input: '',
          }),
        );
        const version = (
          JSON.parse(readFileSync(join(zod3, 'node_modules/zod/package.json'), 'utf8')) as { version: string }
        ).version;
        expect(version).toMatch(/^3\./);
        const ours = consumer.file('node_modules/zod');
        renameSync(ours, `${ours}.aside`);
        renameSync(join(zod3, 'node_modules/zod'), ours);
        try {
          const message = `waybill needs zod 4 (found ${version}): npm install zod@4`;
          for (const entry of ['waybill', 'waybill/engine']) {
            const loaded = await consumer.node([
              '--input-type=module',
              '-e',
              `import(${JSON.stringify(entry)}).then(() => console.log('loaded'), (e) => console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message })))`,
            ]);
            expect(JSON.parse(loaded.stdout), entry).toEqual({
              name: 'DependencyVersionError',
              code: 'DEPENDENCY_VERSION',
              message,
            });
          }
          const cli = await consumer.npx(['waybill', '--help']);
          expect(cli.code).toBe(2);
          expect(cli.stderr).toBe(`waybill: ${message}\n`);
        } finally {
          rmSync(ours, { recursive: true, force: true });
          renameSync(`${ours}.aside`, ours);
        }
      } finally {
        rmSync(zod3, { recursive: true, force: true });
      }
    },
    5 * 60_000,
  );
});
