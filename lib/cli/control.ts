/**
 * Commands that change runs: `start` queues one of any workflow the store knows (input checked against its
 * schema, a built-in's before the store is opened), and the operator actions pause, resume, cancel and retry.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { inputError } from '../engine/input-check';
import { runIdSchema, startRun } from '../engine/runs';
import type { StartCheck, StartableWorkflows } from '../engine/workflow';
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
  const [workflow] = positionals(given, ['workflow']) as [string];
  const input = values.input === undefined ? {} : jsonArg(values.input, '--input');
  const id = values.id === undefined ? undefined : check(runIdSchema, values.id, '--id');
  const builtins = await cli.registry(undefined, values.db);
  // A built-in's input is checked before the store is opened, so bad input never opens (or creates) it; any
  // other workflow is known only from what workers published there, and a store file that does not exist yet
  // has published nothing.
  if (builtins.has(workflow)) refuse(workflow, builtins.check(workflow, input), builtins);
  else if (!storeMayExist(values.db ?? cli.config().DATABASE_URL)) refuse(workflow, undefined, builtins);

  return withStore(cli, values.db, async (s) => {
    const store = runStore(s);
    const catalog = await cli.catalog(store, values.db);
    refuse(workflow, catalog.check(workflow, input), catalog);
    const run = await startRun(store, catalog, { workflow, input, id });
    // Said once, after queueing (a --follow shows the run sitting in queued instead).
    const served = catalog.entry(workflow)?.servedBy.length ?? 0;
    if (served === 0 && !values.json && !values.follow) cli.err(`waybill start: no live worker serves ${workflow} yet; the run waits for one (waybill worker${catalog.entry(workflow)?.builtin ? '' : ' --workflows <module>'})`);
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

/** Exit 2 for a name nobody knows or an input that does not fit, naming each wrong field. */
function refuse(workflow: string, checked: StartCheck | undefined, known: StartableWorkflows): void {
  if (!checked) throw new UsageError(`unknown workflow ${JSON.stringify(workflow)} (known: ${known.names().join(', ')})`);
  if (!checked.ok) throw inputError(workflow, checked.issues);
}

/** False only for a SQLite file that is not there: nothing can have been published in it. */
function storeMayExist(url: string): boolean {
  if (!url.startsWith('file:')) return true;
  const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return path === ':memory:' || existsSync(path);
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
