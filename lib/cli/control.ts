/**
 * Commands that change runs: `start` queues one of any workflow the store knows, and the operator actions
 * pause, resume, cancel and retry. Thin: flags are parsed here, lib/control/runs decides, validates, writes
 * and audits (as `--as NAME` or `cli:<OS user>`, role local), and the answer is printed in the API's views.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runs } from '../control';
import { judgeRun } from '../control/queued';
import { stallSettings } from '../control/stalled';
import { runView } from '../control/views';
import { traceparentSchema } from '../domain/traceparent';
import { inputError } from '../engine/input-check';
import { runIdSchema } from '../engine/runs';
import { type StartableWorkflows, type StartCheck, startRefusal } from '../engine/workflow';
import { StartRefusedError, UsageError } from '../errors';
import { runSpendUsd } from '../gateway/ledger';
import type { RunAction, RunRow } from '../store/contract';
import {
  check,
  flags,
  GLOBAL_OPTIONS,
  jsonArg,
  lookupId,
  metaFlags,
  positionals,
  priorityFlag,
  tagFlags,
  usd,
} from './args';
import { type Cli, callerOf, withControl } from './context';
import { followRun } from './follow';

export async function start(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        input: { type: 'string' },
        id: { type: 'string' },
        budget: { type: 'string' },
        priority: { type: 'string' },
        tag: { type: 'string', multiple: true },
        meta: { type: 'string', multiple: true },
        traceparent: { type: 'string' },
        follow: { type: 'boolean' },
      },
    }),
  );
  const [workflow] = positionals(given, ['workflow']) as [string];
  const input = values.input === undefined ? {} : jsonArg(values.input, '--input', cli.config().WAYBILL_MAX_BODY_BYTES);
  const id = values.id === undefined ? undefined : check(runIdSchema, values.id, '--id');
  const budgetUsd = values.budget === undefined ? undefined : check(usd, values.budget, '--budget');
  const priority = values.priority === undefined ? undefined : check(priorityFlag, values.priority, '--priority');
  const tags = tagFlags(values.tag);
  const meta = metaFlags(values.meta);
  const metadata = meta && Object.fromEntries(meta.map((m) => [m.key, m.value]));
  // A start inside a traced pipeline continues its trace: --traceparent, else the TRACEPARENT it was started with.
  const traceparent =
    values.traceparent === undefined
      ? cli.config().TRACEPARENT
      : check(traceparentSchema, values.traceparent, '--traceparent');
  const caller = callerOf(cli, values.as);
  const builtins = await cli.registry(undefined, values.db);
  // A built-in's input is checked before the store is opened, so bad input never opens (or creates) it; any
  // other workflow is known only from what workers published there, and a store file that does not exist yet
  // has published nothing.
  if (builtins.has(workflow)) refuse(workflow, builtins.check(workflow, input), builtins);
  else if (!storeMayExist(values.db ?? cli.config().DATABASE_URL)) refuse(workflow, undefined, builtins);

  return withControl(cli, values.db, async (deps) => {
    let catalog: Awaited<ReturnType<Cli['catalog']>> | undefined;
    const run = await runs
      .start({ ...deps, workflows: async (store) => (catalog = await cli.catalog(store, values.db)) }, caller, {
        workflow,
        input,
        id,
        budgetUsd,
        priority,
        tags,
        metadata,
        traceparent,
      })
      .catch((error: unknown) => {
        // The CLI's words for a refused start, as before lib/control: exit 2, each wrong field named.
        if (error instanceof StartRefusedError)
          throw error.kind === 'input' ? inputError(workflow, error.issues) : new UsageError(error.message);
        throw error;
      });
    // A repeat of a start that was made: the run is answered, nothing is queued again (lib/control start).
    if (run.existed)
      cli.err(
        `waybill start: run ${run.id} exists with this workflow and input (it is ${run.status}): not started again`,
      );
    // Said once, after queueing (a --follow shows the run sitting in queued instead).
    const served = catalog?.entry(workflow)?.servedBy.length ?? 0;
    if (served === 0 && !run.existed && !values.json && !values.follow)
      cli.err(
        `waybill start: no live worker serves ${workflow} yet; the run waits for one (waybill worker${catalog?.entry(workflow)?.builtin ? '' : ' --workflows <module>'})`,
      );
    if (!values.follow) {
      if (values.json) {
        const judgement = await judgeRun(await deps.store(), run, stallSettings(cli.config()));
        cli.json({ ...judged(run, judgement), ...run.runTags });
      } else
        cli.out(
          `${run.existed ? 'exists' : 'queued'} ${run.id} (${run.workflow}${run.totalSteps === null ? '' : `, ${run.totalSteps} steps`})`,
        );
      return 0;
    }
    if (!values.json)
      cli.out(`${run.existed ? 'exists' : 'queued'} ${run.id}; following it (a worker runs it: waybill worker)`);
    const final = await followRun(cli, await deps.store(), run.id);
    if (!final) {
      cli.err(`waybill start: stopped following; run ${run.id} goes on`);
      return 130;
    }
    if (values.json) cli.json(runView(final));
    else cli.out(`run ${final.id} ${final.status}${final.error ? `: ${final.error}` : ''}`);
    return final.status === 'completed' ? 0 : 1;
  });
}

/** `waybill budget <runId> <usd>`: sets the run's budget, and says what it has spent and what comes next. */
export async function budget(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, reason: { type: 'string' } },
    }),
  );
  const [id, amount] = positionals(given, ['runId', 'usd']) as [string, string];
  const runId = check(lookupId, id, 'run id');
  const budgetUsd = check(usd, amount, '<usd>');
  const caller = callerOf(cli, values.as);
  const { run, spent, judgement } = await withControl(cli, values.db, async (deps) => {
    const run = await runs.budget(deps, caller, { runId, budgetUsd, reason: values.reason });
    const store = await deps.store();
    return {
      run,
      spent: await runSpendUsd(store, run.id),
      judgement: values.json ? await judgeRun(store, run, stallSettings(cli.config())) : null,
    };
  });
  if (values.json) {
    cli.json(judged(run, judgement));
    return 0;
  }
  const next = run.status === 'paused' ? `; it is paused: waybill resume ${run.id} to continue` : '';
  cli.out(`budget of ${run.id}: $${run.budgetUsd} (spent $${spent.toFixed(6)})${next}`);
  return 0;
}

/** Exit 2 for a name nobody knows or an input that does not fit, naming each wrong field. */
function refuse(workflow: string, checked: StartCheck | undefined, known: StartableWorkflows): void {
  if (!checked)
    throw new UsageError(`unknown workflow ${JSON.stringify(workflow)} (known: ${known.names().join(', ')})`);
  if (!checked.ok) throw startRefusal(workflow, checked);
}

/** False only for a SQLite file that is not there: nothing can have been published in it. */
function storeMayExist(url: string): boolean {
  if (!url.startsWith('file:')) return true;
  const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return path === ':memory:' || existsSync(path);
}

const DONE: Record<RunAction, string> = {
  pause: 'paused',
  resume: 'resumed',
  cancel: 'cancelled',
  retry: 'queued again',
};

/** pause, resume, cancel, retry; cancel takes `--reason`, kept in the audit log. `--all-matching`: lib/cli/bulk.ts. */
export async function act(cli: Cli, action: RunAction, args: string[]): Promise<number> {
  if (args.includes('--all-matching')) return (await import('./bulk')).actAll(cli, action, args);
  const options = action === 'cancel' ? { ...GLOBAL_OPTIONS, reason: { type: 'string' as const } } : GLOBAL_OPTIONS;
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options }),
  );
  const [id] = positionals(given, ['runId']);
  const runId = check(lookupId, id, 'run id');
  const caller = callerOf(cli, values.as);
  const { run, judgement } = await withControl(cli, values.db, async (deps) => {
    const run = await runs.act(deps, caller, { action, runId, reason: (values as { reason?: string }).reason });
    return {
      run,
      judgement: values.json ? await judgeRun(await deps.store(), run, stallSettings(cli.config())) : null,
    };
  });
  if (values.json) {
    cli.json(judged(run, judgement));
    return 0;
  }
  // A running run keeps its owner until the worker notices, between two steps.
  const pending =
    run.owner && (action === 'pause' || action === 'cancel') ? `; ${run.owner} lets go after its current step` : '';
  cli.out(`${DONE[action]} ${run.id}: it is ${run.status}${pending}`);
  return 0;
}

/** A single run's answer (`start --json`, an action's): the API's view with its stall and queued reason. */
function judged(run: RunRow, judgement: Awaited<ReturnType<typeof judgeRun>> | null) {
  return runView(run, false, judgement?.stall ?? null, judgement?.queuedReason ?? null);
}
