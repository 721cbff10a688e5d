/**
 * Vitest's global setup: the package's build (dist/) made once, before any test file, when it is older than the
 * sources, and WAYBILL_BUILT=1 for every process the tests start. A spawned `waybill` then runs the bundles
 * instead of having tsx transpile and load the sources at each start, which the process suites pay a few
 * hundred times (bench/RESULTS.md). A worker given a workflows module still runs the sources (bin/entry.mjs).
 * WAYBILL_BUILT=0 in the environment keeps every bin on the sources.
 */
import { fileURLToPath } from 'node:url';
import { buildPackageIfStale } from '../../e2e/support/prepare';

export default function setup(): void {
  if (process.env.WAYBILL_BUILT === '0') return;
  buildPackageIfStale(fileURLToPath(new URL('../..', import.meta.url)));
  process.env.WAYBILL_BUILT = '1';
}
