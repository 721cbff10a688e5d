/**
 * Every type the store's callers use, re-exported from the files that hold them, and `Store`: the full type
 * both backends implement, which `openStore()` returns. Callers that need less take less — the checkpoint
 * core takes a StepStore, the engine's worker a RunStore — so a custom backend for the core alone is small.
 *
 * Times crossing these interfaces are epoch seconds, as in the tables. Durations are milliseconds.
 */
import type { AuditStore } from './types-audit';
import type { ClaimStore } from './types-claims';
import type { InsightStore } from './types-insights';
import type { LogStore } from './types-logs';
import type { ModelCallStore } from './types-model-calls';
import type { RetentionStore } from './types-retention';
import type { RewindStore } from './types-rewind';
import type { RunStore } from './types-runs';
import type { StepStore } from './types-steps';
import type { WaitStore } from './types-waits';
import type { WakeStore } from './types-wake';

export * from './types-audit';
export * from './types-claims';
export * from './types-insights';
export * from './types-logs';
export * from './types-metrics';
export * from './types-model-calls';
export * from './types-retention';
export * from './types-rewind';
export * from './types-rows';
export * from './types-runs';
export * from './types-steps';
export * from './types-workflows';
export * from './types-waits';
export * from './types-wake';

/** Everything both backends do: no caller ever needs a cast or a capability check. */
export interface Store
  extends StepStore,
    ClaimStore,
    RunStore,
    InsightStore,
    RetentionStore,
    AuditStore,
    RewindStore,
    WaitStore,
    LogStore,
    ModelCallStore,
    WakeStore {
  /** Releases connections; the store is unusable afterwards. */
  close(): Promise<void>;
}
