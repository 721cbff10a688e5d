/**
 * Issue 5, item 6 (c): the start form refuses what is not a valid run, inline, and creates nothing.
 * Issue 12, items 2 and 6: a user's own workflow, published by `waybill worker --workflows`, gets a form drawn
 * from its JSON Schema, is refused field by field, starts and moves under that worker, and once no worker
 * serves it, says so on the form, the runs list and the run page.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RunPage } from './pages/run-page';
import { RunsPage } from './pages/runs-page';
import { StartRunPage } from './pages/start-run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { countRuns, readDb, runExists, startWorker } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('bad JSON, a schema-invalid input and a bad id are shown inline, and no run is created', async ({ page }) => {
  const before = countRuns();
  const form = new StartRunPage(page);
  await form.goto();
  const tried: string[] = [];
  const attempt = async (input: string, id = uniqueId('e2e-refused')) => {
    tried.push(id);
    await form.start({ workflow: 'agent-batch', input, id });
  };

  await attempt('{"count": 40, "latencyMs": ');
  await expect(form.fieldError('input')).toBeVisible();
  await expect(form.fieldError('input')).toContainText(/JSON/i);
  await expect(form.error).toBeVisible();

  await attempt('{"count": -5}');
  await expect(form.fieldError('input')).toContainText('at least 1');

  await attempt('{"count": 3, "items": ["a", "b"]}');
  await expect(form.fieldError('input')).toContainText('not both');

  await attempt('{"count": 3, "latencyMs": 10}', 'has spaces in it');
  await expect(form.fieldError('id')).toBeVisible();
  await expect(form.error).toBeVisible();

  await expect(page).toHaveURL(/\/runs\/new$/);
  expect(countRuns()).toBe(before);
  for (const id of tried) expect(runExists(id), id).toBe(false);

  const runs = new RunsPage(page);
  await runs.goto();
  for (const id of tried) await expect(runs.row(id)).toHaveCount(0);
});

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A user's module, as a user writes it: defineWorkflow and zod, one side effect per step appended to a file. */
function writeUserModule(dir: string): string {
  const path = join(dir, 'workflows.mjs');
  writeFileSync(
    path,
    `import { appendFileSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineWorkflow } from ${JSON.stringify(pathToFileURL(join(ROOT, 'lib/engine/workflow.ts')).href)};
import { z } from ${JSON.stringify(pathToFileURL(join(ROOT, 'node_modules/zod/index.js')).href)};

const readGate = (log) => { try { return readFileSync(log + '.gate', 'utf8'); } catch { return '0'; } };

export const crawl = defineWorkflow({
  name: 'e2e-crawl',
  description: 'Crawls pages, one fetch per step.',
  version: 'e2e-1',
  input: z.strictObject({
    pages: z.number().int().min(1).max(200).describe('how many pages to fetch'),
    log: z.string().min(1).describe('where each fetch is recorded'),
    delayMs: z.number().int().min(0).max(5000).default(0),
    politeness: z.enum(['gentle', 'brisk']).default('gentle'),
    followLinks: z.boolean().default(true),
    seeds: z.array(z.string()).default([]),
  }),
  totalSteps: (input) => input.pages,
  async run(ctx, input) {
    const { step } = await ctx.load();
    for (let n = step; n < input.pages; n++) {
      await ctx.runOnce(ctx.runId + ':step:' + n, async ({ idempotencyKey, signal }) => {
        // The test lets steps through by writing how many may run to <log>.gate: progress it can count, not race.
        while (Number(readGate(input.log)) <= n) await sleep(50, undefined, { signal });
        await sleep(input.delayMs, undefined, { signal });
        appendFileSync(input.log, idempotencyKey + '\\n');
        return { page: n };
      }, { step: n });
      await ctx.saveProgress(n + 1, { fetched: n + 1 });
    }
  },
});
`,
  );
  return path;
}

test('a user workflow: fields from its schema, a wrong field refused by name, a run that moves, then "no live worker"', async ({
  page,
}) => {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-e2e-user-'));
  try {
    const log = join(dir, 'fetches.log');
    const worker = await startWorker(uniqueId('e2e-user-worker'), { workflows: writeUserModule(dir) });
    const form = new StartRunPage(page);
    await page.goto('/runs/new?workflow=e2e-crawl');
    await expect(form.workflow).toHaveValue('e2e-crawl');
    await expect(page.getByTestId('start-description')).toHaveText('Crawls pages, one fetch per step.');
    await expect(form.noWorker).toHaveCount(0);

    // Fields drawn from the JSON Schema: types, bounds, defaults shown (and not required), enum, boolean.
    await expect(form.field('pages')).toHaveAttribute('type', 'number');
    await expect(form.field('pages')).toHaveAttribute('min', '1');
    await expect(form.field('pages')).toHaveAttribute('max', '200');
    await expect(form.field('pages')).toHaveAttribute('aria-required', 'true');
    await expect(page.locator(`label[for="${await form.field('pages').getAttribute('id')}"]`)).toContainText(
      '(required)',
    );
    await expect(form.field('delayMs')).toHaveValue('0');
    await expect(form.field('delayMs')).not.toHaveAttribute('aria-required', 'true');
    await expect(page.locator(`label[for="${await form.field('delayMs').getAttribute('id')}"]`)).toContainText(
      '(optional)',
    );
    await expect(form.field('politeness')).toHaveJSProperty('tagName', 'SELECT');
    await expect(form.field('politeness').locator('option')).toHaveText(['(default: gentle)', 'gentle', 'brisk']);
    await expect(form.field('followLinks')).toBeChecked();
    await expect(form.field('seeds')).toHaveText('[]');
    await expect(page.getByTestId('start-fields').getByText('how many pages to fetch')).toBeVisible();

    // A wrong field: refused by the server under that field, nothing created.
    const before = countRuns();
    await form.field('pages').fill('0');
    await form.field('log').fill(log);
    await expect(form.input).toHaveValue(/"pages": 0/);
    const refusedId = uniqueId('e2e-user-refused');
    await form.id.fill(refusedId);
    await form.submit.click();
    await expect(form.fieldError('input.pages')).toHaveText('must be at least 1');
    await expect(form.error).toBeVisible();
    await expect(page).toHaveURL(/\/runs\/new/);
    expect(countRuns()).toBe(before);
    expect(runExists(refusedId)).toBe(false);

    // Right input: the run starts, and moves under the worker as the test lets its steps through.
    const gate = (steps: number) => writeFileSync(`${log}.gate`, String(steps));
    gate(0);
    await form.field('pages').fill('12');
    await form.field('delayMs').fill('250');
    await form.field('politeness').selectOption('brisk');
    const runId = uniqueId('e2e-user-run');
    await form.id.fill(runId);
    await form.submit.click();
    await expect(page).toHaveURL(new RegExp(`/runs/${runId}$`));
    const run = new RunPage(page);
    await expect(run.status).toHaveText(/running/, { timeout: 30_000 });
    await expect.poll(() => run.stepsDone(), { timeout: 60_000 }).toBe(0);
    gate(3);
    await expect.poll(() => run.stepsDone(), { timeout: 60_000 }).toBe(3);
    // The worker set the total from its own totalSteps function: the bar has an end.
    await expect(run.progress.getByRole('progressbar')).toHaveAttribute('aria-valuemax', '12');
    gate(7);
    await expect.poll(() => run.stepsDone(), { timeout: 60_000 }).toBe(7);
    gate(12);
    await expect(run.status).toHaveText(/completed/, { timeout: 60_000 });
    const stored = readDb(
      (db) => db.prepare('SELECT input_json FROM runs WHERE id = ?').get(runId) as { input_json: string },
    );
    expect(JSON.parse(stored.input_json)).toEqual({
      pages: 12,
      log,
      delayMs: 250,
      politeness: 'brisk',
      followLinks: true,
      seeds: [],
    });

    // The worker goes: the workflow stays listed, marked; a run of it waits, and says for what.
    await worker.stop();
    const executed = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(executed.sort()).toEqual(Array.from({ length: 12 }, (_, n) => `${runId}:step:${n}`).sort());
    await page.goto('/runs/new?workflow=e2e-crawl');
    await expect(form.workflow.locator('option:checked')).toHaveText('e2e-crawl (no live worker)');
    await expect(form.noWorker).toContainText('No live worker serves e2e-crawl');
    await form.field('pages').fill('3');
    await form.field('log').fill(log);
    const waitingId = uniqueId('e2e-user-waiting');
    await form.id.fill(waitingId);
    await form.submit.click();
    await expect(page).toHaveURL(new RegExp(`/runs/${waitingId}$`));
    await expect(run.status).toHaveText(/queued/);
    // No worker at all, or live ones that serve other workflows: either way the run says which.
    const why =
      /^(no worker is alive: start one \(npx waybill worker\) and it takes this run|no live worker serves e2e-crawl \(.*\))$/;
    await expect(page.getByTestId('run-queued-reason')).toHaveText(new RegExp(`^Queued: ${why.source.slice(1)}`));
    const runs = new RunsPage(page);
    await runs.goto();
    await expect(runs.queuedReason(waitingId)).toHaveText(why);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
