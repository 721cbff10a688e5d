/**
 * Issue 27, child runs: a child's page says whose child it is, a parent's page counts and lists its children,
 * and its "all children" link is the runs list filtered by parent, listing exactly them.
 */
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('a parent lists its children and links to the runs list of them; a child names its parent', async ({ page }) => {
  const parent = uniqueId('e2e-parent');
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    // A workflow no worker serves: the runs stay where the test puts them.
    const make = (id: string, extra: { parentRunId?: string; detached?: boolean } = {}) =>
      store.createRun({ id, workflow: 'nobody-serves-this', inputJson: '{}', totalSteps: 1, ...extra });
    await make(parent);
    await make(`${parent}:a`, { parentRunId: parent });
    await make(`${parent}:b`, { parentRunId: parent, detached: true });
    await store.actOnRun(`${parent}:a`, 'cancel', 'e2e');
    await make(uniqueId('e2e-stranger'));
  } finally {
    await store.close();
  }

  await page.goto(`/runs/${encodeURIComponent(parent)}`);
  const card = page.getByTestId('run-children');
  await expect(card.getByTestId('child-run')).toHaveCount(2);
  await expect(card.getByTestId('children-counts')).toContainText('cancelled 1');
  await expect(card.getByTestId('children-counts')).toContainText('queued 1');
  await expect(card.getByTestId('child-detached')).toHaveCount(1);

  await card.getByTestId('all-children').click();
  await expect(page.getByTestId('filter-parent')).toContainText(`Children of ${parent}`);
  await expect(page.locator('tr[data-testid^="run-row-"]')).toHaveCount(2);
  await expect(page.getByTestId(`run-row-${parent}:a`)).toBeVisible();
  await expect(page.getByTestId(`run-row-${parent}:b`)).toBeVisible();

  await page.goto(`/runs/${encodeURIComponent(`${parent}:b`)}`);
  await expect(page.getByTestId('child-of')).toHaveText(
    `Child of ${parent} (detached: it outlives the parent’s cancel)`,
  );
});
