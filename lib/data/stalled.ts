import 'server-only';
/**
 * The pages' and /api/metrics' reads of lib/control/stalled.ts, with this server's configuration: the one
 * judgement of "stalled", here given the store and the settings, never made again in a page.
 *
 * Like the runs list's summary cards, the facts and the count are read at most once a second and shared by
 * every request in that second: ten browsers refreshing every two seconds cost one set of reads, not ten.
 */
import { config } from '../config';
import { countStalled, readStallFacts, type StallCount, type StallFacts, stallSettings } from '../control/stalled';
import { getBuiltins, getStore } from './store';

const SHARED_FOR_MS = 1000;

/** A read shared for SHARED_FOR_MS; a failed one is not kept, so the next request tries again. */
function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let kept: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (!kept || now - kept.at >= SHARED_FOR_MS) {
      const value = read();
      kept = { at: now, value };
      value.catch(() => {
        if (kept?.value === value) kept = null;
      });
    }
    return kept.value;
  };
}

export const getStallFacts: () => Promise<StallFacts> = shared(async () =>
  readStallFacts(await getStore(), stallSettings(config())),
);

/** How many runs are stalled, of every workflow the control plane knows (the built-ins and the published). */
export const getStallCount: () => Promise<StallCount> = shared(async () => {
  const [store, builtins, facts] = await Promise.all([getStore(), getBuiltins(), getStallFacts()]);
  return countStalled(store, facts, { workflows: builtins.names() });
});
