/**
 * Issue 26, budgets: the run page shows what a run has spent of its budget, and an operator sets the budget
 * there; a wrong amount is refused in the budget rule's words and changes nothing, a good one is audited.
 */

import type { AuditStore, RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { RunPage } from './pages/run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb } from './support/waybill';

test.skip(noChromium, 'no chromium');

type FullStore = Store & RunStore & AuditStore;

const budgetOf = (id: string) =>
  readDb(
    (db) =>
      (db.prepare('SELECT budget_usd FROM runs WHERE id = ?').get(id) as { budget_usd: number | null } | undefined)
        ?.budget_usd,
  );
const auditOf = (target: string) =>
  readDb((db) => db.prepare('SELECT action, detail FROM audit WHERE target = ? ORDER BY id').all(target)) as {
    action: string;
    detail: string | null;
  }[];

test('the run page shows spend of budget and sets the budget, refusing a wrong amount', async ({ page }) => {
  const runId = uniqueId('e2e-budget-run');
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as FullStore;
  try {
    // A workflow no worker serves: the run stays where the test puts it.
    await store.createRun({ id: runId, workflow: 'nobody-serves-this', inputJson: '{}', totalSteps: 2, budgetUsd: 1 });
    await store.actOnRun(runId, 'pause', 'e2e');
  } finally {
    await store.close();
  }
  const run = new RunPage(page);
  await run.goto(runId);
  await expect(page.getByTestId('run-budget-spent')).toHaveText('$0');
  await expect(page.getByTestId('run-budget-limit')).toHaveText('$1');

  await page.getByTestId('run-budget-input').fill('abc');
  await page.getByTestId('run-budget-submit').click();
  await expect(page.getByTestId('run-budget-message')).toHaveText('budget must be a number of US dollars');
  expect(budgetOf(runId)).toBe(1);

  await page.getByTestId('run-budget-input').fill('5');
  await page.getByTestId('run-budget-submit').click();
  await expect(page.getByTestId('run-budget-message')).toHaveText('budget set to $5; resume the run to continue');
  await expect(page.getByTestId('run-budget-limit')).toHaveText('$5');
  expect(budgetOf(runId)).toBe(5);
  expect(auditOf(runId)).toEqual([{ action: 'budget', detail: 'budget $1 → $5' }]);
});
