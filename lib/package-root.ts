/**
 * The package's own folder: the nearest one above a module whose package.json is waybill's. The same code runs
 * from the sources (lib/…), bundled into dist/ and into the dashboard's server build, each at another depth, so
 * a path into the package (its bins, the Python client of a checkout, the dashboard build) is found from here,
 * never from `../..` or the user's working directory.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PackageFile {
  root: string;
  version: string;
}

export function findPackage(from: string = dirname(fileURLToPath(import.meta.url))): PackageFile {
  for (let dir = from; ; dir = dirname(dir)) {
    const found = readPackage(join(dir, 'package.json'));
    if (found?.name === 'waybill' && typeof found.version === 'string') return { root: dir, version: found.version };
    if (dirname(dir) === dir) throw new Error(`no package.json of waybill above ${from}`);
  }
}

let found: PackageFile | undefined;

/** The folder holding package.json, bin/ and, once built, dist/ and .next/. */
export function packageRoot(): string {
  found ??= findPackage();
  return found.root;
}

export const packagePath = (...parts: string[]): string => join(packageRoot(), ...parts);

function readPackage(path: string): { name?: unknown; version?: unknown } | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    return null;
  }
}
