/**
 * A run's budget at the gateway: before a call goes upstream (never before a replay, which costs nothing), a run
 * whose recorded spend (ledger.ts) has reached its budget is paused — through lib/control's one pause, audited,
 * actor `gateway`, reason "budget reached" — and the call is refused with 402 in its SDK's error shape, so the
 * step fails with the SDK's own error and its worker finds the run paused (lib/engine/worker/execute.ts).
 */
import { runs } from '../control';
import type { Caller } from '../control/caller';
import { BudgetReachedError, InvalidTransitionError } from '../errors';
import type { ModelApi, Store } from '../store/contract';
import { runSpendUsd } from './ledger';
import { providerError } from './provider-error';
import type { GatewaySettings } from './routes';

export const BUDGET_REASON = 'budget reached';

const GATEWAY: Caller = { actor: 'gateway', role: 'operator', channel: 'api' };

/** Pauses the run and throws BudgetReachedError when its spend has reached its budget; else nothing. */
export async function holdToBudget(store: Store, settings: GatewaySettings, runId: string): Promise<void> {
  const run = await store.getRun(runId);
  if (!run || run.budgetUsd === null) return;
  const spent = await runSpendUsd(store, runId);
  if (spent < run.budgetUsd) return;
  // Paused before the answer, so the worker that reads the refusal finds the run paused.
  const deps = {
    store: async () => store,
    claimTtlMs: settings.WAYBILL_CLAIM_TTL_MS,
    maxBytes: settings.WAYBILL_MAX_BODY_BYTES,
  };
  // The alert webhooks' run.budget_reached, once per run and budget: a raised budget reached again is news.
  const alert = {
    event: 'run.budget_reached' as const,
    key: `${runId}:${run.budgetUsd}`,
    runId,
    data: { runId, workflow: run.workflow, budgetUsd: run.budgetUsd, spentUsd: spent },
  };
  await runs.act(deps, GATEWAY, { action: 'pause', runId, reason: BUDGET_REASON }, alert).catch((error: unknown) => {
    // Paused already (by an earlier refusal, or an operator), or finished meanwhile: refused all the same.
    if (!(error instanceof InvalidTransitionError)) throw error;
  });
  throw new BudgetReachedError(runId, spent, run.budgetUsd);
}

/** The refusal as the caller's SDK reads an error (provider-error.ts). */
export function budgetRefusal(error: BudgetReachedError, api: ModelApi): Response {
  return providerError(api, 402, { type: 'budget_reached', code: error.code, message: error.message });
}
