/**
 * The product the lone-run sections time: the package as a user installs it, dist/index.js (built first by
 * scripts/build-package.ts when it is missing or older than lib/), or with --sources the TypeScript under tsx.
 * tsx names every function it creates (esbuild's keepNames: a __name() call for each closure made, several a
 * step), which the shipped bundle does not do; at a lone run's cost a step it shows (bench/RESULTS.md). The
 * throughput section's workers run the sources whatever this says: their workflows module is TypeScript.
 */
import { fileURLToPath } from 'node:url';
import { buildPackageIfStale } from '../e2e/support/prepare';

type Package = typeof import('../lib/index');

export interface Product {
  Checkpoint: Package['Checkpoint'];
  runAgent: Package['runAgent'];
  openStore: Package['openStore'];
  /** Which code it is. */
  ran: 'dist' | 'sources via tsx';
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function loadProduct(sources: boolean): Promise<Product> {
  if (sources) return productOf(await import('../lib/index'), 'sources via tsx');
  // The build prints what it does; it is skipped when dist/ is as new as lib/.
  buildPackageIfStale(ROOT);
  return productOf((await import(new URL('../dist/index.js', import.meta.url).href)) as Package, 'dist');
}

const productOf = ({ Checkpoint, runAgent, openStore }: Package, ran: Product['ran']): Product => ({
  Checkpoint,
  runAgent,
  openStore,
  ran,
});
