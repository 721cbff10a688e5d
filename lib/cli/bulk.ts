/**
 * `waybill pause|resume|cancel|retry --all-matching [--status S] [--waiting KIND] [--workflow W] [--search Q]
 * [--tag T]… [--meta K=V]… [--reason TEXT] --yes`, and `waybill rerun --all-matching --from-step N|NAME …` the same way: one action over every run the filters
 * match (`waybill runs`'s filters), through lib/control/bulk, audited per run. Without --yes nothing changes: it
 * says how many runs match and how many the action applies to.
 */
import { parseArgs } from 'node:util';
import { bulk } from '../control';
import type { BulkAction } from '../control/bulk';
import { UsageError } from '../errors';
import { check, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, callerOf, withControl } from './context';
import { stepFlag } from './step-flag';

export const BULK_OPTIONS = {
  'all-matching': { type: 'boolean' },
  status: { type: 'string' },
  waiting: { type: 'string' },
  workflow: { type: 'string' },
  search: { type: 'string' },
  tag: { type: 'string', multiple: true },
  meta: { type: 'string', multiple: true },
  reason: { type: 'string' },
  yes: { type: 'boolean' },
  'from-step': { type: 'string' },
} as const;

export async function actAll(cli: Cli, action: BulkAction, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options: { ...GLOBAL_OPTIONS, ...BULK_OPTIONS } }),
  );
  if (given.length > 0)
    throw new UsageError(
      `--all-matching acts on the runs the filters match: unexpected run id ${JSON.stringify(given[0])}`,
    );
  const filter = {
    status: values.status,
    waiting: values.waiting,
    workflow: values.workflow,
    q: values.search,
    tag: values.tag,
    meta: values.meta,
  };
  if (action !== 'rerun' && values['from-step'] !== undefined)
    throw new UsageError('--from-step: only rerun takes a step (waybill rerun --all-matching --from-step N|NAME)');
  const fromStep = action === 'rerun' ? check(stepFlag, values['from-step'] ?? '', '--from-step') : undefined;
  const caller = callerOf(cli, values.as);
  // lib/control checks the filters before the store is opened: a bad flag neither opens nor creates it.
  const named = (error: unknown) => {
    const fields = (error as { fields?: Record<string, string[]> }).fields;
    if (!fields) throw error;
    const flag: Record<string, string> = {
      'filter.status': '--status',
      'filter.waiting': '--waiting',
      'filter.workflow': '--workflow',
      'filter.q': '--search',
      'filter.tag': '--tag',
      'filter.meta': '--meta',
      reason: '--reason',
      fromStep: '--from-step',
      filter: 'the filters',
    };
    const [field, messages] = Object.entries(fields)[0]!;
    // `filter.tag.1`: the second --tag.
    const base = field.replace(/^(filter\.(?:tag|meta))\.\d+$/, '$1');
    throw new UsageError(`${flag[base] ?? field}: ${messages[0]}`);
  };
  if (!values.yes) {
    const seen = await withControl(cli, values.db, (deps) =>
      bulk.preview(deps, caller, { filter, ...(typeof fromStep === 'number' ? { fromStep } : {}) }),
    ).catch(named);
    const byName = typeof fromStep === 'string' ? ` (by status: the step name is looked up in each run when done)` : '';
    const what = seen.tooMany
      ? `more than ${bulk.BULK_MAX.toLocaleString('en-US')} runs match: narrow the filters`
      : `${seen.matched} run${seen.matched === 1 ? '' : 's'} match (${bulk.describeFilter(filter)}); ${action}${fromStep === undefined ? '' : ` from step ${fromStep}`} applies to ${seen.applicable[action]} of them${byName}`;
    if (!values.json) throw new UsageError(`${what}. Nothing changed: add --yes to ${action} them.`);
    cli.json({ matched: seen.matched, applicable: seen.applicable[action], tooMany: seen.tooMany, done: 0 });
    return 2;
  }
  const report = await withControl(cli, values.db, (deps) =>
    bulk.apply(deps, caller, { action, filter, fromStep, reason: values.reason }),
  ).catch(named);
  if (values.json) {
    cli.json(report);
    return 0;
  }
  cli.out(`${action}: ${report.matched} matched, ${report.done} done, ${report.skipped.length} skipped`);
  for (const skip of report.skipped.slice(0, 20)) cli.out(`  skipped ${skip.id}: ${skip.reason}`);
  if (report.skipped.length > 20) cli.out(`  … and ${report.skipped.length - 20} more skipped (--json lists them all)`);
  return 0;
}
