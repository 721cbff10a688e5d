import 'server-only';
/**
 * The pages' and /api/metrics' reads of lib/control/stalled.ts, with this server's configuration: the one
 * judgement of "stalled", here given the store and the settings, never made again in a page.
 */
import { config } from '../config';
import { countStalled, readStallFacts, stallSettings, type StallCount, type StallFacts } from '../control/stalled';
import { claimTtlMs, getBuiltins, getStore } from './store';

export function getStallFacts(): Promise<StallFacts> {
  return getStore().then((store) => readStallFacts(store, stallSettings(config())));
}

/** How many runs are stalled, of every workflow the control plane knows (the built-ins and the published). */
export async function getStallCount(facts?: StallFacts): Promise<StallCount> {
  const [store, builtins, known] = await Promise.all([getStore(), getBuiltins(), facts ?? getStallFacts()]);
  return countStalled(store, known, { claimTtlMs: claimTtlMs(), workflows: builtins.names() });
}
