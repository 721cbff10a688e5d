/**
 * What lib/control needs of a store, and what every caller hands it. The store is opened through `store()`
 * only once the caller is allowed and the input is valid, so a refused or malformed request never opens a
 * database (the CLI's `--db` file is not even created).
 */
import type { StartableWorkflows } from '../engine/workflow';
import type { Store } from '../store/contract';

/** The full store openStore() returns: every operation may read and write any of it. */
export type ControlStore = Store;

export interface ControlDeps {
  store(): Promise<ControlStore>;
  /** How long a claim with no lease column lives after claimed_at (WAYBILL_CLAIM_TTL_MS). */
  claimTtlMs: number;
  /** The largest JSON text accepted for a start's input or a resolve's result (WAYBILL_MAX_BODY_BYTES). */
  maxBytes: number;
  /** The most waits a run may hold, past which a signal sent ahead is refused (WAYBILL_MAX_WAITS_PER_RUN). */
  maxWaitsPerRun?: number;
  /** What a start may name: built-ins and published workflows, read from the store at the call. */
  workflows?(store: ControlStore): Promise<StartableWorkflows>;
}
