/**
 * Every type the store's callers use, re-exported from the files that hold them, and `Store`: the full type
 * both backends implement, which `openStore()` returns. Callers that need less take less — the checkpoint
 * core takes a StepStore, the engine's worker a RunStore — so a custom backend for the core alone is small.
 *
 * Times crossing these interfaces are epoch seconds, as in the tables. Durations are milliseconds.
 */
import type { AuditStore } from './audit';
import type { ClaimStore } from './claims';
import type { EventStore } from './events';
import type { InsightStore } from './insights';
import type { LogStore } from './logs';
import type { MetricsTallyStore } from './metrics';
import type { ModelCallStore } from './model-calls';
import type { RetentionStore } from './retention';
import type { RewindStore } from './rewind';
import type { RunTagStore } from './run-tags';
import type { RunStore } from './runs';
import type { ScheduleStore } from './schedules';
import type { StepStreamStore } from './step-streams';
import type { StepStore } from './steps';
import type { WaitStore } from './waits';
import type { WakeStore } from './wake';
import type { WebhookStore } from './webhooks';

export * from './audit';
export * from './claims';
export * from './events';
export * from './insights';
export * from './logs';
export * from './metrics';
export * from './model-calls';
export * from './retention';
export * from './rewind';
export * from './rows';
export * from './run-tags';
export * from './runs';
export * from './schedules';
export * from './step-streams';
export * from './steps';
export * from './waits';
export * from './wake';
export * from './webhooks';
export * from './workflows';

/** Everything both backends do: no caller ever needs a cast or a capability check. */
export interface Store
  extends StepStore,
    ClaimStore,
    RunStore,
    RunTagStore,
    InsightStore,
    MetricsTallyStore,
    RetentionStore,
    AuditStore,
    RewindStore,
    WaitStore,
    LogStore,
    ModelCallStore,
    StepStreamStore,
    ScheduleStore,
    WakeStore,
    WebhookStore,
    EventStore {
  /** Releases connections; the store is unusable afterwards. */
  close(): Promise<void>;
}
