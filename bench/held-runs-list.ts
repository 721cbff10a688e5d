/**
 * `npx tsx bench/held-runs-list.ts <store URL> [queued runs] [keys]`: the runs list of queued runs (limit 50) whose
 * workflow has a concurrency limit of 3 per key, each with its reason (lib/control/queued.ts), on a store that holds
 * `queued runs` (10,000) of it under `keys` (100) keys and a live worker serving it with free slots, so that every
 * listed run is judged by its limits. Seeds them into a store with no runs of workflow `held-bench`; p50 and the
 * fastest of 20 calls, ms. A `file:` URL or a PostgreSQL URL (WAYBILL_PG_SCHEMA names its schema).
 */
import { readRunsPage } from '../lib/control/runs-list';
import { readStallFacts } from '../lib/control/stalled';
import type { RunLimits } from '../lib/domain/run-limits';
import { openStore } from '../lib/store/index';

const [url, runsText, keysText] = process.argv.slice(2);
if (!url) {
  process.stderr.write('usage: tsx bench/held-runs-list.ts <store URL> [queued runs] [keys]\n');
  process.exit(2);
}
const queued = Number(runsText ?? 10_000);
const keys = Number(keysText ?? 100);
const WORKFLOW = 'held-bench';
const limits: RunLimits = { concurrency: { limit: 3, key: 'customer' } };

const store = await openStore(url);
try {
  if ((await store.listRuns({ workflow: WORKFLOW, limit: 1, claimTtlMs: 30_000 })).length === 0) {
    for (let i = 0; i < queued; i++)
      await store.createRun({
        id: `held-${i}`,
        workflow: WORKFLOW,
        inputJson: JSON.stringify({ customer: `c${i % keys}`, prompt: 'x'.repeat(200) }),
        totalSteps: 1,
      });
  }
  await store.registerWorker({ id: 'held-bench-worker', host: 'bench', pid: process.pid, slots: 100 });
  await store.publishWorkflows('held-bench-worker', [
    { name: WORKFLOW, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits },
  ]);
  const ms: number[] = [];
  let held = 0;
  for (let i = 0; i <= 20; i++) {
    await store.heartbeatWorker('held-bench-worker');
    const facts = readStallFacts(store, { now: Date.now() / 1000, runLeaseMs: 600_000, heartbeatMs: 60_000 });
    const started = performance.now();
    const page = await readRunsPage(
      store,
      { status: 'queued', workflow: WORKFLOW, limit: 50, claimTtlMs: 30_000 },
      facts,
    );
    if (i > 0) ms.push(performance.now() - started);
    held = page.runs.filter((run) => run.queuedReason?.kind === 'held').length;
  }
  ms.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify({ queued, keys, p50: Number(ms[10]!.toFixed(1)), fastest: Number(ms[0]!.toFixed(1)), held })}\n`,
  );
} finally {
  await store.close();
}
