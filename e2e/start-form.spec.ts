/**
 * Issue 5, item 6 (c): the start form refuses what is not a valid run, inline, and creates nothing.
 */
import { RunsPage } from './pages/runs-page';
import { StartRunPage } from './pages/start-run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { countRuns, runExists } from './support/waybill';

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
