/**
 * A real SQLite file in a temp dir and a real Worker with short polls, for running the built-in workflows
 * end to end. Everything opened here is closed when the test finishes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { onTestFinished } from 'vitest';
import { startRun } from '../../lib/engine/runs';
import { Worker, type WorkerOptions } from '../../lib/engine/worker';
import type { WorkflowRegistry } from '../../lib/engine/workflow';
import type { RunRow } from '../../lib/store/contract';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { type TempDir, tempDir } from '../support/tmp';

export function openTestStore(): { store: SqliteStore; dir: TempDir } {
  const dir = tempDir('waybill-workflows-');
  const store = openSqliteStore({ path: dir.file('waybill.db'), synchronous: 'normal' });
  onTestFinished(() => store.close());
  return { store, dir };
}

/** Starts a run, lets one worker execute it, and returns its row once it is finished one way or the other. */
export async function runToEnd(
  store: SqliteStore,
  registry: WorkflowRegistry,
  request: { workflow: string; input: unknown; id?: string },
  worker: Partial<WorkerOptions> = {},
  timeoutMs = 30_000,
): Promise<RunRow> {
  const run = await startRun(store, registry, request);
  const w = new Worker({ store, registry, pollMs: 10, heartbeatMs: 200, retry: { baseMs: 1, maxMs: 5 }, ...worker });
  const running = w.run();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await store.getRun(run.id);
      if (row && ['completed', 'failed', 'cancelled'].includes(row.status)) return row;
      if (Date.now() > deadline) throw new Error(`run ${run.id} still ${row?.status} after ${timeoutMs} ms`);
      await sleep(10);
    }
  } finally {
    w.stop();
    await running;
  }
}
