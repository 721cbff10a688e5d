/**
 * zod is the project's own (a peer dependency), and Waybill's schemas are zod 4's. A project on zod 3 would
 * fail inside zod with `TypeError: Cannot read properties of undefined (reading 'def')` at the first schema
 * built; importing this module first in each entry (the root, waybill/engine, the CLI) says what to do instead.
 */
import { createRequire } from 'node:module';
import * as z from 'zod';
import { DependencyVersionError } from './errors';

/** What is wrong with the zod this process loads, or null when it is zod 4. */
export function zodMismatch(zod: object = z): string | null {
  const core = (zod as { core?: { version?: { major: number; minor: number; patch: number } } }).core;
  if (core?.version?.major === 4) return null;
  const found = core?.version ? `${core.version.major}.${core.version.minor}.${core.version.patch}` : installedZod();
  return `waybill needs zod 4 (found ${found}): npm install zod@4`;
}

/** zod 3 carries no version of its own at runtime; its package.json does, when it can be read (not in a bundle). */
function installedZod(): string {
  try {
    return (createRequire(import.meta.url)('zod/package.json') as { version: string }).version;
  } catch {
    return '3.x';
  }
}

const mismatch = zodMismatch();
if (mismatch) throw new DependencyVersionError(mismatch);
