/**
 * Keyset cursors, one codec for the pages, the HTTP API and the CLI: the last row of a page as
 * base64url-encoded JSON, opaque to clients. A page is read "after" the cursor, so rows inserted meanwhile
 * neither repeat nor shift the next page, and page 1,000 costs what page 1 does. Decoding answers null for
 * anything this codec did not write: the API refuses it (400), a page treats it as no cursor (its URL is
 * anyone's to edit).
 */
import { z } from 'zod';
import { storableText } from './text';

/** A row's id or key, only as text a store holds: a forged cursor's NUL would fail PostgreSQL's query (22021). */
const id = z.string().min(1).max(512).superRefine(storableText);
const runs = z.tuple([z.number().finite(), id]);
const committed = z.tuple([z.literal('k'), id]);
const claims = z.tuple([z.literal('c'), z.number().finite(), id]);

function encode(value: readonly unknown[]): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function decode<T>(raw: string, schema: z.ZodType<T>): T | null {
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(raw)) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The runs list, in (updatedAt, id) order. */
export const runsCursor = {
  encode: (row: { updatedAt: number; id: string }): string => encode([row.updatedAt, row.id]),
  decode(raw: string): { updatedAt: number; id: string } | null {
    const value = decode(raw, runs);
    return value && { updatedAt: value[0], id: value[1] };
  },
};

/** A run's committed rows, after a key (its step is looked up by the store). */
export const committedCursor = {
  encode: (idemKey: string): string => encode(['k', idemKey]),
  decode: (raw: string): string | null => decode(raw, committed)?.[1] ?? null,
};

/** Claims, in (claimedAt, idemKey) order. */
export const claimsCursor = {
  encode: (row: { claimedAt: number; idemKey: string }): string => encode(['c', row.claimedAt, row.idemKey]),
  decode(raw: string): { claimedAt: number; idemKey: string } | null {
    const value = decode(raw, claims);
    return value && { claimedAt: value[1], idemKey: value[2] };
  },
};
