/**
 * A run of 100,000 committed steps in the browser: what the page ships is bounded by design, not by the run.
 * The charts get at most 400 points (grouped by the database), the table 50 rows a page by keyset, the timeline
 * the last 50 events; paging, search and the charts' tooltip work. Sizes and counts are asserted, never times.
 */
import { expect, noChromium, test, uniqueId } from './support/test';
import { waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

const STEPS = 100_000;

test('a 100,000-step run: at most 400 chart points, 50 rows a page, a bounded page; paging, search and tooltips work', async ({
  page,
}) => {
  const prefix = uniqueId('big');
  const seeded = JSON.parse(
    await waybill([
      'seed-demo',
      '--runs',
      '1',
      '--steps',
      '1',
      '--big-run-steps',
      String(STEPS),
      '--prefix',
      prefix,
      '--json',
    ]),
  ) as { committed: number };
  expect(seeded.committed).toBe(STEPS); // the one other run is running, with nothing committed yet
  const id = `${prefix}-big`;

  const response = await page.goto(`/runs/${encodeURIComponent(id)}`);
  expect(response?.status()).toBe(200);
  // HTML and RSC payload together: a few hundred KiB whatever the run's length (100,000 points would be megabytes).
  expect((await response!.body()).length).toBeLessThan(400 * 1024);
  await expect(page.getByTestId('run-committed')).toContainText(/100,?000/);

  // The durations chart: grouped into at most 400 ranges, said in its description and drawn as such.
  const durations = page.getByTestId('chart-durations');
  await expect(durations).toContainText(/in \d+ ranges of the 100,000 steps/);
  const ranges = Number(/in (\d+) ranges/.exec((await durations.textContent())!)![1]);
  expect(ranges).toBeGreaterThan(100);
  expect(ranges).toBeLessThanOrEqual(400);
  const line = durations.locator('path.recharts-line-curve');
  await expect(line).toHaveCount(1);
  // A monotone curve is one cubic segment between each two points.
  const segments = ((await line.getAttribute('d')) ?? '').split('C').length - 1;
  expect(segments).toBe(ranges - 1);
  const cumulative = page.getByTestId('chart-cumulative').locator('path.recharts-line-curve');
  await expect(cumulative).toHaveCount(3);
  for (const path of await cumulative.all()) {
    // stepAfter draws two segments (across, then up) per point.
    expect(((await path.getAttribute('d')) ?? '').split(/[LH]/).length - 1).toBeLessThanOrEqual(2 * 400);
  }

  // The tooltip answers a hover over the grouped series.
  const box = (await durations.locator('svg.recharts-surface').boundingBox())!;
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await expect(durations.getByText(/^step \d+$/)).toBeVisible();

  // The whole document stays small: the table and the timeline are bounded pages.
  expect(await page.evaluate(() => document.querySelectorAll('*').length)).toBeLessThan(3000);
  const rows = page.getByTestId('committed-row');
  await expect(rows).toHaveCount(50);
  await expect(page.getByTestId('timeline').locator('li')).toHaveCount(50);

  // The next page starts where the first ended, read from the index after the last key shown.
  await expect(rows.first().locator('td').first()).toHaveText('0');
  await page.getByTestId('committed-next').click();
  await expect(page).toHaveURL(/\?after=/);
  await expect(rows.first().locator('td').first()).toHaveText('50');
  await expect(rows).toHaveCount(50);

  // Search finds one key among 100,000.
  await page.getByTestId('committed-search').fill(`${id}:step:99999`);
  await page.getByTestId('committed-search').press('Enter');
  await expect(rows).toHaveCount(1);
  await expect(rows.first().locator('td').first()).toHaveText('99999');
});
