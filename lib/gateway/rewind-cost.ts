/**
 * What the steps a rerun or fork would redo cost the last time they ran, said before the operator confirms:
 * "steps 20–39 cost $0.42 and 61k tokens last time". The span is the rewind's own (store.rewindSpan); the
 * calls are the gateway's ledger (store.listModelCalls), summed as the ledger sums them (sumUsage).
 *
 * "Last time" is each step's latest execution: its live calls, or, for a step rerun since and not yet run
 * again, the calls that rerun retired. A step rerun twice is counted once, not once per execution: the
 * figure is an estimate of what redoing it costs, and the ledger keeps the total paid. A call is a step's by
 * the step its key names (`<run>:step:<n>`), as the ledger's `bySteps` has it; a call under a named step's
 * key carries no step number and is not counted here.
 */
import { compact, counted } from '../count';
import type { ModelCallRow, Store } from '../store/contract';
import { sumUsage, type UsageTotals } from './ledger';

export interface RewindCost extends UsageTotals {
  fromStep: number;
  toStep: number;
  /** Input plus output: input counts cached tokens already (usage.ts), so `cachedTokens` is a part of it. */
  tokens: number;
}

/** The calls of the latest execution of each step in [fromStep, toStep], summed. */
export function lastCost(runId: string, calls: ModelCallRow[], fromStep: number, toStep: number): RewindCost {
  const inSpan = calls.filter(
    (c) => c.state === 'complete' && c.step !== null && c.step >= fromStep && c.step <= toStep,
  );
  // A live call (retiredAt null) is the newest execution; otherwise the latest retirement wins.
  const when = (c: ModelCallRow) => c.retiredAt ?? Number.POSITIVE_INFINITY;
  const latest = new Map<number, number>();
  for (const c of inSpan) latest.set(c.step!, Math.max(latest.get(c.step!) ?? Number.NEGATIVE_INFINITY, when(c)));
  const {
    calls: n,
    inputTokens,
    outputTokens,
    cachedTokens,
    costUsd,
    unpriced,
  } = sumUsage(
    runId,
    inSpan.filter((c) => when(c) === latest.get(c.step!)),
  );
  return {
    fromStep,
    toStep,
    calls: n,
    inputTokens,
    outputTokens,
    cachedTokens,
    tokens: inputTokens + outputTokens,
    costUsd,
    unpriced,
  };
}

/**
 * The last cost of the steps a rerun or fork from `fromStep` (a step number) would redo. RewindRefusedError,
 * as the rewind itself gives it, for a run with no row or a step beyond the last.
 */
export async function rewindCost(
  store: Pick<Store, 'rewindSpan' | 'listModelCalls'>,
  runId: string,
  fromStep: number,
): Promise<RewindCost> {
  const span = await store.rewindSpan(runId, fromStep);
  return lastCost(runId, await store.listModelCalls({ runId }), span.fromStep, span.toStep);
}

/**
 * `$0.42`; below ten cents two significant digits (`$0.0031`), so a cheap step does not read as free; below a
 * hundredth of a cent, `<$0.0001` (no exponent).
 */
export function usd(amount: number): string {
  if (amount === 0) return '$0.00';
  if (amount < 0.0001) return '<$0.0001';
  return amount >= 0.1 ? `$${amount.toFixed(2)}` : `$${Number(amount.toPrecision(2))}`;
}

/**
 * The sentence the CLI prints and the dialogs show: "steps 20–39 cost $0.42 and 61k tokens last time", or
 * "no model calls recorded for steps 20–39".
 */
export function lastCostText(
  cost: Pick<RewindCost, 'fromStep' | 'toStep' | 'calls' | 'tokens' | 'costUsd' | 'unpriced'>,
) {
  const steps = cost.fromStep === cost.toStep ? `step ${cost.fromStep}` : `steps ${cost.fromStep}–${cost.toStep}`;
  if (cost.calls === 0) return `no model calls recorded for ${steps}`;
  const tokens = `${compact(cost.tokens)} tokens`;
  if (cost.unpriced === cost.calls)
    return `${steps} made ${counted(cost.calls, 'model call')} (${tokens}) of unknown cost last time`;
  const unpriced = cost.unpriced > 0 ? ` (+${counted(cost.unpriced, 'unpriced call')})` : '';
  return `${steps} cost ${usd(cost.costUsd)}${unpriced} and ${tokens} last time`;
}
