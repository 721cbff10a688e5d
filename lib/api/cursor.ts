/**
 * Keyset cursors: the last row of a page, base64url-encoded JSON, opaque to clients (lib/domain/cursor.ts). A page is read "after"
 * the cursor, so rows inserted meanwhile neither repeat nor shift the next page, and the cost of page 1,000
 * is the cost of page 1. A cursor that does not decode is a client bug, refused with 400 rather than
 * quietly restarting from the first page.
 */

import { claimsCursor, committedCursor, runsCursor } from '../domain/cursor';
import { ApiError } from '../errors';

/** The codec is lib/domain/cursor.ts's, shared with the pages; a cursor it did not write is refused here. */
function refuse(): never {
  throw new ApiError('INVALID_INPUT', 'invalid query: cursor: not a cursor this API returned', {
    cursor: ['not a cursor this API returned'],
  });
}

export const encodeRunsCursor = runsCursor.encode;

export const decodeRunsCursor = (raw: string): { updatedAt: number; id: string } => runsCursor.decode(raw) ?? refuse();

export const encodeCommittedCursor = committedCursor.encode;

export const decodeCommittedCursor = (raw: string): string => committedCursor.decode(raw) ?? refuse();

export const encodeClaimsCursor = claimsCursor.encode;

export const decodeClaimsCursor = (raw: string): { claimedAt: number; idemKey: string } =>
  claimsCursor.decode(raw) ?? refuse();
