/**
 * The product the lone-run sections time: the package as a user installs it, dist/index.js (built first by
 * scripts/build-package.ts when it is missing or older than lib/), or with --sources the TypeScript under tsx.
 * tsx names every function it creates (esbuild's keepNames: a __name() call for each closure made, several a
 * step), which the shipped bundle does not do; at a lone run's cost a step it shows (bench/RESULTS.md). The
 * throughput section's workers run the sources whatever this says: their workflows module is TypeScript.
 */
import { fileURLToPath } from 'node:url';
import { buildIsFresh } from '../bin/entry.mjs';
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

export async function loadProduct(sources: boolean, log: (line: string) => void): Promise<Product> {
  if (sources) return { ...(await import('../lib/index')), ran: 'sources via tsx' };
  if (!buildIsFresh('index')) log('bench: building the package (dist/), the code the lone runs time…');
  buildPackageIfStale(ROOT);
  const built = (await import(new URL('../dist/index.js', import.meta.url).href)) as Package;
  return { Checkpoint: built.Checkpoint, runAgent: built.runAgent, openStore: built.openStore, ran: 'dist' };
}
