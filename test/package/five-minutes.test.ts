/**
 * The README's "Your own agent in five minutes", as a new user follows it: its commands and its files are
 * read from README.md (fenced blocks tagged `five-minutes`), so the section and this test cannot drift. Each
 * command must be one this test knows how to run; an unknown one fails the test. Commands that run until
 * Ctrl-C (the worker, the dashboard) are spawned in process groups of their own and signalled whole.
 *
 * The two tarballs are packed once and shared with the other files of test/package (./pack.ts), and
 * installed into a new project under os.tmpdir(), beside a `waybill/` directory holding them, so
 * `npm install ../waybill/…` runs as written.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/until';
import { cleanEnv, installTarball, must, type Output, ROOT, run, VERSION } from './consumer';
import { packBoth } from './pack';

interface Block {
  lang: string;
  /** The file a `js five-minutes:<file>` block is, or null for commands. */
  file: string | null;
  text: string;
}

/** The section's tagged blocks, in order. */
function readSection(): Block[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Your own agent in five minutes\n');
  if (start < 0) throw new Error('README.md has no "## Your own agent in five minutes" section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks: Block[] = [];
  for (const m of section.matchAll(/^```(\w+) five-minutes(?::(\S+))?\n([\s\S]*?)^```$/gm)) {
    blocks.push({ lang: m[1]!, file: m[2] ?? null, text: m[3]! });
  }
  return blocks;
}

/** A command line of a block, without its comment. */
function commandsOf(block: Block): string[] {
  return block.text
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter(Boolean);
}

const blocks = readSection();
const commands = blocks.filter((b) => b.file === null).flatMap(commandsOf);
const files = Object.fromEntries(blocks.filter((b) => b.file !== null).map((b) => [b.file!, b.text]));

let base: string;
/** The directory the commands run in: base, then my-agent after its `cd`. */
let cwd: string;
let port: number;
let env: Record<string, string>;
const spawned: Spawned[] = [];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'waybill-five-minutes-'));
  cwd = base;
  if (process.env.WAYBILL_KEEP_TMP) process.stderr.write(`five-minutes: kept in ${base}\n`);
});

afterAll(async () => {
  for (const proc of spawned) proc.kill('SIGKILL');
  await Promise.all(spawned.map((p) => p.exited));
  if (!process.env.WAYBILL_KEEP_TMP) rmSync(base, { recursive: true, force: true });
}, 60_000);

describe('README: Your own agent in five minutes', () => {
  it('holds the commands and files this test runs', () => {
    expect(commands).toEqual([
      'cd waybill && npm pack && npm pack ./packages/dashboard && cd ..',
      'mkdir my-agent && cd my-agent && npm init -y',
      `npm install ../waybill/waybill-${VERSION}.tgz ../waybill/waybill-dashboard-${VERSION}.tgz zod`,
      'npx waybill worker --workflows ./workflows.mjs',
      'npx waybill workflows',
      `npx waybill start summarize --id first --input '{"items": 20}'`,
      'npx waybill dashboard',
      'npx waybill worker --workflows ./workflows.mjs',
      'npx waybill inspect first',
      'node loop.mjs',
      'npx waybill runs --workflow nightly-summaries',
      'WAYBILL_WORKFLOWS=./workflows.mjs npx waybill up',
    ]);
    expect(Object.keys(files)).toEqual(['workflows.mjs', 'loop.mjs']);
    // The section's prose says what the test counts.
    const lines = files['workflows.mjs']!.split('\n').filter((l) => l.trim() && !l.startsWith('import')).length;
    expect(lines).toBeLessThanOrEqual(25);
  });

  it(
    'installs the tarball, runs the workflow through a SIGKILL of its worker, and runs the loop: every step committed once',
    async () => {
      const steps = new Steps();
      // The first block: get the package into a new project.
      await steps.run('cd waybill && npm pack && npm pack ./packages/dashboard && cd ..', async () => {
        const { waybill, dashboard } = await packBoth();
        mkdirSync(join(base, 'waybill'));
        for (const { tarball } of [waybill, dashboard]) copyFileSync(tarball, join(base, 'waybill', basename(tarball)));
        expect([basename(waybill.tarball), basename(dashboard.tarball)]).toEqual([
          `waybill-${VERSION}.tgz`,
          `waybill-dashboard-${VERSION}.tgz`,
        ]);
      });
      await steps.run('mkdir my-agent && cd my-agent && npm init -y', async (command) => {
        must(command, await sh(command));
        cwd = join(base, 'my-agent');
        expect(existsSync(join(cwd, 'package.json'))).toBe(true);
      });
      await steps.run(
        `npm install ../waybill/waybill-${VERSION}.tgz ../waybill/waybill-dashboard-${VERSION}.tgz zod`,
        async (command) => {
          await installTarball(cwd, command.split(' ').slice(2));
          const pkg = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as {
            dependencies: Record<string, string>;
          };
          expect(Object.keys(pkg.dependencies).sort()).toEqual(['waybill', 'waybill-dashboard', 'zod']);
        },
      );
      for (const [file, text] of Object.entries(files)) writeFileSync(join(cwd, file), text);

      // Worker, start, dashboard: the relative default DATABASE_URL (file:./data/waybill.db) is one store for all.
      port = await freePort();
      env = { PORT: String(port), WAYBILL_WEB_PROCESSES: '1' };
      const effects = join(cwd, 'effects.log');
      let first!: Spawned;
      await steps.run('npx waybill worker --workflows ./workflows.mjs', async (command) => {
        first = spawnGroup(command);
      });
      await steps.run('npx waybill workflows', async (command) => {
        // The worker publishes what it serves as it starts; until then the list has only the demos.
        let out: Output;
        for (;;) {
          out = await sh(command);
          const row = out.stdout.split('\n').find((line) => line.startsWith('summarize '));
          if ((row && !row.includes('no live worker')) || first.gone()) break;
          await sleep(300);
        }
        expect(first.gone(), first.output()).toBe(false);
        expect(out.code, out.stderr).toBe(0);
        expect(out.stdout).toMatch(/summarize/);
      });
      // The kill below must land mid-run, and the run (20 half-second steps) would not wait for a dashboard
      // that a busy machine takes longer than that to start: the worker is frozen (SIGSTOP) before the run is
      // queued, holding nothing, and thawed once the dashboard is up.
      first.kill('SIGSTOP');
      await steps.run(`npx waybill start summarize --id first --input '{"items": 20}'`, async (command) => {
        const out = must(command, await sh(command));
        expect(out.stdout).toContain('queued first (summarize');
      });
      let dashboard!: Spawned;
      await steps.run('npx waybill dashboard', async (command) => {
        dashboard = spawnGroup(command);
        await untilUp(
          'the dashboard to announce itself',
          () => dashboard.output().includes('Waybill is running at'),
          dashboard,
        );
        // What the README says the dashboard shows: the run, and the start form with summarize in it.
        const page = await fetch(`http://127.0.0.1:${port}/runs/new`);
        expect(page.status).toBe(200);
        expect(await page.text()).toContain('summarize');
      });
      first.kill('SIGCONT');

      // Mid-run: some steps' side effects happened, not all. Then SIGKILL, as a recycled sandbox dies.
      await untilUp('five of the first run’s steps', () => keys(effects, 'first:').length >= 5, first);
      first.kill('SIGKILL');
      await first.exited;
      const atKill = keys(effects, 'first:').length;
      const committedAtKill = (await api<{ counts: { committed: number } }>('/api/v1/runs/first')).counts.committed;
      expect(atKill).toBeLessThan(20);
      expect(committedAtKill).toBeLessThan(20);

      let second!: Spawned;
      await steps.run('npx waybill worker --workflows ./workflows.mjs', async (command) => {
        second = spawnGroup(command);
      });
      const detail = await untilRun('first', 'completed');
      expect(detail.run).toMatchObject({ id: 'first', workflow: 'summarize', status: 'completed', totalSteps: 20 });
      expect(detail.counts.committed).toBe(20);
      const committed = await api<{ committed: { key: string; step: number }[]; nextCursor: string | null }>(
        '/api/v1/runs/first/committed?limit=100',
      );
      expect(committed.nextCursor).toBeNull();
      expect(committed.committed.map((c) => c.key).sort()).toEqual(
        Array.from({ length: 20 }, (_, n) => `first:step:${n}`).sort(),
      );
      // Every step's model call once, but for at most the one in flight at the kill: called again with the same key.
      const calls = keys(effects, 'first:');
      expect(new Set(calls).size).toBe(20);
      expect(calls.length === 20 || calls.length === 21, `${calls.length} calls`).toBe(true);
      const twice = [...new Set(calls)].filter((k) => calls.filter((c) => c === k).length > 1);
      expect(twice).toHaveLength(calls.length - 20);

      await steps.run('npx waybill inspect first', async (command) => {
        const out = must(command, await sh(command));
        expect(out.stdout).toMatch(/status\s+completed/);
        expect(out.stdout).toContain('summarize');
      });

      // The loop, with MODEL_URL set: the other half of callModel, the key as an Idempotency-Key header.
      const model = await recordingModel();
      try {
        await steps.run('node loop.mjs', async (command) => {
          const out = must(command, await sh(command, { MODEL_URL: model.url }));
          expect(out.stdout).toContain('processed: 10, executed: 10, skipped: 0, awaited: 0');
        });
      } finally {
        await model.close();
      }
      expect(model.keys.sort()).toEqual(Array.from({ length: 10 }, (_, n) => `nightly-1:step:${n}`).sort());
      expect(model.prompts).toHaveLength(10);
      await steps.run('npx waybill runs --workflow nightly-summaries', async (command) => {
        const out = must(command, await sh(command));
        const row = out.stdout.split('\n').find((line) => line.startsWith('nightly-1 '));
        expect(row, out.stdout).toMatch(/nightly-1\s+nightly-summaries\s+completed/);
      });
      const listed = await api<{ runs: { id: string; workflow: string; status: string; totalSteps: number | null }[] }>(
        '/api/v1/runs?workflow=nightly-summaries',
      );
      expect(listed.runs.map(({ id, workflow, status, totalSteps }) => ({ id, workflow, status, totalSteps }))).toEqual(
        [{ id: 'nightly-1', workflow: 'nightly-summaries', status: 'completed', totalSteps: 10 }],
      );

      // Ctrl-C, as the section says to stop them: both stop in order (npx itself answers a Ctrl-C with 130).
      second.kill('SIGINT');
      dashboard.kill('SIGINT');
      await Promise.all([second.exited, dashboard.exited]);
      const drained = second.output();
      expect(drained.indexOf('"signal":"SIGINT","msg":"draining')).toBeGreaterThan(-1);
      expect(drained.indexOf('"msg":"worker stopped"')).toBeGreaterThan(
        drained.indexOf('"signal":"SIGINT","msg":"draining'),
      );
      expect(dashboard.output()).toContain('waybill: stopped');

      // Both in one, and a run started the way the dashboard does (its API), served by up's own worker.
      await steps.run('WAYBILL_WORKFLOWS=./workflows.mjs npx waybill up', async (command) => {
        const up = spawnGroup(command);
        try {
          await untilUp('waybill up to announce itself', () => up.output().includes('Waybill is running at'), up);
          expect(up.output()).toContain(`waybill worker --workflows ${join(cwd, 'workflows.mjs')}`);
          const started = await fetch(`http://127.0.0.1:${port}/api/v1/runs`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ workflow: 'summarize', id: 'from-up', input: { items: 3 } }),
          });
          expect(started.status, await started.clone().text()).toBe(201);
          const done = await untilRun('from-up', 'completed');
          expect(done.run).toMatchObject({ workflow: 'summarize', totalSteps: 3 });
          expect(keys(effects, 'from-up:').sort()).toEqual(['from-up:step:0', 'from-up:step:1', 'from-up:step:2']);
        } finally {
          up.kill('SIGINT');
        }
        await up.exited;
        expect(up.output()).toContain('waybill: stopped');
      });

      // Every command of the section was run, in its order.
      expect(steps.done).toEqual(commands);
    },
    20 * 60_000,
  );
});

/** Runs the section's commands in order: each must be the next one README.md lists. */
class Steps {
  readonly done: string[] = [];
  async run(command: string, how: (command: string) => Promise<void>): Promise<void> {
    expect(commands[this.done.length], `README command #${this.done.length + 1}`).toBe(command);
    await how(command);
    this.done.push(command);
  }
}

function sh(command: string, extra: Record<string, string> = {}): Promise<Output> {
  return run('sh', ['-c', command], { cwd, env: cleanEnv({ ...env, ...extra }) });
}

/** Polls until ready holds; fails at once, with its output, if the process exits first. */
const untilUp = (what: string, ready: () => boolean, proc: Spawned) =>
  until(what, ready, { timeoutMs: 120_000, intervalMs: 100, gone: () => (proc.gone() ? proc.output() : null) });

interface Spawned {
  /** Its exit code, or the signal that ended it. */
  exited: Promise<number | string>;
  output(): string;
  gone(): boolean;
  kill(signal: NodeJS.Signals): void;
}

/**
 * A command that runs until Ctrl-C, in a process group of its own: signalled whole, as a terminal does.
 * Spawned as its words, no shell between: a shell would die of the Ctrl-C itself, where a terminal's does not.
 */
function spawnGroup(command: string): Spawned {
  if (/['"\\$`|;&<>]/.test(command))
    throw new Error(`${command}: quoting or shell syntax; spawnGroup runs plain words`);
  const words = command.split(/\s+/);
  const assignments: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, ...value] = words.shift()!.split('=');
    assignments[name!] = value.join('=');
  }
  const [bin, ...args] = words;
  const proc = spawn(bin!, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: cleanEnv({ ...env, ...assignments }),
  });
  let output = '';
  let gone = false;
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const exited = once(proc, 'close').then(([code, signal]) => {
    gone = true;
    return (code as number | null) ?? String(signal);
  });
  const spawnedProc: Spawned = {
    exited,
    output: () => output,
    gone: () => gone,
    kill: (signal) => {
      if (gone) return;
      try {
        process.kill(-proc.pid!, signal);
      } catch {
        // Exited meanwhile.
      }
    },
  };
  spawned.push(spawnedProc);
  return spawnedProc;
}

/** The keys in the effects file that start with prefix, one per side effect, in the order they ran. */
function keys(path: string, prefix: string): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((k) => k.startsWith(prefix));
}

async function api<T>(path: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

interface RunDetail {
  run: { id: string; workflow: string; status: string; totalSteps: number | null };
  counts: { committed: number };
}

async function untilRun(id: string, status: string, timeoutMs = 180_000): Promise<RunDetail> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const detail = await api<RunDetail>(`/api/v1/runs/${id}`);
    if (detail.run.status === status) return detail;
    if (Date.now() > deadline)
      throw new Error(`run ${id} is ${detail.run.status} after ${timeoutMs} ms, not ${status}`);
    await sleep(300);
  }
}

/** A stand-in for a model gateway: answers each POST after a moment, recording its Idempotency-Key header. */
async function recordingModel(): Promise<{ url: string; keys: string[]; prompts: string[]; close(): Promise<void> }> {
  const keys: string[] = [];
  const prompts: string[] = [];
  const server = createHttpServer(async (request: IncomingMessage, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    keys.push(String(request.headers['idempotency-key']));
    prompts.push((JSON.parse(body) as { prompt: string }).prompt);
    await sleep(50);
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ summary: 'ok' }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port: modelPort } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${modelPort}/v1/summarize`,
    keys,
    prompts,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port: free } = server.address() as { port: number };
      server.close(() => resolve(free));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
