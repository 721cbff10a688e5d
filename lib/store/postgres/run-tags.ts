/**
 * A run's tags and metadata on PostgreSQL, with sqlite/run-tags.ts's semantics: one transaction that locks the
 * run's row (two changes to one run queue behind each other), writes the change and checks the per-run limits
 * on the result. Safe to retry whole: the same change twice leaves what once does.
 */
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { runTagsProblem } from '../../domain/run-tags';
import { InvalidInputError, NotFoundError } from '../../errors';
import type { RunTagStore, RunTags } from '../contract';
import { runTagsOf } from '../shared/run-tag-filter';
import { FIXED, type PgConnection } from './connection';
import { withRetry } from './retry';

async function read(c: PgConnection, on: pg.Pool | pg.PoolClient, id: string): Promise<RunTags> {
  const tags = await c.once<{ tag: string }>(
    sql`SELECT tag FROM run_tags WHERE run_id = ${id} ORDER BY tag COLLATE "C"`,
    FIXED,
    on,
  );
  const meta = await c.once<{ key: string; value: string }>(
    sql`SELECT key, value FROM run_metadata WHERE run_id = ${id} ORDER BY key COLLATE "C"`,
    FIXED,
    on,
  );
  return {
    tags: tags.rows.map((r) => r.tag),
    metadata: Object.fromEntries(meta.rows.map((r) => [r.key, r.value])),
  };
}

export function postgresRunTags(c: PgConnection): RunTagStore {
  return {
    async tagRun(id, change) {
      return withRetry('tagRun', () =>
        c.inTransaction(async (client) => {
          const run = await c.once(sql`SELECT 1 FROM runs WHERE id = ${id} FOR UPDATE`, undefined, client);
          if (run.rowCount === 0) throw new NotFoundError(`run ${id}`);
          if (change.tags)
            await c.once(
              sql`DELETE FROM run_tags WHERE run_id = ${id} AND NOT (tag = ANY(${sql.param(change.tags)}::text[]))`,
              undefined,
              client,
            );
          const added = [...(change.tags ?? []), ...(change.addTags ?? [])];
          if (added.length)
            await c.once(
              sql`INSERT INTO run_tags (run_id, tag) SELECT ${id}, t FROM unnest(${sql.param(added)}::text[]) t ON CONFLICT DO NOTHING`,
              undefined,
              client,
            );
          const metadata = Object.entries(change.metadata ?? {});
          if (metadata.length)
            await c.once(
              sql`INSERT INTO run_metadata (run_id, key, value)
                SELECT ${id}, m.key, m.value FROM unnest(${sql.param(metadata.map(([k]) => k))}::text[], ${sql.param(metadata.map(([, v]) => v))}::text[]) m (key, value)
                ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value`,
              undefined,
              client,
            );
          const after = await read(c, client, id);
          const problem = runTagsProblem(after.tags.length, Object.keys(after.metadata).length);
          // Thrown inside the transaction: it rolls back, and nothing of the change is written.
          if (problem) throw new InvalidInputError(problem);
          return after;
        }),
      );
    },

    async getRunTags(id) {
      return withRetry('getRunTags', () => read(c, c.pool, id));
    },

    async getRunTagsOf(ids) {
      if (ids.length === 0) return new Map();
      const list = sql.param(ids);
      // One round trip: the tags (key null) and the pairs (tag null), each in its own order within a run.
      const { rows } = await c.read<{ run_id: string; tag: string | null; key: string; value: string }>(
        'getRunTagsOf',
        sql`SELECT * FROM (SELECT run_id, tag, NULL::text AS key, NULL::text AS value FROM run_tags
            WHERE run_id = ANY(${list}::text[])
          UNION ALL
          SELECT run_id, NULL, key, value FROM run_metadata WHERE run_id = ANY(${list}::text[])) x
          ORDER BY run_id, tag COLLATE "C", key COLLATE "C"`,
      );
      const tagged = (row: (typeof rows)[number]): row is typeof row & { tag: string } => row.tag !== null;
      return runTagsOf(
        ids,
        rows.filter(tagged),
        rows.filter((row) => !tagged(row)),
      );
    },
  };
}
