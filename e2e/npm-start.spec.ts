/**
 * Issue 5, item 4: `npm start` itself (node bin/start.mjs, all defaults but the port and the database), on an
 * empty store of its own: the dashboard answers, its worker runs the demo run (and the python-agent demo, the
 * dashboard's address handed to it), and signals stop it cleanly.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test } from './support/test';
import { pidAlive as alive } from './support/waybill';

test.skip(noChromium, 'no chromium');

/** python3 on PATH, for the python-agent demo (clients/python is on its PYTHONPATH in a checkout). */
const python = spawnSync('python3', ['--version']).status === 0;
if (!python && process.env.CI === 'true') throw new Error('e2e/npm-start.spec.ts needs python3 under CI=true');

// The suite's servers hold the port and the one above it (the secured server): this one starts two above.
const PORT = Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 2;

interface Started {
  proc: ChildProcess;
  out: () => string;
  url: string;
  webPid: number;
  workerPid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function npmStart(databaseUrl: string): Promise<Started> {
  const proc = spawn(process.execPath, ['bin/start.mjs'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(PORT), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = once(proc, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  started.add(proc);
  void exited.then(() => started.delete(proc));
  await expect
    .poll(() => out, { timeout: 60_000, message: 'npm start prints its banner' })
    .toMatch(/Waybill is running at/);
  const pid = (what: string) => Number(new RegExp(`${what}, pid (\\d+)`).exec(out)?.[1]);
  return {
    proc,
    out: () => out,
    url: /Waybill is running at (\S+)/.exec(out)![1]!,
    webPid: pid('next start'),
    workerPid: pid('waybill worker'),
    exited,
  };
}

const started = new Set<ChildProcess>();

let dir: string;
test.beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-start-'));
});
test.afterAll(async () => {
  for (const proc of started) proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('npm start runs the dashboard, a worker and a demo run; SIGTERM stops both and exits 0; a dead child stops the other', async ({
  page,
}) => {
  const databaseUrl = `file:${join(dir, 'start.db')}`;
  const first = await npmStart(databaseUrl);
  expect(first.url).toBe(`http://127.0.0.1:${PORT}`);
  expect(first.out()).toContain('queued the demo run demo-agent-batch');
  expect(alive(first.webPid) && alive(first.workerPid)).toBe(true);

  // A newcomer sees the demo move within seconds.
  const run = new RunPage(page);
  await page.goto(`${first.url}/runs/demo-agent-batch`);
  await expect(run.status).toBeVisible();
  const seen = await run.stepsDone();
  await expect.poll(() => run.stepsDone(), { timeout: 20_000 }).toBeGreaterThan(seen);

  // The approval demo waits on the first page right away: the worker's other slots take it beside the long demo,
  // which is still running (it held npm start's one slot for minutes, issue 23).
  await page.goto(`${first.url}/runs/demo-review-and-send`);
  await expect(run.status).toHaveText(/waiting/, { timeout: 30_000 });
  const batch = await (await page.request.get(`${first.url}/api/v1/runs/demo-agent-batch`)).json();
  expect(batch.run.status).toBe('running');

  // The python-agent demo runs under npm start with nothing set: its worker was handed the dashboard's own
  // address (--url), and the program's output, written to the store by the worker, shows on the run page and
  // grows there without a reload. The demo is cancelled first, so the Python run is the worker's only one.
  if (python) {
    expect((await page.request.post(`${first.url}/api/v1/runs/demo-agent-batch/cancel`)).status()).toBe(200);
    const queued = await page.request.post(`${first.url}/api/v1/runs`, {
      data: { workflow: 'python-agent', id: 'py-demo', input: { steps: 12, modelMs: 400 } },
    });
    expect(queued.status(), await queued.text()).toBe(201);
    await page.goto(`${first.url}/runs/py-demo`);
    const log = page.getByTestId('program-log');
    await expect(log.locator('li[data-stream="worker"]').first()).toHaveText(
      /started python3 -m waybill_client\.example \(group \d+, user \S+, attempt 1\)$/,
      { timeout: 60_000 },
    );
    const lines = log.locator('li[data-seq]');
    const shown = await lines.count();
    await expect.poll(() => lines.count(), { timeout: 30_000 }).toBeGreaterThan(shown);
    await expect(log.locator('li[data-stream="stdout"]', { hasText: /step 11 executed$/ })).toBeVisible({
      timeout: 60_000,
    });
    await expect(log.locator('li').last()).toHaveText(/program exited with 0$/);
    await expect(run.status).toHaveText(/completed/);
  }

  first.proc.kill('SIGTERM');
  expect(await first.exited, first.out()).toEqual({ code: 0, signal: null });
  expect(first.out()).toContain('waybill: stopped');
  // A first start reads as one: next start's banner once for all the dashboard's processes, no telemetry notice.
  expect(first.out().match(/Ready in/g) ?? [], first.out()).toHaveLength(1);
  expect(first.out().match(/▲ Next\.js/g) ?? [], first.out()).toHaveLength(1);
  expect(first.out()).not.toMatch(/telemetry/i);
  expect(alive(first.webPid) || alive(first.workerPid)).toBe(false);

  // Again on the same store: it has runs now, so no second demo. The worker dies: the dashboard goes too.
  const second = await npmStart(databaseUrl);
  expect(second.out()).not.toContain('queued the demo run');
  process.kill(second.workerPid, 'SIGKILL');
  expect((await second.exited).code, second.out()).toBe(1);
  expect(second.out()).toContain('the worker (waybill worker) exited unexpectedly (killed by SIGKILL)');
  expect(alive(second.webPid)).toBe(false);
});
