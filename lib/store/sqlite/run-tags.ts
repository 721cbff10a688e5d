/**
 * A run's tags and metadata on SQLite: rows of run_tags and run_metadata (schema/sqlite.ts), changed in one
 * BEGIN IMMEDIATE transaction that checks the per-run limits on the result (lib/domain/run-tags.ts).
 */
import { runTagsProblem } from '../../domain/run-tags';
import { InvalidInputError, NotFoundError } from '../../errors';
import type { RunTagChange, RunTagStore, RunTags } from '../contract';
import { runTagsOf } from '../shared/run-tag-filter';
import { guard, type SqliteConnection } from './connection';

const SET_TAG = 'INSERT INTO run_tags (run_id, tag) VALUES (@id, @tag) ON CONFLICT DO NOTHING';
const SET_META = `INSERT INTO run_metadata (run_id, key, value) VALUES (@id, @key, @value)
  ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value`;

/** Writes a new run's tags and metadata: inside createRun's transaction. */
export function writeRunTags(c: SqliteConnection, id: string, tags: string[], metadata: Record<string, string>): void {
  for (const tag of tags) c.prepared(SET_TAG).run({ id, tag });
  for (const [key, value] of Object.entries(metadata)) c.prepared(SET_META).run({ id, key, value });
}

function read(c: SqliteConnection, id: string): RunTags {
  const tags = c
    .prepared<unknown[], { tag: string }>('SELECT tag FROM run_tags WHERE run_id = ? ORDER BY tag')
    .all(id)
    .map((r) => r.tag);
  const rows = c
    .prepared<unknown[], { key: string; value: string }>(
      'SELECT key, value FROM run_metadata WHERE run_id = ? ORDER BY key',
    )
    .all(id);
  return { tags, metadata: Object.fromEntries(rows.map((r) => [r.key, r.value])) };
}

export function sqliteRunTags(c: SqliteConnection): RunTagStore {
  return {
    async tagRun(id, change: RunTagChange) {
      return c.tx(() => {
        if (!c.prepared('SELECT 1 FROM runs WHERE id = ?').get(id)) throw new NotFoundError(`run ${id}`);
        if (change.tags) {
          c.prepared(`DELETE FROM run_tags WHERE run_id = @id AND tag NOT IN (SELECT value FROM json_each(@tags))`).run(
            {
              id,
              tags: JSON.stringify(change.tags),
            },
          );
        }
        writeRunTags(c, id, [...(change.tags ?? []), ...(change.addTags ?? [])], change.metadata ?? {});
        const after = read(c, id);
        const problem = runTagsProblem(after.tags.length, Object.keys(after.metadata).length);
        // Thrown inside the transaction: it rolls back, and nothing of the change is written.
        if (problem) throw new InvalidInputError(problem);
        return after;
      });
    },

    async getRunTags(id) {
      return guard(() => read(c, id));
    },

    async getRunTagsOf(ids) {
      if (ids.length === 0) return new Map();
      const list = JSON.stringify(ids);
      return guard(() =>
        c.db.transaction(() =>
          runTagsOf(
            ids,
            c
              .prepared<unknown[], { run_id: string; tag: string }>(
                'SELECT run_id, tag FROM run_tags WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, tag',
              )
              .all(list),
            c
              .prepared<unknown[], { run_id: string; key: string; value: string }>(
                'SELECT run_id, key, value FROM run_metadata WHERE run_id IN (SELECT value FROM json_each(?)) ORDER BY run_id, key',
              )
              .all(list),
          ),
        )(),
      );
    },
  };
}
