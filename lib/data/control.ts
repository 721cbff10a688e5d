import 'server-only';
/**
 * What the dashboard's server actions and the API's route handlers hand lib/control: the server's one store,
 * its limits and its catalog, and the caller made from the principal lib/auth judged.
 */
import type { Principal } from '../auth/principal';
import { config } from '../config';
import type { Caller, ControlDeps } from '../control';
import { liveWithinMs } from '../domain/liveness';
import { WorkflowCatalog } from '../engine/catalog';
import { ForbiddenError } from '../errors';
import { claimTtlMs, getBuiltins, getStore, heartbeatMs } from './store';

export function controlDeps(): ControlDeps {
  return {
    store: getStore,
    claimTtlMs: claimTtlMs(),
    maxBytes: config().WAYBILL_MAX_BODY_BYTES,
    maxWaitsPerRun: config().WAYBILL_MAX_WAITS_PER_RUN,
    workflows: async (store) => WorkflowCatalog.load(store, await getBuiltins(), liveWithinMs(heartbeatMs())),
  };
}

export function callerOf(who: Principal, channel: 'dashboard' | 'api'): Caller {
  // A run token is admitted only by the checkpoint protocol's routes, which call no operator operation.
  if (who.role === 'run') throw new ForbiddenError('run', 'viewer');
  return { actor: who.actor, role: who.role, channel };
}
