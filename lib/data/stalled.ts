import 'server-only';
/**
 * The pages' and /api/metrics' reads of lib/control/stalled.ts, with this server's configuration: the one
 * judgement of "stalled", here given the store and the settings, never made again in a page.
 * Both are shared reads (shared-read.ts): at most one of each a second per server process.
 */
import { config } from '../config';
import { countStalled, readStallFacts, type StallCount, type StallFacts, stallSettings } from '../control/stalled';
import { sharedRead } from './shared-read';
import { getBuiltins, getStore } from './store';

export const getStallFacts: () => Promise<StallFacts> = sharedRead(async () =>
  readStallFacts(await getStore(), stallSettings(config())),
);

/** How many runs are stalled, of every workflow the control plane knows (the built-ins and the published). */
export const getStallCount: () => Promise<StallCount> = sharedRead(async () => {
  const [store, builtins, facts] = await Promise.all([getStore(), getBuiltins(), getStallFacts()]);
  return countStalled(store, facts, { workflows: builtins.names() });
});
