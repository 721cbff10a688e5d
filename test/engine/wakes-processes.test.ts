/**
 * Waking parked runs across processes, on every backend: a real `waybill worker` whose poll is 10 minutes
 * (WAYBILL_POLL_MS=600000, so 5 to 15 minutes between looks) must still wake a sleeping run on time, and a
 * decision made by another process (the CLI) must reach it within seconds.
 *
 * The second crosses processes: the CLI's decision queues the run, and the store's wake (PostgreSQL's
 * LISTEN/NOTIFY trigger, SQLite's data_version watcher: notify.ts) reaches the worker, which polls neither at
 * WAYBILL_POLL_MS nor at WAYBILL_IDLE_POLL_MS inside the test's time.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/support';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { writeModule } from '../workflows/user-module';
import { startWorker, until } from './support';

const kinds = await targetKinds('waking parked runs across processes');

const NAP = `
export const nap = defineWorkflow({
  name: 'nap',
  input: z.object({ ms: z.number().int().min(0), effects: z.string() }),
  async run(ctx, input) {
    await ctx.sleep(input.ms);
    await ctx.runOnce(\`\${ctx.runId}:after\`, ({ idempotencyKey }) => {
      appendFileSync(input.effects, idempotencyKey + '\\n');
      return true;
    });
    return 'woke';
  },
});
`;

/** Far below the 5 minutes a worker polling every 10 minutes (jittered ±50%) would take to look again. */
const PROMPT_MS = 10_000;

async function cli(target: Target, args: string[]) {
  const result = await runCli(args, { env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal' } });
  if (result.code !== 0) throw new Error(`waybill ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

describe.each(kinds)('a worker process polling every 10 minutes on %s', (kind) => {
  function env(dir: string) {
    return {
      WAYBILL_POLL_MS: '600000',
      WAYBILL_IDLE_POLL_MS: '600000',
      WAYBILL_HEARTBEAT_MS: '200',
      WAYBILL_DATA_DIR: dir,
    };
  }

  it('wakes a run sleeping 2 s at 2 s: it sleeps until the first due wait, not until its poll', async () => {
    const target = await makeTarget(kind);
    const dir = tempDir('waybill-wakes-');
    const module = writeModule(dir.path, 'nap.mjs', NAP);
    const store = await target.store();
    await store.createRun({
      id: 'nap-1',
      workflow: 'nap',
      inputJson: JSON.stringify({ ms: 2000, effects: dir.file('effects.txt') }),
      totalSteps: null,
    });
    startWorker(target, ['--workflows', module, '--id', 'w-nap'], env(dir.path));
    await until('the run to park', async () => (await store.getRun('nap-1'))?.status === 'waiting');
    const wait = (await store.getWait('nap-1', 'sleep', 'sleep#1'))!;
    await until('the run to wake', async () => (await store.getRun('nap-1'))?.status === 'completed', {
      timeoutMs: 2000 + PROMPT_MS,
    });
    const woke = (await store.getWait('nap-1', 'sleep', 'sleep#1'))!.decidedAt!;
    expect(woke).toBeGreaterThanOrEqual(wait.dueAt!);
    // Woken by its own due time (the worker reads it from the store's clock), not by its 10-minute poll: the
    // bound is the prompt one, so a busy machine's late timer is not taken for a missed wake.
    expect(woke - wait.dueAt!).toBeLessThan(PROMPT_MS / 1000);
    expect(readFileSync(dir.file('effects.txt'), 'utf8')).toBe('nap-1:after\n');
  });

  it("an approval from the CLI wakes it within seconds, by the store's wake, not a poll", async () => {
    const target = await makeTarget(kind);
    const dir = tempDir('waybill-wakes-');
    const store = await target.store();
    await cli(target, ['start', 'review-and-send', '--input', '{}', '--id', 'ask-1']);
    startWorker(target, ['--id', 'w-ask'], env(dir.path));
    await until('the run to park', async () => (await store.getRun('ask-1'))?.status === 'waiting');
    await cli(target, ['approve', 'ask-1', '--as', 'ann']);
    await until('the run to wake', async () => (await store.getRun('ask-1'))?.status === 'completed', {
      timeoutMs: PROMPT_MS,
    });
  });

  it('refuses a poll interval it cannot keep, naming WAYBILL_POLL_MS, before it registers', async () => {
    const target = await makeTarget(kind);
    const worker = startWorker(target, ['--id', 'w-bad'], { WAYBILL_POLL_MS: '5' });
    const [code] = (await once(worker.child, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(worker.logs.map((l) => l.msg).join('\n')).toMatch(
      /WAYBILL_POLL_MS: must be a whole number of milliseconds, 10-600000/,
    );
    expect(await (await target.store()).listWorkers()).toEqual([]);
  });
});
