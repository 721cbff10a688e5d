/**
 * Vitest's global setup: the package's build (dist/) made once, before any test file, when it is older than the
 * sources, and WAYBILL_BUILT=1 for every process the tests start. A spawned `waybill` then runs the bundles
 * instead of having tsx transpile and load the sources at each start, which the process suites pay a few
 * hundred times (bench/RESULTS.md). A worker given a workflows module still runs the sources (bin/entry.mjs).
 *
 * The crash fixtures (test/fixtures/*.ts, started by spawnFixture) are bundled the same way, each with the lib/
 * sources it imports, into a folder of this run's own, removed when it ends: under tsx's hooks a fixture's start
 * cost its process about 0.9 CPU-s, a bundle about 0.4. spawnFixture runs the bundle when WAYBILL_TEST_FIXTURES
 * names the folder. A folder per run, since one shared folder emptied by each run's start took the bundles from
 * under another run's tests (two engineers' runs in one checkout).
 *
 * WAYBILL_BUILT=0 in the environment keeps every bin and fixture on the sources.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { buildPackageIfStale } from '../../e2e/support/prepare';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Two levels under the root, as test/fixtures is: a fixture's own `../..` names the root from either. */
const FIXTURES_DIR = join(ROOT, '.tmp', `test-fixtures-${process.pid}`);

export default function setup(): (() => void) | undefined {
  if (process.env.WAYBILL_BUILT === '0') return;
  buildPackageIfStale(ROOT);
  process.env.WAYBILL_BUILT = '1';
  bundleFixtures();
  process.env.WAYBILL_TEST_FIXTURES = FIXTURES_DIR;
  return () => rmSync(FIXTURES_DIR, { recursive: true, force: true });
}

function bundleFixtures(): void {
  const sources = join(ROOT, 'test', 'fixtures');
  rmSync(FIXTURES_DIR, { recursive: true, force: true });
  buildSync({
    absWorkingDir: ROOT,
    entryPoints: readdirSync(sources)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => join(sources, name)),
    outdir: FIXTURES_DIR,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The packages load from node_modules as the sources' do; only our own code is bundled.
    packages: 'external',
    logLevel: 'warning',
  });
}
