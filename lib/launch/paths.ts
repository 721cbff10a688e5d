/**
 * Where the package's own files are: the bins, the dashboard build. The same code runs from
 * the sources (lib/launch/*.ts in a checkout) and bundled into dist/ (in the installed package), at
 * different depths, so paths are found from the package root, which is the nearest folder above this file
 * that holds bin/waybill.mjs — never from the user's working directory.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  const here = fileURLToPath(import.meta.url);
  for (let dir = dirname(here); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'bin', 'waybill.mjs')) && existsSync(join(dir, 'package.json'))) return dir;
  }
  throw new Error(`cannot find the waybill package root (bin/waybill.mjs) above ${here}`);
}

let root: string | undefined;

/** The folder holding package.json, bin/ and .next/. */
export function packageRoot(): string {
  return (root ??= findRoot());
}

export const packagePath = (...parts: string[]): string => join(packageRoot(), ...parts);
