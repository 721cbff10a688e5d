/**
 * examples/workflows.mjs and examples/approval.mjs as a reader runs them: copied into a project of their own,
 * served by `waybill worker --workflows`, started and decided with the `waybill` CLI, real processes on a
 * real SQLite file. Each side effect is counted in the file it appends its idempotency key to.
 */
import { describe, expect, it } from 'vitest';
import { counts, exampleProject, type Project, succeeds, until } from './project';

interface Run {
  status: string;
  output_json: string | null;
  error: string | null;
}
const runOf = (project: Project, id: string) =>
  project.row<Run>('SELECT status, output_json, error FROM runs WHERE id = ?', id);

function worker(project: Project, module: string) {
  const child = project.waybill(['worker', '--workflows', `./${module}`, '--id', 'w-example'], {
    WAYBILL_HEARTBEAT_MS: '200',
  });
  return {
    child,
    ready: () => until('the worker to publish', () => child.stderr().includes('"msg":"serving workflows"')),
    async stop() {
      child.kill('SIGTERM');
      expect((await child.exited).code, child.stderr()).toBe(0);
    },
  };
}

describe('examples/workflows.mjs', () => {
  it('served by a worker: digest runs its 5 pages once each and completes', async () => {
    const project = exampleProject('workflows.mjs');
    const served = worker(project, 'workflows.mjs');
    await served.ready();
    await succeeds(project.waybill(['start', 'digest', '--id', 'digest-1', '--input', '{"pages": 5}']));
    await until('digest-1 to complete', () => runOf(project, 'digest-1')?.status === 'completed');
    await served.stop();

    expect(runOf(project, 'digest-1')).toEqual({ status: 'completed', output_json: '{"pages":5}', error: null });
    expect(counts(project.lines('effects.log'))).toEqual(
      Object.fromEntries(Array.from({ length: 5 }, (_, n) => [`digest-1:step:${n}`, 1])),
    );
  });
});

describe('examples/approval.mjs', () => {
  it('waits holding no worker; approved through the CLI it issues the refund once, rejected it issues none', async () => {
    const project = exampleProject('approval.mjs');
    const served = worker(project, 'approval.mjs');
    await served.ready();
    for (const id of ['refund-yes', 'refund-no'])
      await succeeds(project.waybill(['start', 'refund', '--id', id, '--input', `{"order": "${id}", "amount": 40}`]));
    for (const id of ['refund-yes', 'refund-no'])
      await until(`${id} to wait`, () => runOf(project, id)?.status === 'waiting');
    // Waiting, the run has no owner: the worker holds nothing for it.
    expect(project.row('SELECT owner FROM runs WHERE id = ?', 'refund-yes')).toEqual({ owner: null });
    expect(project.lines('refunds.log')).toEqual([]);

    await succeeds(project.waybill(['approve', 'refund-yes', 'review', '--note', 'fine']));
    await succeeds(project.waybill(['reject', 'refund-no', 'review', '--note', 'duplicate order']));
    await until('refund-yes to complete', () => runOf(project, 'refund-yes')?.status === 'completed');
    await until('refund-no to be rejected', () => runOf(project, 'refund-no')?.status === 'rejected');
    await served.stop();

    expect(project.lines('refunds.log')).toEqual(['refund-yes:issue refund-yes 40']);
    expect(JSON.parse(runOf(project, 'refund-yes')!.output_json!)).toEqual({
      approvedBy: expect.stringMatching(/^cli:/),
      note: 'fine',
    });
    expect(runOf(project, 'refund-no')!.error).toMatch(/duplicate order/);
  });
});
