/**
 * Commands that change runs: `start` queues one (input checked against the workflow's schema before the
 * store is opened), and the operator actions pause, resume, cancel and retry.
 */
import { parseArgs } from 'node:util';
import { runIdSchema, startRun } from '../engine/runs';
import { auditDetail } from '../reason';
import type { RunAction } from '../store/types';
import { GLOBAL_OPTIONS, UsageError, check, flags, jsonArg, lookupId, positionals } from './args';
import { reasonArg, recordCliAudit } from './audit';
import { runStore, withStore, type Cli } from './context';
import { followRun } from './follow';

export async function start(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() => parseArgs({
    args, strict: true, allowPositionals: true,
    options: { ...GLOBAL_OPTIONS, input: { type: 'string' }, id: { type: 'string' }, follow: { type: 'boolean' } },
  }));
  const [workflow] = positionals(given, ['workflow']);
  const input = values.input === undefined ? {} : jsonArg(values.input, '--input');
  const id = values.id === undefined ? undefined : check(runIdSchema, values.id, '--id');
  const registry = await cli.registry();
  if (!registry.names().includes(workflow!)) {
    throw new UsageError(`unknown workflow ${JSON.stringify(workflow)} (known: ${registry.names().join(', ')})`);
  }
  // Checked here as well as in startRun so that bad input never opens (or creates) the store.
  registry.parseInput(workflow!, input);

  return withStore(cli, values.db, async (s) => {
    const store = runStore(s);
    const run = await startRun(store, registry, { workflow: workflow!, input, id });
    if (!values.follow) {
      if (values.json) cli.json(run);
      else cli.out(`queued ${run.id} (${run.workflow}${run.totalSteps === null ? '' : `, ${run.totalSteps} steps`})`);
      return 0;
    }
    if (!values.json) cli.out(`queued ${run.id}; following it (a worker runs it: waybill worker)`);
    const final = await followRun(cli, store, run.id);
    if (!final) {
      cli.err(`waybill start: stopped following; run ${run.id} goes on`);
      return 130;
    }
    if (values.json) cli.json(final);
    else cli.out(`run ${final.id} ${final.status}${final.error ? `: ${final.error}` : ''}`);
    return final.status === 'completed' ? 0 : 1;
  });
}

const DONE: Record<RunAction, string> = { pause: 'paused', resume: 'resumed', cancel: 'cancelled', retry: 'queued again' };

/** pause, resume, cancel, retry; cancel takes `--reason`, kept in the audit log. */
export async function act(cli: Cli, action: RunAction, args: string[]): Promise<number> {
  const options = action === 'cancel' ? { ...GLOBAL_OPTIONS, reason: { type: 'string' as const } } : GLOBAL_OPTIONS;
  const { values, positionals: given } = flags(() => parseArgs({ args, strict: true, allowPositionals: true, options }));
  const [id] = positionals(given, ['runId']);
  const runId = check(lookupId, id, 'run id');
  const reason = reasonArg((values as { reason?: string }).reason);
  const run = await withStore(cli, values.db, async (store) => {
    const acted = await runStore(store).actOnRun(runId, action, cli.actor);
    await recordCliAudit(cli, store, { action, target: runId, runId, detail: auditDetail({ reason }) });
    return acted;
  });
  if (values.json) {
    cli.json(run);
    return 0;
  }
  // A running run keeps its owner until the worker notices, between two steps.
  const pending = run.owner && (action === 'pause' || action === 'cancel') ? `; ${run.owner} lets go after its current step` : '';
  cli.out(`${DONE[action]} ${run.id}: it is ${run.status}${pending}`);
  return 0;
}
