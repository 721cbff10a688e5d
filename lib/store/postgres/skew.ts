/**
 * Time on PostgreSQL is the database's clock, never the worker's: hosts disagree, and the database is the
 * one judge of whose lease has passed. An injected clock only shifts it, by how far that clock is from this
 * host's (zero for the system clock), so tests can move time as they do on SQLite. No pg import: the demo
 * seed uses this without loading the driver.
 */
import { type Clock, systemClock } from '../../clock';

/** Seconds the injected clock is ahead of this host's: added to the database clock in every statement. */
export function skewSeconds(clock: Clock): number {
  return clock === systemClock ? 0 : (clock.now() - Date.now()) / 1000;
}
