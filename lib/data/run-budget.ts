import 'server-only';
/**
 * What the run page's budget form shows beside the budget: what the run has spent, by the gateway's ledger
 * (lib/gateway/ledger.ts), the sum the gateway holds a call to.
 */
import { runSpendUsd } from '../gateway/ledger';
import { getStore } from './store';

export async function runSpentUsd(runId: string): Promise<number> {
  return runSpendUsd(await getStore(), runId);
}
