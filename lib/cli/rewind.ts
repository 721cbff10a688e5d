/**
 * `waybill step` (one step's story), `waybill rerun` and `waybill fork` (rewinding a run from a step). Thin:
 * flags are parsed here; lib/control/steps and lib/control/rewind read, decide, write and audit.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { rewind, steps } from '../control';
import { forkAnswer, lastCostView, letGoView, rerunAnswer } from '../control/views';
import { lastCostText, type RewindCost } from '../gateway/rewind-cost';
import type { LetGoChild } from '../store/contract';
import { check, flags, GLOBAL_OPTIONS, jsonArg, lookupId, positionals } from './args';
import { type Cli, callerOf, withControl } from './context';
import { fields, relative, table, truncate } from './format';
import { stepFlag } from './step-flag';

const stepNumber = z
  .string()
  .regex(/^\d+$/, 'must be a step number (a whole number, 0 or more)')
  .transform(Number)
  .pipe(z.number().int().max(Number.MAX_SAFE_INTEGER, 'is too large'));

export async function step(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options: GLOBAL_OPTIONS }),
  );
  const [id, n] = positionals(given, ['runId', 'step']);
  const runId = check(lookupId, id, 'run id');
  const number = check(stepNumber, n, 'step');
  const caller = callerOf(cli, values.as);
  const view = await withControl(cli, values.db, (deps) => steps.read(deps, caller, { runId, step: number }));
  if (values.json) {
    cli.json(view);
    return 0;
  }
  const now = Date.now();
  cli.out(
    fields([
      ['run', `${view.runId}${view.workflow ? `  (${view.workflow}, ${view.runStatus})` : ''}`],
      ['step', String(view.step)],
      ['key', view.key ?? '—'],
      ['status', view.status.replace('_', ' ')],
      ...(view.committed
        ? [
            [
              'committed',
              `${relative(view.committed.committedAt, now)} by ${view.committed.workerId ?? '—'}${view.committed.source === 'executed' ? '' : ` (${view.committed.source}${view.committed.forkedFrom ? ` from ${view.committed.forkedFrom}` : ''})`}`,
            ] as [string, string],
          ]
        : []),
    ]),
  );
  if (view.attempts.length > 0) {
    cli.out(`\nattempts (${view.attempts.length})`);
    cli.out(
      table(
        ['#', 'ATTEMPT', 'OUTCOME', 'ENDED', 'MS', 'WORKER', 'ERROR'],
        view.attempts.map((a) => [
          a.n,
          a.attempt === null ? null : a.maxAttempts === null ? String(a.attempt) : `${a.attempt} of ${a.maxAttempts}`,
          a.outcome.replace('_', ' '),
          relative(a.endedAt, now),
          a.durationMs === null ? null : Math.round(a.durationMs),
          a.workerId,
          truncate(a.error, 80),
        ]),
      ),
    );
  }
  if (view.committed && view.committed.input !== null)
    cli.out(`\ninput\n${JSON.stringify(view.committed.input, null, 2)}`);
  if (view.committed) cli.out(`\nresult\n${JSON.stringify(view.result, null, 2)}`);
  for (const h of view.history) {
    cli.out(
      `\nsuperseded by rerun ${h.rerun} at ${new Date(h.supersededAt * 1000).toISOString()}, by ${h.supersededBy}${h.reason ? ` (${h.reason})` : ''}`,
    );
    cli.out(JSON.stringify(h.result, null, 2));
  }
  return 0;
}

function rewindFlags(args: string[], fork: boolean, maxBytes: number) {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        'from-step': { type: 'string' },
        input: { type: 'string' },
        reason: { type: 'string' },
        'dry-run': { type: 'boolean' },
        ...(fork ? { id: { type: 'string' as const } } : {}),
      },
    }),
  );
  const [id] = positionals(given, ['runId']);
  const runId = check(lookupId, id, 'run id');
  const fromStep = check(stepFlag, values['from-step'] ?? '', '--from-step');
  const input = values.input === undefined ? undefined : jsonArg(values.input, '--input', maxBytes);
  return { values: values as typeof values & { id?: string }, runId, fromStep, input };
}

/**
 * What the rewind would do, said before it acts: what the steps to be redone cost last time and, for a rerun,
 * the child runs it lets go (in text a line each, the children's only when there are some; with --json the
 * preview's lastCost and letGo, as the answer's). --dry-run stops there: it says what would be redone and writes
 * nothing.
 */
async function previewFirst(
  cli: Cli,
  given: { runId: string; dryRun: boolean; json: boolean },
  read: () => Promise<{ lastCost: RewindCost; letGo?: LetGoChild[] }>,
  wouldDo: (cost: RewindCost) => string,
): Promise<boolean> {
  if (given.json && !given.dryRun) return false;
  const preview = await read();
  const { lastCost } = preview;
  const letGo = preview.letGo && letGoView(preview.letGo);
  if (given.json)
    cli.json({ dryRun: true, runId: given.runId, lastCost: lastCostView(lastCost), ...(letGo ? { letGo } : {}) });
  else {
    cli.out(lastCostText(lastCost));
    if (letGo && letGo.count > 0) cli.out(letGo.text);
    if (given.dryRun) cli.out(`dry run: ${wouldDo(lastCost)}; nothing changed`);
  }
  return given.dryRun;
}

const span = (from: number, to: number) => (from === to ? `step ${from}` : `steps ${from}–${to}`);

export async function rerun(cli: Cli, args: string[]): Promise<number> {
  if (args.includes('--all-matching')) return (await import('./bulk')).actAll(cli, 'rerun', args);
  const { values, runId, fromStep, input } = rewindFlags(args, false, cli.config().WAYBILL_MAX_BODY_BYTES);
  const caller = callerOf(cli, values.as);
  const dryRun = values['dry-run'] === true;
  const outcome = await withControl(cli, values.db, async (deps) => {
    const stop = await previewFirst(
      cli,
      { runId, dryRun, json: values.json === true },
      () => rewind.rerunPreview(deps, caller, { runId, fromStep }),
      (c) =>
        `rerun of ${runId} from ${stepText(c.fromStep, fromStep)} would move the results of ${span(c.fromStep, c.toStep)} to history and queue the run to run them again`,
    );
    return stop ? null : rewind.rerun(deps, caller, { runId, fromStep, input, reason: values.reason });
  });
  if (!outcome) return 0;
  if (values.json) cli.json(rerunAnswer(outcome));
  else
    cli.out(
      `rerun ${outcome.rerun} of ${runId} from ${stepText(outcome.fromStep, fromStep)}: ${outcome.moved} results moved to history${stateText(outcome)}; it is ${outcome.run.status}`,
    );
  return 0;
}

export async function fork(cli: Cli, args: string[]): Promise<number> {
  const { values, runId, fromStep, input } = rewindFlags(args, true, cli.config().WAYBILL_MAX_BODY_BYTES);
  const caller = callerOf(cli, values.as);
  const dryRun = values['dry-run'] === true;
  const outcome = await withControl(cli, values.db, async (deps) => {
    const stop = await previewFirst(
      cli,
      { runId, dryRun, json: values.json === true },
      async () => ({ lastCost: await rewind.cost(deps, caller, { runId, fromStep }) }),
      (c) =>
        `a fork of ${runId} from ${stepText(c.fromStep, fromStep)} would copy ${c.fromStep === 0 ? 'no steps' : span(0, c.fromStep - 1)} and run ${span(c.fromStep, c.toStep)} anew as a new run`,
    );
    return stop ? null : rewind.fork(deps, caller, { runId, fromStep, id: values.id, input, reason: values.reason });
  });
  if (!outcome) return 0;
  if (values.json) cli.json(forkAnswer(outcome));
  else
    cli.out(
      `forked ${outcome.run.id} from ${runId} at ${stepText(outcome.fromStep, fromStep)}: ${outcome.moved} results copied${stateText(outcome)}; it is ${outcome.run.status}`,
    );
  return 0;
}

const stepText = (n: number, given: number | string) =>
  typeof given === 'number' ? `step ${n}` : `step ${n} (${given})`;

function stateText(outcome: { state: string; stateStep: number | null }): string {
  if (outcome.state === 'restored') return `, state as it was at step ${outcome.stateStep}`;
  if (outcome.state === 'kept') return ', state kept as it is (none recorded at that step)';
  return '';
}
