/**
 * How long a SQLite writer waits for the write lock before SQLITE_BUSY. Shared with lib/config, which refuses a
 * step lease too short to outlast that wait (see WAYBILL_LEASE_MS there).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;
