/**
 * Keyset cursors: the last row of a page, base64url-encoded JSON, opaque to clients. A page is read "after"
 * the cursor, so rows inserted meanwhile neither repeat nor shift the next page, and the cost of page 1,000
 * is the cost of page 1. A cursor that does not decode is a client bug, refused with 400 rather than
 * quietly restarting from the first page.
 */
import { z } from 'zod';
import { ApiError } from '../errors';

const runsCursor = z.tuple([z.number().finite(), z.string().min(1).max(512)]);
const committedCursor = z.tuple([z.literal('k'), z.string().min(1).max(512)]);
const claimsCursor = z.tuple([z.literal('c'), z.number().finite(), z.string().min(1).max(512)]);

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function decode<T>(raw: string, schema: z.ZodType<T>): T {
  try {
    if (!/^[A-Za-z0-9_-]{1,2048}$/.test(raw)) throw new Error('not base64url');
    return schema.parse(JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')));
  } catch {
    throw new ApiError('INVALID_INPUT', 'invalid query: cursor: not a cursor this API returned', { cursor: ['not a cursor this API returned'] });
  }
}

export const encodeRunsCursor = (row: { updatedAt: number; id: string }): string => encode([row.updatedAt, row.id]);

export function decodeRunsCursor(raw: string): { updatedAt: number; id: string } {
  const [updatedAt, id] = decode(raw, runsCursor);
  return { updatedAt, id };
}

export const encodeCommittedCursor = (idemKey: string): string => encode(['k', idemKey]);

export const decodeCommittedCursor = (raw: string): string => decode(raw, committedCursor)[1];

export const encodeClaimsCursor = (row: { claimedAt: number; idemKey: string }): string => encode(['c', row.claimedAt, row.idemKey]);

export function decodeClaimsCursor(raw: string): { claimedAt: number; idemKey: string } {
  const [, claimedAt, idemKey] = decode(raw, claimsCursor);
  return { claimedAt, idemKey };
}
