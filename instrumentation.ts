/**
 * Next.js calls register() once in each server process before it serves. There, everything Next itself
 * reports on console.error / console.warn is routed to the server's logger (lib/data/console-log.ts), so the
 * log stays one JSON line per entry, as the README promises; and the store is created or upgraded, as a
 * worker's is, unless WAYBILL_MIGRATE=off (the pages themselves never migrate).
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== 'nodejs') return;
  const { routeConsoleToLog } = await import('./lib/data/console-log');
  routeConsoleToLog();
  const { migrateAtStart } = await import('./lib/data/store');
  // Not fatal here: the pages report what went wrong, and their first open tries again.
  await migrateAtStart().catch(() => undefined);
}
