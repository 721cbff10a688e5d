/**
 * The usage ledger of a run: its model calls' tokens and cost, in total, by step and by model: the gateway's,
 * and those its steps made without it and recorded (api `recorded`, recorded-usage.ts). Calls still in flight
 * are not counted (nothing is known of them yet); calls retired by a rerun are, since they were paid.
 */
import type { ModelCallRow, Store } from '../store/contract';

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** USD; calls of a model the price table does not price add nothing (see `unpriced`). */
  costUsd: number;
  unpriced: number;
}

export interface RunUsage extends UsageTotals {
  runId: string;
  /** By the step the key names (`<run>:step:<n>`); other keys and unkeyed calls under `null`. */
  bySteps: { step: number | null; usage: UsageTotals }[];
  byModel: { model: string | null; usage: UsageTotals }[];
}

const zero = (): UsageTotals => ({
  calls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedTokens: 0,
  costUsd: 0,
  unpriced: 0,
});

function add(to: UsageTotals, call: ModelCallRow): void {
  to.calls++;
  to.inputTokens += call.inputTokens ?? 0;
  to.outputTokens += call.outputTokens ?? 0;
  to.cachedTokens += call.cachedTokens ?? 0;
  if (call.costUsd === null) to.unpriced++;
  else to.costUsd += call.costUsd;
}

export function sumUsage(runId: string, calls: ModelCallRow[]): RunUsage {
  const total = zero();
  const steps = new Map<number | null, UsageTotals>();
  const models = new Map<string | null, UsageTotals>();
  for (const call of calls) {
    if (call.state !== 'complete') continue;
    add(total, call);
    if (!steps.has(call.step)) steps.set(call.step, zero());
    add(steps.get(call.step)!, call);
    if (!models.has(call.model)) models.set(call.model, zero());
    add(models.get(call.model)!, call);
  }
  return {
    runId,
    ...total,
    bySteps: [...steps].sort(([a], [b]) => (a ?? -1) - (b ?? -1)).map(([step, usage]) => ({ step, usage })),
    byModel: [...models].map(([model, usage]) => ({ model, usage })),
  };
}

export async function runUsage(store: Pick<Store, 'listModelCalls'>, runId: string): Promise<RunUsage> {
  return sumUsage(runId, await store.listModelCalls({ runId }));
}

/** What a run has spent: the USD of its priced calls, retired ones included. The sum a budget is held to. */
export async function runSpendUsd(store: Pick<Store, 'listModelCalls'>, runId: string): Promise<number> {
  return (await runUsage(store, runId)).costUsd;
}
