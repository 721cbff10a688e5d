/**
 * The version `waybill --version` prints: package.json's, read when asked. Found by walking up from this
 * module, so the same code works from the sources (lib/cli/) and from a built copy at another depth.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageVersion(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const found = readPackage(join(dir, 'package.json'));
    if (found?.name === 'waybill' && typeof found.version === 'string') return found.version;
    if (dirname(dir) === dir) throw new Error(`no package.json of waybill above ${from}`);
  }
}

function readPackage(path: string): { name?: unknown; version?: unknown } | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    return null;
  }
}
