/**
 * The library's emit (`import { emit } from 'waybill/engine'`): a program that holds the store sends an event
 * as POST /api/v1/events and `waybill emit` do, through the one lib/control/events.ts. Its subscribers are read
 * from the published rows and each run's input is checked by the schema its workers published (or, for a
 * workflow of `registry`, its own). Audited as `actor`, `library` by default.
 */
import { type Emitted, emit as emitEvent } from '../control/events';
import type { Store } from '../store/contract';
import { WorkflowCatalog } from './catalog';
import { WorkflowRegistry } from './workflow';

export type { Emitted } from '../control/events';

/** The largest event data accepted, as the control plane's default WAYBILL_MAX_BODY_BYTES. */
const MAX_BYTES = 1024 * 1024;

export function emit(
  store: Store,
  event: { id: string; name: string; data?: unknown },
  options: { registry?: WorkflowRegistry; actor?: string; maxBytes?: number } = {},
): Promise<Emitted> {
  const registry = options.registry ?? new WorkflowRegistry([]);
  return emitEvent(
    {
      store: async () => store,
      claimTtlMs: 30_000,
      maxBytes: options.maxBytes ?? MAX_BYTES,
      workflows: (s) => WorkflowCatalog.load(s, registry),
    },
    { actor: options.actor ?? 'library', role: 'local', channel: 'library' },
    event,
  );
}
