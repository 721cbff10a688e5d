/**
 * Reads the migrations drizzle-kit generated (drizzle/<dialect>/meta/_journal.json and its .sql files).
 * We apply them ourselves rather than with drizzle's migrator because that one takes no lock: two workers
 * opening a fresh store at once would both run CREATE TABLE. Each backend applies these under its own
 * writer lock (BEGIN IMMEDIATE, pg_advisory_xact_lock) and records them in waybill_migrations.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Migration {
  tag: string;
  hash: string;
  statements: string[];
}

/** The article's three tables: a store they created is adopted, rows kept, before the first migration. */
export const ARTICLE_TABLES = ['progress', 'committed', 'claims'] as const;
export const ARTICLE_COLUMNS: Record<(typeof ARTICLE_TABLES)[number], string[]> = {
  progress: ['run_id', 'step', 'state_json', 'updated_at'],
  committed: ['idem_key', 'run_id', 'result_json', 'committed_at'],
  claims: ['idem_key', 'run_id', 'claimed_at'],
};

export function findMigrationsDir(dialect: 'sqlite' | 'pg', explicit?: string): string {
  if (explicit) return explicit;
  const journal = (dir: string) => existsSync(join(dir, 'drizzle', dialect, 'meta', '_journal.json'));
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (journal(dir)) return join(dir, 'drizzle', dialect);
    dir = dirname(dir);
  }
  if (journal(process.cwd())) return join(process.cwd(), 'drizzle', dialect);
  throw new Error(`cannot find drizzle/${dialect}/meta/_journal.json above ${fileURLToPath(import.meta.url)} or in ${process.cwd()}`);
}

export function readMigrations(dir: string): Migration[] {
  const journal = JSON.parse(readFileSync(resolve(dir, 'meta', '_journal.json'), 'utf8')) as {
    entries: { idx: number; tag: string }[];
  };
  return [...journal.entries]
    .sort((a, b) => a.idx - b.idx)
    .map(({ tag }) => {
      const text = readFileSync(resolve(dir, `${tag}.sql`), 'utf8');
      return {
        tag,
        hash: createHash('sha256').update(text).digest('hex'),
        statements: text.split('--> statement-breakpoint').map((s) => s.trim()).filter(Boolean),
      };
    });
}
