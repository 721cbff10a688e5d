/**
 * What both backends run: a fresh run id per round, so every step is a new key that claims, executes and
 * commits, and a side effect that costs nothing, so what is timed is the protocol.
 */
import type { Store } from '../lib/store/contract';
import type { Product } from './product';

export const sideEffect = (item: number): number => item;

export function inputs(steps: number): number[] {
  return Array.from({ length: steps }, (_, i) => i);
}

/** Round -1 is the discarded warm-up; a counting pass (untimed, bench/wal.ts) names its runs apart. */
export function runName(kind: 'product' | 'floor' | 'one-commit-floor', round: number, pass?: 'count'): string {
  const prefix = pass ? `${kind}-${pass}` : kind;
  return round < 0 ? `${prefix}-warmup` : `${prefix}-r${round}`;
}

/** The product as a caller uses it: runAgent over a Checkpoint, progress written with each commit. */
export async function productRound(
  product: Pick<Product, 'Checkpoint' | 'runAgent'>,
  store: Store,
  runId: string,
  items: readonly number[],
): Promise<void> {
  const report = await product.runAgent(items, new product.Checkpoint(store, runId), sideEffect);
  if (report.executed !== items.length) throw new Error(`product executed ${report.executed} of ${items.length} steps`);
}
