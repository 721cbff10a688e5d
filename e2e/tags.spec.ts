/**
 * Issue 27, tags and metadata: the runs page filters by them from its form (every tag, every key=value), the same
 * runs GET /api/v1/runs and `waybill runs` answer for that filter; a run's page shows its tags and metadata, each a
 * link to the runs that share it.
 */
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { StartRunPage } from './pages/start-run-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, runExists, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('the runs page filters by tags and metadata like the API and the CLI; a run page shows them', async ({
  page,
  request,
}) => {
  // Tags of this test's own, so the runs other specs leave in the store never match.
  const tag = uniqueId('e2e-tag');
  const customer = uniqueId('acme');
  const id = (name: string) => `${tag}-${name}`;
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    // A workflow no worker serves: the runs stay where the test puts them.
    const make = (name: string, tags: string[], metadata: Record<string, string>) =>
      store.createRun({ id: id(name), workflow: 'nobody-serves-this', inputJson: '{}', totalSteps: 1, tags, metadata });
    await make('a', [tag, 'env/prod'], { customer, tier: 'gold' });
    await make('b', [tag], { customer: `${customer}-other` });
    await make('c', ['env/prod'], { customer });
  } finally {
    await store.close();
  }
  const rows = page.locator('tr[data-testid^="run-row-"]');
  const listed = async () =>
    (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-testid')!.slice('run-row-'.length)))).sort();
  const elsewhere = async (query: string, flags: string[]) => {
    const api = (await (await request.get(`/api/v1/runs?${query}`)).json()) as { runs: { id: string }[] };
    const cli = JSON.parse(await waybill(['runs', ...flags, '--json'])) as { runs: { id: string }[] };
    return { api: api.runs.map((r) => r.id).sort(), cli: cli.runs.map((r) => r.id).sort() };
  };

  await page.goto('/');
  await page.getByTestId('filter-tags').fill(tag);
  await page.getByTestId('filter-submit').click();
  await expect(rows).toHaveCount(2);
  expect(await listed()).toEqual([id('a'), id('b')]);
  await expect(page.getByTestId(`run-row-${id('a')}`).getByTestId('run-row-tags')).toHaveText(
    `${tag}env/prodcustomer=${customer}tier=gold`,
  );
  expect(await elsewhere(`tag=${tag}`, ['--tag', tag])).toEqual({ api: [id('a'), id('b')], cli: [id('a'), id('b')] });

  await page.getByTestId('filter-meta-0').fill(`customer=${customer}`);
  await page.getByTestId('filter-submit').click();
  await expect(rows).toHaveCount(1);
  expect(await listed()).toEqual([id('a')]);
  expect(new URL(page.url()).searchParams.getAll('meta')).toEqual([`customer=${customer}`]);
  const both = await elsewhere(`tag=${tag}&meta=customer=${customer}`, [
    '--tag',
    tag,
    '--meta',
    `customer=${customer}`,
  ]);
  expect(both).toEqual({ api: [id('a')], cli: [id('a')] });
  // The filter stays in the form: its pair is a field of its own, and an empty one is there to add another.
  await expect(page.getByTestId('filter-meta-0')).toHaveValue(`customer=${customer}`);
  await expect(page.getByTestId('filter-meta-1')).toHaveValue('');

  // Only the metadata: the runs of that customer, with or without the tag.
  await page.getByTestId('filter-tags').fill('');
  await page.getByTestId('filter-submit').click();
  await expect(rows).toHaveCount(2);
  expect(await listed()).toEqual([id('a'), id('c')]);

  await page.goto(`/runs/${encodeURIComponent(id('a'))}`);
  const shown = page.getByTestId('run-tags');
  await expect(shown.getByTestId('run-tag')).toHaveText([tag, 'env/prod']);
  await expect(shown.getByTestId('run-meta')).toHaveText([`customer=${customer}`, 'tier=gold']);
  await shown.getByTestId('run-tag').filter({ hasText: tag }).click();
  await expect(page.getByTestId('filter-tags')).toHaveValue(tag);
  await expect(rows).toHaveCount(2);
  expect(await listed()).toEqual([id('a'), id('b')]);

  await page.goto(`/runs/${encodeURIComponent(id('b'))}`);
  await shown.getByTestId('run-meta').click();
  await expect(rows).toHaveCount(1);
  expect(await listed()).toEqual([id('b')]);
});

test('the start form takes tags and metadata, refuses a bad one beside them, and the run page shows them', async ({
  page,
}) => {
  const form = new StartRunPage(page);
  await form.goto();
  const id = uniqueId('e2e-tagged');
  await page.getByTestId('start-tags').fill('env/prod bad!tag');
  await page.getByTestId('start-metadata').fill('customer=acme\ntier = gold');
  await form.start({ workflow: 'agent-batch', input: '{"count": 1}', id });
  await expect(page.getByTestId('field-error-tags')).toContainText('tags.1: letters, digits');
  expect(runExists(id)).toBe(false);

  await page.getByTestId('start-tags').fill('env/prod team:a');
  await form.submit.click();
  await expect(page).toHaveURL(new RegExp(`/runs/${id}$`));
  await expect(page.getByTestId('run-tag')).toHaveText(['env/prod', 'team:a']);
  await expect(page.getByTestId('run-meta')).toHaveText(['customer=acme', 'tier=gold']);
});
