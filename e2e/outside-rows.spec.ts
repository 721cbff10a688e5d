/**
 * Issue 11, item 14: rows an outside client may write (the article's tables, by raw SQL, as its Python class
 * would) must not break a page for everyone. Times far out of any date's range, JSON nested 50,000 deep and a
 * run with 20,000 claims: every page and API read answers 200, says what it could not show, and stays small.
 */
import Database from 'better-sqlite3';
import { ClaimsPage } from './pages/claims-page';
import { expect, noChromium, test, uniqueId } from './support/test';
import { databaseUrl, readDb } from './support/waybill';

test.skip(noChromium, 'no chromium');

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A write connection to the suite's database, as an outside client has. */
function writeDb(fn: (db: Database.Database) => void): void {
  const db = new Database(databaseUrl().slice('file:'.length), { fileMustExist: true });
  db.pragma('busy_timeout = 10000');
  try {
    fn(db);
  } finally {
    db.close();
  }
}

function removeRuns(ids: string[]): void {
  writeDb((db) => {
    for (const table of ['progress', 'committed', 'claims', 'step_events', 'runs']) {
      const column = table === 'runs' ? 'id' : 'run_id';
      for (const id of ids) db.prepare(`DELETE FROM ${table} WHERE ${column} = ?`).run(id);
    }
  });
}

test('times out of range, JSON 50,000 deep and 20,000 claims: pages and API answer 200 with a note, bounded', async ({
  page,
  request,
}) => {
  test.setTimeout(240_000);
  const timeRun = uniqueId('e2e-outside-time');
  const deepRun = uniqueId('e2e-outside-deep');
  const bigRun = uniqueId('e2e-outside-claims');
  const now = Date.now() / 1000;
  writeDb((db) => {
    db.prepare('INSERT INTO progress(run_id, step, state_json, updated_at) VALUES (?, 1, ?, ?)').run(
      timeRun,
      '{}',
      1e15,
    );
    db.prepare('INSERT INTO committed(idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)').run(
      `${timeRun}:step:0`,
      timeRun,
      '{"ok":true}',
      -1e15,
    );
    db.prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)').run(
      `${timeRun}:step:1`,
      timeRun,
      1e15,
    );
    db.prepare('INSERT INTO progress(run_id, step, state_json, updated_at) VALUES (?, 1, ?, ?)').run(
      deepRun,
      deep(50_000),
      now,
    );
    db.prepare('INSERT INTO committed(idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)').run(
      `${deepRun}:step:0`,
      deepRun,
      deep(50_000),
      now,
    );
    const claim = db.prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 20_000; i++) claim.run(`${bigRun}:item:${String(i).padStart(5, '0')}`, bigRun, now);
    })();
  });
  try {
    // The runs list: updated_at = 1e15 made it the error page for everyone (toISOString threw).
    const list = await request.get('/');
    expect(list.status()).toBe(200);
    const listHtml = await list.text();
    expect(listHtml).toContain(timeRun);
    expect(listHtml).toContain('time out of range');
    expect(listHtml).not.toContain('data-testid="error-boundary"');

    // The run page with out-of-range times in its progress, committed row and claim.
    const timePage = await request.get(`/runs/${timeRun}`);
    expect(timePage.status()).toBe(200);
    const timeHtml = await timePage.text();
    expect(timeHtml).toContain('time out of range');
    expect(timeHtml).not.toContain('data-testid="error-boundary"');
    for (const path of ['/claims', '/workers', '/audit']) {
      const r = await request.get(path);
      expect(r.status(), path).toBe(200);
      expect(await r.text(), path).not.toContain('data-testid="error-boundary"');
    }
    expect((await request.get(`/api/v1/runs/${timeRun}`)).status()).toBe(200);

    // JSON 50,000 deep: the committed endpoint was a 500 for good. Now 200, the value left out with a note.
    const committed = await request.get(`/api/v1/runs/${deepRun}/committed`);
    expect(committed.status()).toBe(200);
    const [row] = (await committed.json()).committed;
    expect(row).toMatchObject({
      key: `${deepRun}:step:0`,
      result: null,
      resultTruncated: expect.stringMatching(/^nested 50,000 levels deep, more than the 64/),
    });
    const runAnswer = await request.get(`/api/v1/runs/${deepRun}`);
    expect(runAnswer.status()).toBe(200);
    expect((await runAnswer.json()).progress).toMatchObject({
      state: null,
      stateTruncated: expect.stringContaining('nested 50,000 levels deep'),
    });
    // The page shows the stored text, not re-indented, with the note.
    await page.goto(`/runs/${deepRun}`);
    await expect(page.getByTestId('error-boundary')).toHaveCount(0);
    await expect(page.getByTestId('json-note').first()).toHaveText(
      'Nested 50,000 levels deep (more than 64): shown as stored, not re-indented.',
    );

    // 20,000 claims on one run: a 20 MB page and a 4.3 MB answer. Now a bounded list and the count.
    const bigPage = await request.get(`/runs/${bigRun}`);
    expect(bigPage.status()).toBe(200);
    const bigHtml = await bigPage.text();
    console.log(`run page with 20,000 claims: ${bigHtml.length.toLocaleString('en-US')} characters`);
    expect(bigHtml.length).toBeLessThan(1_000_000);
    await page.goto(`/runs/${bigRun}`);
    await expect(page.getByTestId('claim-item')).toHaveCount(100);
    await expect(page.getByTestId('claims-more')).toContainText('The oldest 100 of 20,000 claims');
    const bigApi = await request.get(`/api/v1/runs/${bigRun}`);
    expect(bigApi.status()).toBe(200);
    const bigText = await bigApi.text();
    console.log(`GET /api/v1/runs/{id} with 20,000 claims: ${bigText.length.toLocaleString('en-US')} characters`);
    expect(bigText.length).toBeLessThan(100_000);
    const big = JSON.parse(bigText);
    expect(big.claims).toHaveLength(100);
    expect(big.counts).toMatchObject({ claims: 20_000 });
    // The rest pages on through the claims endpoint: every claim exactly once.
    const seen = new Set<string>(big.claims.map((c: { key: string }) => c.key));
    let cursor: string | null = big.claimsNextCursor;
    while (cursor) {
      const next = await (await request.get(`/api/v1/claims?runId=${bigRun}&limit=500&cursor=${cursor}`)).json();
      for (const c of next.claims) seen.add(c.key);
      cursor = next.nextCursor;
    }
    expect(seen.size).toBe(20_000);
  } finally {
    removeRuns([timeRun, deepRun, bigRun]);
  }
});

test('the resolve form refuses JSON nested deeper than the API accepts, and commits nothing', async ({ page }) => {
  const runId = uniqueId('e2e-outside-resolve');
  const key = `${runId}:step:0`;
  // An outside client's claim from long ago: orphaned, and first on the claims page.
  writeDb((db) =>
    db
      .prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)')
      .run(key, runId, Date.now() / 1000 - 30 * 86_400),
  );
  try {
    const claims = new ClaimsPage(page);
    await claims.goto();
    await expect(claims.orphaned(key)).toBeVisible();
    await claims.resolve(key, `{"a":${deep(5_000)}}`);
    await expect(claims.row(key).getByTestId('field-error-result')).toHaveText(
      'nests 5,001 levels deep: the limit is 64',
    );
    expect(readDb((db) => db.prepare('SELECT count(*) AS n FROM committed WHERE idem_key = ?').get(key))).toEqual({
      n: 0,
    });
    // Within the limit it resolves.
    await claims
      .row(key)
      .getByTestId('resolve-result')
      .fill(`{"a":${deep(63)}}`);
    await claims.row(key).getByTestId('resolve-submit').click();
    await expect(claims.message).toContainText(/resolved/i);
    expect(readDb((db) => db.prepare('SELECT source FROM committed WHERE idem_key = ?').get(key))).toEqual({
      source: 'manual',
    });
  } finally {
    removeRuns([runId]);
  }
});
