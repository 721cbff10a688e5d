/**
 * Issue 14, items 1 and 3 in the browser: a step that failed twice and then succeeded shows three attempts,
 * with both errors and their numbers, on its page (reached from the run page's committed table); a rerun from
 * the run page's dialog moves the result to history, where the step page shows it superseded, by whom and why.
 * A takeover names both sides: whose lease passed on which attempt, and who took it over on which.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openStore } from '../lib/store/index';
import { ConfirmDialog } from './pages/confirm-dialog';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, queueRun, readDb, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Step 1 fails on its first two attempts (counted in a file), then answers. */
function writeFlakyModule(dir: string): string {
  const path = join(dir, 'flaky.mjs');
  writeFileSync(
    path,
    `import { readFileSync, writeFileSync } from 'node:fs';
import { defineWorkflow } from ${JSON.stringify(pathToFileURL(join(ROOT, 'lib/engine/workflow.ts')).href)};
import { z } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href)};

const tries = (file) => { try { return Number(readFileSync(file, 'utf8')); } catch { return 0; } };

export const flaky = defineWorkflow({
  name: 'e2e-flaky',
  input: z.strictObject({ tries: z.string() }),
  totalSteps: 3,
  maxAttempts: 5,
  async run(ctx, input) {
    const { step } = await ctx.load();
    for (let n = step; n < 3; n++) {
      await ctx.runOnce(ctx.runId + ':step:' + n, async () => {
        if (n === 1) {
          const done = tries(input.tries) + 1;
          writeFileSync(input.tries, String(done));
          if (done <= 2) throw new Error('model refused: attempt ' + done);
        }
        return { step: n, answer: 'fine' };
      }, { step: n });
      await ctx.saveProgress(n + 1, {});
    }
  },
});
`,
  );
  return path;
}

test('a step that failed twice shows three attempts with their errors; a rerun from the run page keeps the old result in history', async ({
  page,
}) => {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-flaky-'));
  try {
    const runId = uniqueId('e2e-flaky');
    const worker = await startWorker(uniqueId('e2e-flaky-worker'), { workflows: writeFlakyModule(dir) });
    await queueRun(runId, 'e2e-flaky', { tries: join(dir, 'tries') });
    const status = () =>
      readDb(
        (db) =>
          (db.prepare('SELECT status FROM runs WHERE id = ?').get(runId) as { status: string } | undefined)?.status,
      );
    await expect.poll(status, { timeout: 60_000 }).toBe('completed');

    const run = new RunPage(page);
    await run.goto(runId);
    await run.committed.getByTestId('step-link').filter({ hasText: /^1$/ }).click();
    await expect(page).toHaveURL(new RegExp(`/runs/${encodeURIComponent(runId)}/steps/1$`));
    const attempts = page.getByTestId('step-attempt');
    await expect(attempts).toHaveCount(3);
    await expect(attempts.getByTestId('attempt-outcome')).toHaveText(['failed', 'failed', 'committed']);
    // The numbers are the events' columns (the committing one is the next after the last failure): no text parsed.
    await expect(attempts.getByTestId('attempt-number')).toHaveText(['1 of 5', '2 of 5', '3']);
    await expect(attempts.nth(0).getByTestId('attempt-error')).toContainText('model refused: attempt 1');
    await expect(attempts.nth(1).getByTestId('attempt-error')).toContainText('model refused: attempt 2');
    await expect(attempts.nth(2).getByTestId('attempt-error')).toHaveText('');
    await expect(page.getByTestId('step-key')).toHaveText(`${runId}:step:1`);
    await expect(page.getByTestId('step-result-json')).toContainText('"answer": "fine"');
    await expect(page.getByTestId('copy-result')).toBeVisible();

    // Rerun from step 2 on the run page, with a reason: the first result stays readable on the step page.
    await run.goto(runId);
    await page.getByTestId('rewind-step').fill('2');
    await page.getByTestId('action-rerun').click();
    await new ConfirmDialog(page).confirm('e2e: the answer was wrong');
    await expect(page.getByTestId('rewind-message')).toContainText('1 results moved to history');
    await expect
      .poll(
        () =>
          readDb(
            (db) =>
              (
                db.prepare('SELECT attempts FROM runs WHERE id = ? AND status = ?').get(runId, 'completed') as
                  | { attempts: number }
                  | undefined
              )?.attempts,
          ),
        { timeout: 60_000 },
      )
      .toBe(2);
    await page.goto(`/runs/${encodeURIComponent(runId)}/steps/2`);
    await expect(page.getByTestId('step-history-entry')).toHaveCount(1);
    await expect(page.getByTestId('superseded')).toContainText('superseded by rerun 1');
    await expect(page.getByTestId('step-history')).toContainText('e2e: the answer was wrong');
    await worker.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a takeover names both sides on the step page: whose lease passed on which attempt, and who took it over', async ({
  page,
}) => {
  const runId = uniqueId('e2e-takeover');
  const key = `${runId}:step:0`;
  const store = await openStore(databaseUrl(), { synchronous: 'normal' });
  try {
    await store.createRun({ id: runId, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
    const claim = (worker: string, attempt: number, leaseMs: number) =>
      store.claim({
        idemKey: key,
        runId,
        token: `token-of-${worker}-0123456789`,
        workerId: worker,
        step: 0,
        attempt,
        leaseMs,
        claimTtlMs: 30_000,
      });
    // W1's second attempt froze: its lease of 1 ms passes, and W2 takes the step over on attempt 3.
    await claim('W1', 2, 1);
    await sleep(50);
    expect(await claim('W2', 1, 60_000)).toMatchObject({ kind: 'claimed', attempt: 3 });
    const commit = (worker: string, attempt: number) =>
      store.commit({
        idemKey: key,
        token: `token-of-${worker}-0123456789`,
        runId,
        resultJson: '{"answer":"from W2"}',
        step: 0,
        fingerprint: null,
        workerId: worker,
        durationMs: 12,
        attempt,
      });
    await commit('W2', 3);
    // W1 wakes up and tries to commit: fenced off, and said so.
    expect(await commit('W1', 2).catch((e: Error) => e.name)).toBe('LeaseLostError');
  } finally {
    await store.close();
  }
  await page.goto(`/runs/${encodeURIComponent(runId)}/steps/0`);
  const attempts = page.getByTestId('step-attempt');
  await expect(attempts.getByTestId('attempt-outcome')).toHaveText(['taken over', 'lease lost', 'committed']);
  await expect(attempts.getByTestId('attempt-number')).toHaveText(['2', '2', '3']);
  await expect(attempts.nth(0).getByTestId('attempt-error')).toHaveText(
    'lease of W1 (attempt 2) passed; taken over by W2 (attempt 3)',
  );
  await expect(attempts.nth(2)).toContainText('W2');
  expect(
    readDb((db) =>
      db
        .prepare(`SELECT outcome, worker_id AS worker, attempt, previous_worker_id AS previous, previous_attempt AS previousAttempt
          FROM step_events WHERE run_id = ? ORDER BY id`)
        .all(runId),
    ),
  ).toEqual([
    { outcome: 'expired', worker: 'W2', attempt: 3, previous: 'W1', previousAttempt: 2 },
    { outcome: 'lease_lost', worker: 'W1', attempt: 2, previous: null, previousAttempt: null },
  ]);
});
