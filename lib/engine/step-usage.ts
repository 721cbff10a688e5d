/**
 * ctx.recordUsage: a step reports a model call it made without the gateway, so the run's ledger counts it
 * (lib/gateway/recorded-usage.ts checks, prices and keys it). Reports are numbered per execution of the step
 * from 0, in call order: the same step executed again (a retry, a replay after a crash) writes over its
 * earlier reports under the same keys instead of counting them twice.
 */
import type { StepContext } from '../checkpoint/checkpoint';
import type { PriceTable } from '../gateway/prices';
import { checkUsage, recordUsage, type UsageReport } from '../gateway/recorded-usage';
import type { ModelCallStore } from '../store/contract';

export type { UsageReport } from '../gateway/recorded-usage';

/** Where ctx.recordUsage writes, and the price table it prices a report without a cost by. */
export interface UsageRecorder {
  store: Pick<ModelCallStore, 'recordModelUsage'>;
  prices: PriceTable;
}

export interface UsageStepContext {
  /**
   * Records a model call made without the gateway in the run's ledger: `{ model, inputTokens, outputTokens,
   * cachedTokens?, costUsd? }` (the cost by the price table when not given). A bad report is refused naming
   * its field, and nothing is written.
   */
  recordUsage(usage: UsageReport): Promise<void>;
}

export function usageStep<C extends StepContext>(
  call: C,
  runId: string,
  recorder: UsageRecorder | undefined,
): C & UsageStepContext {
  let n = 0;
  const recordUsageOfStep = async (usage: UsageReport): Promise<void> => {
    if (!recorder) throw new Error('this run context cannot record usage: it was built without a store to record in');
    const checked = checkUsage(usage, `ctx.recordUsage (key ${call.idempotencyKey})`);
    // Numbered once checked: a refused report takes no place, so the step's next report keeps the same key.
    const at = { runId, step: call.step ?? null, stepKey: call.idempotencyKey, attempt: call.attempt, n: n++ };
    await recordUsage(recorder.store, recorder.prices, at, checked);
  };
  return Object.assign(call, { recordUsage: recordUsageOfStep });
}
