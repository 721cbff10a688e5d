/**
 * A user's own loop (Checkpoint + runAgent in a real child process) declared with a workflow and a total,
 * against a SQLite file and against PostgreSQL: listed by name and total, paused and cancelled through the
 * control plane's operations, resumed and restarted, SIGKILLed mid-step and restarted at once. Every count is
 * fixed by where the loop was held, never by how fast anything ran: side effects per step, committed rows,
 * claims left, and lease times read from the store's own clock.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { getRun, listRuns, type RunsStore } from '../../lib/api/runs';
import { stepKey } from '../../lib/checkpoint/keys';
import { runs } from '../../lib/control';
import { openStore } from '../../lib/store/index';
import type { LibraryLoopArgs } from '../fixtures/library-loop';
import { type Child, finish, killHard, spawnFixture } from '../support/child';
import { postgresAvailable, testSchema } from '../support/postgres';
import { tempDir } from '../support/tmp';

/** The control plane's own action, as the dashboard, the API and the CLI make it (lib/control). */
const act = (store: RunsStore, runId: string, action: 'pause' | 'resume' | 'cancel') =>
  runs.act(
    { store: async () => store, claimTtlMs: 30_000, maxBytes: 1 << 20 },
    { actor: 'operator:test', role: 'operator', channel: 'api' },
    { action, runId },
  );

const TTL = 30_000;
const STEPS = 6;
const pgUp = await postgresAvailable('library loop tests on PostgreSQL');

interface Target {
  url: string;
  store: RunsStore;
}

async function sqliteTarget(): Promise<Target> {
  const url = `file:${tempDir('waybill-loops-').file('store.db')}`;
  const store = (await openStore(url, { synchronous: 'normal' })) as RunsStore;
  return { url, store };
}

async function postgresTarget(): Promise<Target> {
  const { url } = await testSchema('wb_loops');
  const store = (await openStore(url)) as RunsStore;
  return { url, store };
}

const targets: [string, () => Promise<Target>][] = [
  ['sqlite', sqliteTarget],
  ...(pgUp ? [['postgres', postgresTarget] as [string, () => Promise<Target>]] : []),
];

/** Side effects per step, from the effects file: what actually ran. */
function effects(file: string): { step: number; attempt: number; pid: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, step, attempt, pid] = /^step=(\d+) attempt=(\d+) pid=(\d+)$/.exec(line)!;
      return { step: Number(step), attempt: Number(attempt), pid: Number(pid) };
    });
}

const perStep = (file: string) => {
  const counts = new Array<number>(STEPS).fill(0);
  for (const e of effects(file)) counts[e.step]!++;
  return counts;
};

function loop(base: LibraryLoopArgs, extra: Partial<LibraryLoopArgs> = {}): Child {
  return spawnFixture('library-loop.ts', { ...base, ...extra });
}

async function stopped(child: Child): Promise<string> {
  const line = await child.waitForLine(/^STOPPED /);
  expect((await child.exited).code).toBe(3);
  return line.split(' ')[1]!;
}

describe.each(targets)('library loops on %s', (_name, open) => {
  async function setup(runId: string) {
    const target = await open();
    const effectsFile = tempDir('waybill-loop-effects-').file('effects.log');
    const base: LibraryLoopArgs = {
      url: target.url,
      runId,
      workflow: 'nightly-summaries',
      steps: STEPS,
      workerId: 'laptop-loop',
      effects: effectsFile,
    };
    return { ...target, base, effectsFile, close: () => target.store.close() };
  }

  it('is listed by name and total; a pause stops it after the step in hand, and resumed and restarted it completes each step once', async () => {
    const { store, base, effectsFile, close } = await setup('loop-pause');
    try {
      const first = loop(base, { holdAt: { step: 2, until: 'go' } });
      await first.waitForLine(/^IN step=2 /);

      const listed = (await listRuns(store, { workflow: 'nightly-summaries' }, TTL)).runs;
      expect(listed).toEqual([
        expect.objectContaining({
          id: 'loop-pause',
          workflow: 'nightly-summaries',
          status: 'running',
          totalSteps: STEPS,
          step: 2,
        }),
      ]);
      const running = await getRun(store, 'loop-pause', TTL);
      expect(running.run).toMatchObject({
        external: false,
        owner: 'laptop-loop',
        status: 'running',
        totalSteps: STEPS,
      });
      expect(running.actions).toEqual(expect.arrayContaining(['pause', 'cancel']));

      // The control plane's own pause, while step 2 is in hand; then step 2 is let finish.
      await act(store, 'loop-pause', 'pause');
      first.send('GO');
      expect(await stopped(first)).toBe('RUN_PAUSED');

      // Step 2 finished and was committed once; step 3 never started, and was not even claimed ahead.
      expect(perStep(effectsFile)).toEqual([1, 1, 1, 0, 0, 0]);
      expect(await store.countCommitted('loop-pause')).toBe(3);
      expect(await store.listClaims({ runId: 'loop-pause', claimTtlMs: TTL })).toEqual([]);
      const paused = await getRun(store, 'loop-pause', TTL);
      expect(paused.run).toMatchObject({
        status: 'paused',
        owner: null,
        workflow: 'nightly-summaries',
        totalSteps: STEPS,
      });
      // A pause is a pause: nothing on the timeline says a step failed.
      expect(
        (await store.listEvents('loop-pause')).filter((e) => e.outcome === 'failed' || e.outcome === 'lease_lost'),
      ).toEqual([]);

      // Restarted while still paused, the loop does not start.
      expect(await stopped(loop(base))).toBe('RUN_PAUSED');
      expect(perStep(effectsFile)).toEqual([1, 1, 1, 0, 0, 0]);

      await act(store, 'loop-pause', 'resume');
      const report = await finish<{ executed: number; skipped: number; processed: number }>(loop(base));
      expect(report).toMatchObject({ executed: 3, skipped: 0, processed: STEPS });
      expect(perStep(effectsFile)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(await store.countCommitted('loop-pause')).toBe(STEPS);
      const done = await getRun(store, 'loop-pause', TTL);
      expect(done.run).toMatchObject({
        status: 'completed',
        workflow: 'nightly-summaries',
        totalSteps: STEPS,
        owner: null,
      });
      expect(done.progress).toMatchObject({ step: STEPS });
    } finally {
      await close();
    }
  });

  it('a cancel stops it after the step in hand, and a restarted loop does not start', async () => {
    const { store, base, effectsFile, close } = await setup('loop-cancel');
    try {
      const first = loop(base, { holdAt: { step: 1, until: 'go' } });
      await first.waitForLine(/^IN step=1 /);
      await act(store, 'loop-cancel', 'cancel');
      first.send('GO');
      expect(await stopped(first)).toBe('RUN_CANCELLED');
      expect(perStep(effectsFile)).toEqual([1, 1, 0, 0, 0, 0]);
      expect(await store.countCommitted('loop-cancel')).toBe(2);
      expect(await store.listClaims({ runId: 'loop-cancel', claimTtlMs: TTL })).toEqual([]);

      expect(await stopped(loop(base))).toBe('RUN_CANCELLED');
      expect(perStep(effectsFile)).toEqual([1, 1, 0, 0, 0, 0]);
      expect((await getRun(store, 'loop-cancel', TTL)).run).toMatchObject({
        status: 'cancelled',
        workflow: 'nightly-summaries',
      });
    } finally {
      await close();
    }
  });

  it("SIGKILLed mid-step and restarted at once, it takes over its own claim with attempt 2 before that claim's lease has passed", async () => {
    const { store, base, effectsFile, close } = await setup('loop-kill');
    try {
      const first = loop(base, { holdAt: { step: 3, until: 'killed' } });
      await first.waitForLine(/^IN step=3 /);
      const held = await store.getClaim(stepKey('loop-kill', 3), { claimTtlMs: TTL });
      expect(held).toMatchObject({ workerId: 'laptop-loop', attempt: 1, orphaned: false });
      await killHard(first);

      const report = await finish<{ executed: number; skipped: number; awaited: number }>(loop(base));
      expect(report).toMatchObject({ executed: 3, skipped: 0, awaited: 0 });
      // Step 3 ran once, on its second attempt, in the second process; every step ran exactly once.
      expect(perStep(effectsFile)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(effects(effectsFile).find((e) => e.step === 3)).toMatchObject({ attempt: 2 });
      // The takeover happened while the dead process's lease (30 s) still had most of its time to run:
      // judged on the store's clock, the one every lease is judged on.
      const takeover = (await store.listEvents('loop-kill')).filter((e) => e.outcome === 'expired');
      expect(takeover).toHaveLength(1);
      expect(takeover[0]).toMatchObject({ idemKey: stepKey('loop-kill', 3) });
      expect(takeover[0]!.at).toBeLessThan(held!.leaseExpiresAt!);
      expect((await getRun(store, 'loop-kill', TTL)).run).toMatchObject({ status: 'completed', attempts: 2 });
    } finally {
      await close();
    }
  });
});
