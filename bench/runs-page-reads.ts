/**
 * `npx tsx bench/runs-page-reads.ts <store URL> [calls]`: each read the runs page (lib/data/runs.ts getRunsPage)
 * makes, timed alone on a seeded store (bench:dashboard's --store file), p50 and p99 of `calls` calls (20).
 * Not the page: no HTTP, no rendering, no sharing across requests; what one request's reads cost.
 */
import { readRunsPage } from '../lib/control/runs-list';
import { countStalled, readStallFacts } from '../lib/control/stalled';
import { liveWithinMs } from '../lib/domain/liveness';
import { WorkflowCatalog } from '../lib/engine/catalog';
import { builtinRegistry } from '../lib/engine/workflows/index';
import { openStore } from '../lib/store/index';

const [url, callsText] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: tsx bench/runs-page-reads.ts <store URL> [calls]\n');
  process.exit(2);
}
const calls = Number(callsText ?? 20);
const CLAIM_TTL_MS = 30_000;
const HEARTBEAT_MS = 5_000;
const settings = () => ({ now: Date.now(), runLeaseMs: 30_000, heartbeatMs: HEARTBEAT_MS });

async function time(name: string, read: () => Promise<unknown>): Promise<void> {
  await read();
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await read();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(1);
  process.stdout.write(`${name.padEnd(34)} p50 ${at(0.5).padStart(7)} ms  max ${at(1).padStart(7)} ms\n`);
}

const store = await openStore(url, { migrate: false });
const builtins = builtinRegistry();
const facts = await readStallFacts(store, settings());
const page = (filter: Record<string, unknown>) =>
  readRunsPage(store, { limit: 50, claimTtlMs: CLAIM_TTL_MS, ...filter }, Promise.resolve(facts));
try {
  await time('readRunsPage /', () => page({}));
  await time('readRunsPage ?tag=rare', () => page({ tags: ['rare'] }));
  await time('readRunsPage ?tag=common&env=prod', () =>
    page({ tags: ['common'], meta: [{ key: 'env', value: 'prod' }] }),
  );
  await time('runStats (shared per second)', () =>
    store.runStats({ sinceSeconds: Date.now() / 1000 - 60, claimTtlMs: CLAIM_TTL_MS }),
  );
  await time('getCatalog', () => WorkflowCatalog.load(store, builtins, liveWithinMs(HEARTBEAT_MS)));
  await time('readStallFacts (shared)', () => readStallFacts(store, settings()));
  // claimTtlMs: what countStalled took before it read listRunHeads, so the script times either version.
  const counting = { workflows: builtins.names(), claimTtlMs: CLAIM_TTL_MS } as Parameters<typeof countStalled>[2];
  await time('countStalled (shared)', () => countStalled(store, facts, counting));
  await time('waitingSummary', () => store.waitingSummary());
} finally {
  await store.close();
}
