/**
 * The schedules page: a schedule added at run time is listed with its cron, time zone and next fire time; an
 * operator pauses it (the next fire time gives way to "paused") and resumes it, each in the audit log.
 */
import { expect, noChromium, test, uniqueId } from './support/test';
import { waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

test('lists a schedule with its next fire time, and pauses and resumes it', async ({ page }) => {
  const name = uniqueId('e2e-sched');
  await waybill([
    'schedule',
    'add',
    name,
    'agent-batch',
    '--cron',
    '0 0 3 * * *',
    '--tz',
    'Europe/Berlin',
    '--input',
    '{"count":1}',
  ]);
  await page.goto('/schedules');
  const row = page.getByTestId(`schedule-${name}`);
  await expect(row).toContainText('agent-batch');
  await expect(row).toContainText('Europe/Berlin');
  await expect(page.getByTestId(`schedule-next-${name}`)).toContainText(/^in \d+[smh]$/);

  await page.getByTestId(`schedule-pause-${name}`).click();
  await expect(page.getByTestId(`schedule-next-${name}`)).toContainText('paused');
  await page.getByTestId(`schedule-resume-${name}`).click();
  await expect(page.getByTestId(`schedule-next-${name}`)).toContainText(/^in \d+[smh]$/);

  await page.goto('/audit');
  for (const action of ['schedule-add', 'schedule-pause', 'schedule-resume']) {
    await expect(page.getByRole('row').filter({ hasText: name }).filter({ hasText: action })).toHaveCount(1);
  }
});

test('adds a schedule from the page, refusing a bad cron beside its field, and deletes it', async ({ page }) => {
  const name = uniqueId('e2e-form');
  await page.goto('/schedules');
  await page.getByTestId('schedule-add-open').click();
  await page.getByTestId('schedule-field-name').fill(name);
  await page.getByTestId('schedule-field-workflow').selectOption('agent-batch');
  await page.getByTestId('schedule-field-cron').fill('every night');
  await page.getByTestId('schedule-field-input').fill('{"count": 2}');
  await page.getByTestId('schedule-add-submit').click();
  await expect(page.getByTestId('schedule-error-cron')).toBeVisible();
  await expect(page.getByTestId(`schedule-${name}`)).toHaveCount(0);

  await page.getByTestId('schedule-field-cron').fill('0 30 4 * * *');
  await page.getByTestId('schedule-field-timeZone').fill('Asia/Tokyo');
  await page.getByTestId('schedule-add-submit').click();
  await expect(page.getByTestId('schedule-add-message')).toHaveText(`added schedule ${name}`);
  const row = page.getByTestId(`schedule-${name}`);
  await expect(row).toContainText('agent-batch');
  await expect(row).toContainText('Asia/Tokyo');
  await expect(row).toContainText('added by an operator');

  await page.getByTestId(`schedule-delete-${name}`).click();
  await page.getByTestId('confirm-reason').fill('moved to the hourly one');
  await page.getByTestId('confirm-submit').click();
  await expect(row).toHaveCount(0);

  await page.goto('/audit');
  for (const action of ['schedule-add', 'schedule-delete'])
    await expect(page.getByRole('row').filter({ hasText: name }).filter({ hasText: action })).toHaveCount(1);
});
