/**
 * The migrations travel inside the code (lib/store/migrate/migrations.generated.ts), so a bundle of the library opens a
 * store with no drizzle/ folder beside it. That file is generated from drizzle/*\/: committed stale, a store
 * opened by this checkout would lack the newest migration, so this fails until `npm run db:embed` is run.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { EMBEDDED_PATH, renderEmbedded } from '../../scripts/embed-migrations';
import { tempDir } from '../support/tmp';

const ROOT = join(import.meta.dirname, '..', '..');

describe('embedded migrations', () => {
  it('match drizzle/sqlite and drizzle/pg as committed (npm run db:embed regenerates them)', () => {
    expect(readFileSync(EMBEDDED_PATH, 'utf8')).toBe(renderEmbedded());
  });

  it('would be stale after a migration file changes', () => {
    const dir = tempDir('waybill-embed-');
    cpSync(join(ROOT, 'drizzle'), dir.file('drizzle'), { recursive: true });
    const first = migrationsOf('pg')[0]!.tag;
    writeFileSync(dir.file(`drizzle/pg/${first}.sql`), 'SELECT 1;');
    expect(renderEmbedded(dir.path)).not.toBe(renderEmbedded());
  });

  it('hash each migration as its .sql file, in journal order', () => {
    for (const [dialect, folder] of [
      ['sqlite', 'drizzle/sqlite'],
      ['pg', 'drizzle/pg'],
    ] as const) {
      const journal = JSON.parse(readFileSync(join(ROOT, folder, 'meta', '_journal.json'), 'utf8')) as {
        entries: { tag: string }[];
      };
      expect(migrationsOf(dialect).map((m) => m.tag)).toEqual(journal.entries.map((e) => e.tag));
    }
  });
});
