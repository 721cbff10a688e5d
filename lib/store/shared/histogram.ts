/**
 * The one piece both metrics files share: a row of bucket counts (n, total, b0…bN, as their SQL names
 * them) turned into a DurationHistogram. Backend-free, so neither backend imports the other.
 */
import type { DurationHistogram } from '../contract';

export type HistogramRow = { n: number; total: number } & Record<string, number>;

export function toHistogram(row: HistogramRow | undefined, boundsMs: readonly number[]): DurationHistogram {
  return {
    boundsMs: [...boundsMs],
    counts: boundsMs.map((_, i) => Number(row?.[`b${i}`] ?? 0)),
    count: Number(row?.n ?? 0),
    sumMs: Number(row?.total ?? 0),
  };
}
