/**
 * A user's project for the files of examples/: a temp directory the example is copied into, as a reader
 * copies it, whose node_modules has `waybill` (a small package whose exports re-export this checkout's
 * sources, run under tsx — no `npm pack`, which takes minutes), and zod and openai linked from the checkout's
 * own node_modules. The store is a SQLite file in the project; commands run there, the repository's
 * `waybill` CLI among them.
 */

import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { BIN, ROOT } from '../cli/support';
import { type Child, spawnCommand } from '../support/child';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

export { until };

const TSX = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('tsx/esm')).href;

export interface Project {
  dir: string;
  /** The store's URL: DATABASE_URL of every command run here. */
  url: string;
  /** `node <file>` in the project (under tsx, for the linked sources). */
  node(file: string, env?: Record<string, string>): Child;
  /** The checkout's `waybill` CLI in the project. */
  waybill(args: string[], env?: Record<string, string>): Child;
  /** Any command in the project, with the store's URL. */
  spawn(command: string, args: string[], env?: Record<string, string>): Child;
  /** One row of the store, read-only (null when the file or the row is not there yet). */
  row<T>(sql: string, ...args: unknown[]): T | null;
  /** Each line of a file in the project, counted. */
  lines(file: string): string[];
}

/**
 * A project's node_modules in dir: `waybill` re-exporting this checkout's sources, and `packages` linked from
 * the checkout's node_modules.
 */
export function linkCheckoutPackages(dir: string, packages: string[]): void {
  const waybill = join(dir, 'node_modules', 'waybill');
  mkdirSync(waybill, { recursive: true });
  writeFileSync(
    join(waybill, 'package.json'),
    JSON.stringify({ name: 'waybill', type: 'module', exports: { '.': './index.ts', './engine': './engine.ts' } }),
  );
  writeFileSync(join(waybill, 'index.ts'), `export * from ${JSON.stringify(join(ROOT, 'lib/index.ts'))};\n`);
  writeFileSync(join(waybill, 'engine.ts'), `export * from ${JSON.stringify(join(ROOT, 'lib/engine/index.ts'))};\n`);
  for (const name of packages) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
}

/** Makes the project with these files of examples/ copied in. Call it inside a test. */
export function exampleProject(...examples: string[]): Project {
  const dir = tempDir('waybill-example-').path;
  linkCheckoutPackages(dir, ['zod', 'openai']);
  for (const example of examples) copyFileSync(join(ROOT, 'examples', example), join(dir, example));
  const file = join(dir, 'data', 'waybill.db');
  const url = `file:${file}`;
  const spawn = (command: string, args: string[], env: Record<string, string> = {}) =>
    spawnCommand(command, args, { cwd: dir, env: { DATABASE_URL: url, ...env } });
  return {
    dir,
    url,
    spawn,
    node: (script, env) => spawn(process.execPath, ['--import', TSX, script], env),
    waybill: (args, env) => spawn(process.execPath, [BIN, ...args], env),
    row<T>(sql: string, ...args: unknown[]) {
      if (!existsSync(file)) return null;
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return (db.prepare(sql).get(...args) as T | undefined) ?? null;
      } catch (error) {
        if (/no such table/.test(String(error))) return null; // not migrated yet
        throw error;
      } finally {
        db.close();
      }
    },
    lines: (name) =>
      existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean) : [],
  };
}

/** The command's exit, with what it printed when it is not 0. */
export async function succeeds(child: Child): Promise<string[]> {
  const exit = await child.exited;
  if (exit.code !== 0)
    throw new Error(`exit ${exit.code ?? exit.signal}:\n${child.lines.join('\n')}\n${child.stderr()}`);
  return child.lines;
}

/** How many times each line occurs. */
export function counts(lines: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of lines) out[line] = (out[line] ?? 0) + 1;
  return out;
}
