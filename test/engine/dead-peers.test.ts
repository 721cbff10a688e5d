/**
 * A peer is judged dead by its pid only where that pid lives: the same kernel (boot id) and pid namespace.
 * Two containers sharing a hostname cannot see each other's pids, so a live worker there looked dead and its
 * claim was released mid-step. Workers registered with another machine, or with none (rows written before
 * machines were recorded), are left to their leases; one on this machine whose pid is gone (or a zombie:
 * killed, not yet reaped) is released at the judge's first beat. Every peer has the judge's hostname, as
 * containers on the host network do. Real pids, real store, every backend.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { Worker } from '../../lib/engine/worker';
import { WorkflowRegistry } from '../../lib/engine/workflow';
import { machineId, pidAlive } from '../../lib/machine';
import type { RunStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

/** The pid of a process that has exited and been reaped. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  expect(pidAlive(pid!)).toBe(false);
  return pid!;
}

/** A real zombie: `sh` starts a child that exits 0.3 s later, by when `sh` has become `sleep`, which never reaps. */
async function zombiePid(): Promise<number> {
  const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  onTestFinished(async () => {
    parent.kill('SIGKILL');
    await once(parent, 'exit');
  });
  const [line] = (await once(createInterface({ input: parent.stdout! }), 'line')) as [string];
  const pid = Number(line);
  // Wait for it to have exited: signal 0 still reaches it, /proc says Z.
  for (let i = 0; i < 200 && pidAlive(pid); i++) await new Promise((r) => setTimeout(r, 10));
  expect(() => process.kill(pid, 0)).not.toThrow();
  return pid;
}

describe.each(list)('dead peers on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  async function peer(id: string, pid: number, machine: string | null | undefined): Promise<void> {
    await store.registerWorker({ id, host: hostname(), pid, ...(machine === undefined ? {} : { machine }) });
    await store.createRun({ id: `run-${id}`, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    await store.claimRun({ workerId: id, leaseMs: 60_000, workflows: ['wf'], runId: `run-${id}` });
    const claimed = await store.claim({
      idemKey: `run-${id}:step:0`,
      runId: `run-${id}`,
      token: `t-${id}`,
      workerId: id,
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 60_000,
    });
    expect(claimed.kind).toBe('claimed');
  }

  it('releases a dead or zombie peer of this machine at the first beat, and leaves other machines and unknown ones alone', async () => {
    const here = machineId();
    expect(here).toMatch(/^linux:[0-9a-f-]{36}:pidns:\d+:\d+$/);
    await peer('other-machine', deadPid(), here!.replace(/pidns:\d+:\d+$/, 'pidns:0:1'));
    await peer(
      'other-boot',
      deadPid(),
      here!.replace(/^linux:[0-9a-f-]{36}/, 'linux:00000000-0000-0000-0000-000000000000'),
    );
    await peer('old-row', deadPid(), undefined);
    await peer('same-machine', deadPid(), here);
    await peer('zombie', await zombiePid(), here);
    await peer('alive', process.pid, here);

    const judge = new Worker({
      store,
      registry: new WorkflowRegistry([]),
      id: 'judge',
      heartbeatMs: 60_000,
      pollMs: 10,
    });
    const running = judge.run();
    // The first beat runs before the worker polls at all, and looks at every peer in one pass.
    for (let i = 0; i < 3000; i++) {
      const stopped = (await store.listWorkers()).filter((w) => w.stoppedAt !== null).map((w) => w.id);
      if (stopped.includes('same-machine') && stopped.includes('zombie')) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    judge.stop();
    await running;

    const workers = Object.fromEntries((await store.listWorkers()).map((w) => [w.id, w]));
    expect(
      Object.entries(workers)
        .filter(([, w]) => w.stoppedAt !== null)
        .map(([id]) => id)
        .sort(),
    ).toEqual(['judge', 'same-machine', 'zombie']);
    expect(workers['old-row']?.machine).toBeNull();
    expect(workers.judge?.machine).toBe(here);
    // The dead peers' claims expired at once (taken over next, in doubt); the others' leases still run.
    const now = await h.now();
    const claims = (await store.listClaims({ claimTtlMs: 60_000 }))
      .map((c) => [c.workerId, c.leaseExpiresAt! <= now])
      .sort();
    expect(claims).toEqual([
      ['alive', false],
      ['old-row', false],
      ['other-boot', false],
      ['other-machine', false],
      ['same-machine', true],
      ['zombie', true],
    ]);
    const expired = (await Promise.all(['same-machine', 'zombie'].map((id) => store.listEvents(`run-${id}`)))).map(
      (events) => events.filter((e) => e.outcome === 'expired').length,
    );
    expect(expired).toEqual([1, 1]);
    for (const id of ['other-machine', 'other-boot', 'old-row', 'alive']) {
      expect(await store.listEvents(`run-${id}`)).toEqual([]);
    }
  });
});
