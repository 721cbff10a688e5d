/**
 * A JSON text past WAYBILL_MAX_BODY_BYTES typed into a dashboard form. Past Next.js's own limit for an action's
 * body (next.config.js, a quarter above) the server answers 413 without reading it, which the page can only show
 * as "Something went wrong", the text lost. So each form refuses such a text itself, under its field, in the
 * server's words, and keeps it: the claims page's resolve form and the schedules page's add form here, the start
 * form in security.spec.ts.
 */
import type { RunStore, Store } from '../lib/store/contract';
import { openStore } from '../lib/store/index';
import { ClaimsPage } from './pages/claims-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb, waybill } from './support/waybill';

test.skip(noChromium, 'no chromium');

/** Three times the default limit: far past Next.js's 1.25 MiB too. */
const huge = (fill: string) => JSON.stringify({ summary: fill.repeat(3 * 1024 * 1024) });
const refusal = (text: string) =>
  `is ${text.length.toLocaleString('en-US')} bytes: the limit is 1,048,576 bytes (WAYBILL_MAX_BODY_BYTES)`;

async function withStore<T>(fn: (store: Store & RunStore) => Promise<T>): Promise<T> {
  const store = (await openStore(databaseUrl(), { synchronous: 'normal' })) as Store & RunStore;
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** What resolving the claim would change: its claim row, a committed row, its run's events, an audit line. */
const claimState = (runId: string, key: string) =>
  readDb((db) => ({
    claim: db.prepare('SELECT token, attempt, lease_expires_at FROM claims WHERE idem_key = ?').all(key),
    committed: db.prepare('SELECT count(*) AS n FROM committed WHERE idem_key = ?').get(key),
    events: db.prepare('SELECT count(*) AS n FROM step_events WHERE run_id = ?').get(runId),
    audit: db.prepare('SELECT count(*) AS n FROM audit WHERE target = ?').get(key),
  }));

test('a result past the body limit is refused under the field on /claims, kept, and nothing is resolved', async ({
  page,
}) => {
  const runId = uniqueId('e2e-huge-result');
  const key = `${runId}:step:0`;
  await withStore(async (store) => {
    const outcome = await store.claim({
      idemKey: key,
      runId,
      token: `t-${key}`,
      workerId: 'gone-worker',
      step: 0,
      attempt: 1,
      leaseMs: 1,
      claimTtlMs: 30_000,
    });
    expect(outcome.kind).toBe('claimed');
    await expect
      .poll(async () =>
        (await store.listClaims({ orphanedOnly: true, claimTtlMs: 30_000 })).some((c) => c.idemKey === key),
      )
      .toBe(true);
  });
  const before = claimState(runId, key);
  expect(before.claim).toHaveLength(1);

  const claims = new ClaimsPage(page);
  await claims.goto();
  await expect(claims.orphaned(key)).toBeVisible();
  const result = huge('y');
  await claims.resolve(key, result);

  const row = claims.row(key);
  await expect(row.getByTestId('field-error-result')).toHaveText(refusal(result));
  await expect(row.getByTestId('resolve-result')).toHaveAttribute('aria-invalid', 'true');
  expect(await row.getByTestId('resolve-result').inputValue()).toBe(result);
  await expect(page.getByTestId('error-boundary')).toHaveCount(0);
  await expect(claims.orphaned(key)).toBeVisible();
  expect(claimState(runId, key)).toEqual(before);

  // The form still works, and the refusal goes with the next send.
  await row.getByTestId('resolve-result').fill('{"sent": true}');
  await row.getByTestId('resolve-submit').click();
  await expect(claims.message).toContainText(/resolved/i);
  await expect(claims.row(key)).toHaveCount(0);
  expect(claimState(runId, key).committed).toEqual({ n: 1 });
});

test('a schedule input past the body limit is refused under the field, kept, and nothing is added', async ({
  page,
}) => {
  const name = uniqueId('e2e-huge-sched');
  const schedules = () =>
    readDb((db) => db.prepare('SELECT count(*) AS n FROM schedules WHERE name = ?').get(name)) as { n: number };
  await page.goto('/schedules');
  await page.getByTestId('schedule-add-open').click();
  await page.getByTestId('schedule-field-name').fill(name);
  await page.getByTestId('schedule-field-workflow').selectOption('agent-batch');
  await page.getByTestId('schedule-field-cron').fill('0 30 4 * * *');
  const input = huge('z');
  await page.getByTestId('schedule-field-input').fill(input);
  await page.getByTestId('schedule-add-submit').click();

  await expect(page.getByTestId('schedule-error-input')).toHaveText(refusal(input));
  expect(await page.getByTestId('schedule-field-input').inputValue()).toBe(input);
  await expect(page.getByTestId('error-boundary')).toHaveCount(0);
  await expect(page.getByTestId(`schedule-${name}`)).toHaveCount(0);
  expect(schedules()).toEqual({ n: 0 });

  await page.getByTestId('schedule-field-input').fill('{"count": 1}');
  await page.getByTestId('schedule-add-submit').click();
  await expect(page.getByTestId('schedule-add-message')).toHaveText(`added schedule ${name}`);
  await expect(page.getByTestId('schedule-error-input')).toHaveCount(0);
  expect(schedules()).toEqual({ n: 1 });
  await waybill(['schedule', 'delete', name]);
});
