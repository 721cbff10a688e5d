/**
 * Wakes: how an idle worker learns that a run may have become runnable, instead of asking the store every few
 * hundred milliseconds. PostgreSQL delivers a notification (LISTEN/NOTIFY, postgres/notify.ts) from the
 * transaction that queues a run; SQLite has no such thing, and notices another connection's commit by its
 * data_version (sqlite/notify.ts). A wake is a hint, never a promise: the worker still polls, at
 * WAYBILL_IDLE_POLL_MS while wakes are delivered and at its short interval while they are not, because some runs
 * become runnable with nothing written at that moment (a run lease passing, a sleep's time coming).
 */

export type Wake =
  /** A run may be runnable. `workflow`: the run's, when the notifier knew it; absent, any workflow. */
  | { kind: 'runnable'; workflow?: string }
  /**
   * Wakes are delivered from now on. Anything that happened before (while the listener was down, or before it
   * first connected) was not: take a look now.
   */
  | { kind: 'listening' }
  /** Wakes are not delivered until the next `listening` (a listener's connection died): poll meanwhile. */
  | { kind: 'lost' };

export interface WakeStore {
  /**
   * Calls onWake for every wake until the returned function is called. The first call with a live channel is
   * `listening`; one subscription per worker is plenty, they share the store's one listener.
   */
  subscribeWakes(onWake: (wake: Wake) => void): () => void;
}
