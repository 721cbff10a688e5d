/**
 * How long a SQLite writer waits for the write lock before SQLITE_BUSY, and how that wait is kept inside the
 * step lease.
 *
 * A commit, and the renewal due a third of a lease after the last one, may each wait the whole busy timeout for
 * the write lock. Unless a lease outlasts a third of itself plus that wait, a step that only waited for the lock
 * is taken over by another worker, and its side effect runs again. So the wait is derived from the lease: at
 * most two thirds of it, and never more than the 5 s that suits the default 30 s lease.
 */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * The shortest step lease a SQLite store grants. Below it the wait for the write lock (two thirds of the lease)
 * is so short that ordinary contention between a few writers fails steps instead of queueing them.
 */
export const SQLITE_MIN_LEASE_MS = 300;

/** The write-lock wait for a store whose shortest step lease is `leaseMs` (the default wait when unknown). */
export function busyTimeoutFor(leaseMs: number | undefined): number {
  if (leaseMs === undefined) return SQLITE_BUSY_TIMEOUT_MS;
  return Math.min(SQLITE_BUSY_TIMEOUT_MS, Math.floor(leaseMs / 1.5));
}

/** The shortest lease a client of a SQLite store opened for `leaseMs` may ask for: 1.5 × its lock wait. */
export function shortestLeaseFor(leaseMs: number | undefined): number {
  return Math.max(SQLITE_MIN_LEASE_MS, Math.ceil(1.5 * busyTimeoutFor(leaseMs)));
}
