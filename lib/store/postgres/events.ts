/** Events on PostgreSQL, with sqlite/events.ts's semantics; safe to retry: a retry finds its own row. */
import { eq } from 'drizzle-orm';
import type { EventStore } from '../contract';
import { events } from '../schema/pg';
import { sameEvent } from '../shared/events';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

export function postgresEvents(c: PgConnection): EventStore {
  const { orm } = c;
  const get = async (id: string) => {
    const [row] = await orm.select().from(events).where(eq(events.id, id));
    return row ?? null;
  };
  return {
    async recordEmittedEvent(event) {
      const inserted = await withRetry('recordEmittedEvent', () =>
        orm
          .insert(events)
          .values({ ...event, createdAt: c.now() })
          .onConflictDoNothing()
          .returning(),
      );
      if (inserted[0]) return { recorded: true, event: inserted[0] };
      const row = await withRetry('getEmittedEvent', () => get(event.id));
      // Only a prune could remove it between the two statements; then it is as good as never sent.
      if (!row) return this.recordEmittedEvent(event);
      return { recorded: false, event: sameEvent(row, event) };
    },

    async getEmittedEvent(id) {
      return withRetry('getEmittedEvent', () => get(id));
    },
  };
}
