/**
 * Where a notify run's outbox may be: a path inside the data directory, never anywhere else on the worker's
 * disk. The path arrives in a run's input, which a browser form or an API client wrote, so it is checked
 * twice: by the input schema (text only, so the control plane can answer with a field error without
 * touching any disk) and by the worker before it opens the file (a symlink inside the data directory that
 * points out of it is refused there).
 */
import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, posix, relative, resolve, sep, win32 } from 'node:path';
import { z } from 'zod';
import { InvalidInputError } from '../../errors';

export const outboxPathSchema = z
  .string({ error: 'must be a file path' })
  .min(1, 'must be a file path')
  .max(1024, 'must be at most 1024 characters')
  .refine((path) => !path.includes('\0'), 'must not contain NUL')
  // Both flavours: a worker on Windows would take `C:\x` or `\\host\share` as absolute.
  .refine(
    (path) => !posix.isAbsolute(path) && !win32.isAbsolute(path),
    'must be a path inside the data directory (WAYBILL_DATA_DIR), such as outbox.jsonl: absolute paths are refused',
  )
  .refine((path) => !path.split(/[\\/]/).includes('..'), 'must stay inside the data directory: ".." is refused')
  .refine((path) => !/[\\/]$/.test(path) && path !== '.', 'must name a file, not a directory');

/**
 * The absolute path of `outbox` inside `dataDir`, its directories created. Refuses, naming the field, a path
 * the schema would refuse, and one whose real location (after symlinks) is outside the data directory.
 */
export function resolveOutbox(dataDir: string, outbox: string): string {
  const checked = outboxPathSchema.safeParse(outbox);
  if (!checked.success) throw new InvalidInputError(`input.outbox: ${checked.error.issues[0]!.message}`);
  const root = resolve(dataDir);
  const target = resolve(root, outbox);
  mkdirSync(root, { recursive: true });
  const realRoot = realpathSync(root);
  // The deepest folder that exists is checked before any is created: mkdir would follow a link out.
  let existing = dirname(target);
  while (!lstatSync(existing, { throwIfNoEntry: false })) existing = dirname(existing);
  if (!inside(realRoot, realpathSync(existing))) throw escapes(outbox, realRoot);
  mkdirSync(dirname(target), { recursive: true });
  const realParent = realpathSync(dirname(target));
  if (!inside(realRoot, realParent)) throw escapes(outbox, realRoot);
  let realTarget = join(realParent, basename(target));
  try {
    realTarget = realpathSync(realTarget);
  } catch {
    // Not there yet, the outbox creates it in the directory just checked; but a dangling link would be followed.
    if (lstatSync(realTarget, { throwIfNoEntry: false })) throw escapes(outbox, realRoot);
  }
  if (!inside(realRoot, realTarget)) throw escapes(outbox, realRoot);
  return realTarget;
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function escapes(outbox: string, root: string): InvalidInputError {
  return new InvalidInputError(
    `input.outbox: ${JSON.stringify(outbox)} leads out of the data directory ${root} (through a symbolic link)`,
  );
}
