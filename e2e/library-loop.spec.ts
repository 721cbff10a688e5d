/**
 * A user's own loop — a Checkpoint declaring its workflow and total, runAgent in a real process of its own
 * (test/fixtures/library-loop.ts) — steered from the dashboard: listed by name and total, paused from its
 * run page while a step is in hand, it finishes that step and stops before the next; resumed and started
 * again, it completes with every step run once. Cancelled likewise, it stops and does not start again.
 * Side effects are counted from the loop's own effects file.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LibraryLoopArgs } from '../test/fixtures/library-loop';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl } from './support/waybill';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../test/fixtures/library-loop.ts', import.meta.url));
const STEPS = 5;

/** The loop as its own process; `go()` lets a held step finish; `done` is its exit and last line. */
function startLoop(args: LibraryLoopArgs) {
  const proc = spawn(process.execPath, ['--import', 'tsx', FIXTURE, JSON.stringify(args)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const done = once(proc, 'close').then(([code]) => ({
    code: code as number | null,
    last: out.trim().split('\n').pop() ?? '',
    err,
  }));
  return {
    go: () => proc.stdin!.write('GO\n'),
    held: async (step: number) => expect.poll(() => out, { timeout: 60_000 }).toContain(`IN step=${step} `),
    done,
    kill: () => proc.kill('SIGKILL'),
  };
}

function perStep(file: string): number[] {
  const counts = new Array<number>(STEPS).fill(0);
  if (!existsSync(file)) return counts;
  for (const line of readFileSync(file, 'utf8').trim().split('\n').filter(Boolean))
    counts[Number(/^step=(\d+)/.exec(line)![1])]!++;
  return counts;
}

test.describe('a library loop steered from the dashboard', () => {
  test.skip(noChromium, 'chromium is not installed');

  test('paused from its run page it stops before its next step, and resumes after resume', async ({ page }) => {
    const id = uniqueId('e2e-loop');
    const effects = join(mkdtempSync(join(tmpdir(), 'waybill-e2e-loop-')), 'effects.log');
    const base: LibraryLoopArgs = {
      url: databaseUrl(),
      runId: id,
      workflow: 'my-summaries',
      steps: STEPS,
      workerId: 'laptop',
      effects,
    };
    const first = startLoop({ ...base, holdAt: { step: 2, until: 'go' } });
    try {
      await first.held(2);
      const runs = new RunsPage(page);
      await runs.goto();
      await expect(runs.status(id)).toHaveText(/running/);
      await expect(runs.row(id)).toContainText('my-summaries');
      await expect(runs.row(id).getByRole('progressbar')).toHaveAttribute('aria-valuemax', String(STEPS));

      const run = new RunPage(page);
      await run.goto(id);
      await expect(page.getByTestId('run-workflow')).toHaveText('my-summaries');
      await page.getByTestId('action-pause').click();
      await expect(run.status).toHaveText(/paused/);
      first.go();
      const stopped = await first.done;
      expect(stopped.last).toMatch(/^STOPPED RUN_PAUSED /);
      // The step in hand finished and was committed once; the next never started.
      expect(perStep(effects)).toEqual([1, 1, 1, 0, 0]);
      await page.reload();
      await expect(run.status).toHaveText(/paused/);
      expect(await run.stepsDone()).toBe(3);

      await page.getByTestId('action-resume').click();
      await expect(run.status).toHaveText(/queued/);
      const second = startLoop(base);
      expect((await second.done).last).toMatch(/^REPORT /);
      expect(perStep(effects)).toEqual([1, 1, 1, 1, 1]);
      await page.reload();
      await expect(run.status).toHaveText(/completed/);
      expect(await run.stepsDone()).toBe(STEPS);
    } finally {
      first.kill();
    }
  });

  test('cancelled from its run page it stops before its next step and does not start again', async ({ page }) => {
    const id = uniqueId('e2e-loop-cancel');
    const effects = join(mkdtempSync(join(tmpdir(), 'waybill-e2e-loop-')), 'effects.log');
    const base: LibraryLoopArgs = {
      url: databaseUrl(),
      runId: id,
      workflow: 'my-summaries',
      steps: STEPS,
      workerId: 'laptop',
      effects,
    };
    const first = startLoop({ ...base, holdAt: { step: 1, until: 'go' } });
    try {
      await first.held(1);
      const run = new RunPage(page);
      await run.goto(id);
      // Cancel asks first (app/components/confirm-action.tsx).
      await page.getByTestId('action-cancel').click();
      await new ConfirmDialog(page).confirm();
      await expect(run.status).toHaveText(/cancelled/);
      first.go();
      expect((await first.done).last).toMatch(/^STOPPED RUN_CANCELLED /);
      expect(perStep(effects)).toEqual([1, 1, 0, 0, 0]);
      expect((await startLoop(base).done).last).toMatch(/^STOPPED RUN_CANCELLED /);
      expect(perStep(effects)).toEqual([1, 1, 0, 0, 0]);
    } finally {
      first.kill();
    }
  });
});
