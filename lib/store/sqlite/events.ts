/** Events on SQLite: one insert that does nothing on a taken id, then the row as stored. */
import { eq } from 'drizzle-orm';
import type { EventStore } from '../contract';
import { events } from '../schema/sqlite';
import { sameEvent } from '../shared/events';
import { guard, type SqliteConnection } from './connection';

export function sqliteEvents(c: SqliteConnection): EventStore {
  const { orm } = c;
  const get = (id: string) => orm.select().from(events).where(eq(events.id, id)).get() ?? null;
  return {
    async recordEmittedEvent(event) {
      const now = c.now();
      return c.tx(() => {
        const inserted = orm
          .insert(events)
          .values({ ...event, createdAt: now })
          .onConflictDoNothing()
          .run();
        const row = get(event.id)!;
        if (inserted.changes === 1) return { recorded: true, event: row };
        return { recorded: false, event: sameEvent(row, event) };
      });
    },

    async getEmittedEvent(id) {
      return guard(() => get(id));
    },
  };
}
