/**
 * The secured server (both role tokens, its own SQLite file): its address, signing in through the login page,
 * seeding through the store API, and a read-only snapshot of every table to prove a refused request wrote
 * nothing.
 */

import { type BrowserContext, expect, type Page } from '@playwright/test';
import Database from 'better-sqlite3';
import type { AuditStore, RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { E2E_OPERATOR_TOKEN, E2E_VIEWER_TOKEN } from './prepare';

export { E2E_OPERATOR_TOKEN, E2E_VIEWER_TOKEN };

/** prepare.ts puts the secured server one port above the suite's own. */
export const securedURL = `http://127.0.0.1:${Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 1}`;

export function securedDatabaseUrl(): string {
  const url = process.env.WAYBILL_E2E_SECURED_DATABASE_URL;
  if (!url) throw new Error('WAYBILL_E2E_SECURED_DATABASE_URL is not set: run the suite through playwright.config.ts');
  return url;
}

export type FullStore = Store & RunStore & AuditStore;

/** The store the secured server uses, opened by the test as another client would (close it after). */
export async function openSecuredStore(): Promise<FullStore> {
  return (await openStore(securedDatabaseUrl(), { synchronous: 'normal' })) as FullStore;
}

/** Reads the secured database file directly, read-only. */
export function readSecured<T>(fn: (db: Database.Database) => T): T {
  const db = new Database(securedDatabaseUrl().slice('file:'.length), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const TABLES = ['runs', 'progress', 'committed', 'claims', 'step_events', 'audit', 'workers'];

/** Every row of every table, as text: equal before and after means nothing was written. */
export function snapshot(): string {
  return readSecured((db) =>
    JSON.stringify(TABLES.map((t) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY rowid`).all()])),
  );
}

/** Signs in through the login page and waits to land where `next` said. */
export async function signIn(page: Page, token: string, options: { name?: string; next?: string } = {}): Promise<void> {
  await page.goto(`${securedURL}/login${options.next ? `?next=${encodeURIComponent(options.next)}` : ''}`);
  await page.getByTestId('login-token').fill(token);
  if (options.name !== undefined) await page.getByTestId('login-name').fill(options.name);
  await page.getByTestId('login-submit').click();
  await expect(page.getByTestId('session-who')).toBeVisible();
}

/** The session cookie a context holds, as a Cookie header value. */
export async function sessionCookie(context: BrowserContext): Promise<string> {
  const cookie = (await context.cookies(securedURL)).find((c) => c.name === 'waybill_session');
  if (!cookie) throw new Error('no waybill_session cookie in this context');
  return `waybill_session=${cookie.value}`;
}

/** Polls the store until the claim's lease has passed by its clock (leases of a millisecond: no sleeping on a guess). */
export async function orphanClaim(store: FullStore, runId: string, idemKey: string): Promise<void> {
  const outcome = await store.claim({
    idemKey,
    runId,
    token: `t-${idemKey}`,
    workerId: 'gone-worker',
    step: 0,
    attempt: 1,
    leaseMs: 1,
    claimTtlMs: 30_000,
  });
  expect(outcome.kind).toBe('claimed');
  await expect
    .poll(async () =>
      (await store.listClaims({ orphanedOnly: true, claimTtlMs: 30_000 })).some((c) => c.idemKey === idemKey),
    )
    .toBe(true);
}
