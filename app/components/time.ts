/**
 * Times on the pages are epoch seconds from rows anyone may write (REAL columns, as in the article): an outside
 * client's `updated_at = 1e15` is a valid row, and `new Date(1e18).toISOString()` throws, which took the runs
 * list down for everyone. Every absolute time on a page goes through here.
 */

export const OUT_OF_RANGE = 'time out of range';

/** JavaScript dates span ±8.64e15 ms around 1970 (about ±275,000 years). */
const MAX_DATE_MS = 8.64e15;

export function inDateRange(epochSeconds: number): boolean {
  return Number.isFinite(epochSeconds) && Math.abs(epochSeconds * 1000) <= MAX_DATE_MS;
}

/** "2026-12-01T08:00:00.000Z", or "time out of range" for a time no date can hold. */
export function isoTime(epochSeconds: number): string {
  return inDateRange(epochSeconds) ? new Date(epochSeconds * 1000).toISOString() : OUT_OF_RANGE;
}
