// Your own loop in your own process, no worker: Checkpoint and runAgent over the store the dashboard reads.
//   node loop.mjs          # kill -9 it mid-run and run it again: it goes on where it stopped
//   npx waybill runs --workflow nightly-notes
// DATABASE_URL picks the store (default file:./data/waybill.db); RUN_ID the run (default nightly-1).
import { appendFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Checkpoint, openStore, runAgent } from 'waybill';

const store = await openStore(process.env.DATABASE_URL ?? 'file:./data/waybill.db');
// A fixed worker id: a restart of this loop on this machine takes over its dead predecessor's claim at once.
const checkpoint = new Checkpoint(store, process.env.RUN_ID ?? 'nightly-1', {
  workerId: `loop-${hostname()}`,
  workflow: 'nightly-notes',
});
const notes = Array.from({ length: 8 }, (_, i) => `note ${i}`);

const report = await runAgent(notes, checkpoint, async (note, { idempotencyKey, signal }) => {
  await sleep(Number(process.env.STEP_MS ?? 200), undefined, { signal }); // the "model call"
  appendFileSync('effects.log', `${idempotencyKey}\n`);
  return { summary: `summary of ${note}` };
});
console.log(JSON.stringify(report)); // {"processed":8,"executed":…,"skipped":0,"awaited":0}
await store.close();
