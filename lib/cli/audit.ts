/**
 * `waybill audit`: the operators' log, newest first — the same lines /audit and GET /api/v1/audit show, read
 * through lib/control/audit with the same filters (exact actor, action and run; `--since` ≤ at < `--until`)
 * and the same paging (`--before` the `next` of the page before). `--json` prints the API's answer.
 */
import { parseArgs } from 'node:util';
import { audit as control } from '../control';
import { parseTime, TIME_HINT } from '../control/audit';
import { auditView } from '../control/views';
import { UsageError } from '../errors';
import { check, count, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, callerOf, withControl } from './context';
import { relative, table, truncate } from './format';

export async function audit(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        actor: { type: 'string' },
        action: { type: 'string' },
        run: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        limit: { type: 'string' },
        before: { type: 'string' },
      },
    }),
  );
  const query = {
    actor: values.actor,
    action: values.action,
    runId: values.run,
    since: time(values.since, '--since'),
    until: time(values.until, '--until'),
    limit: values.limit === undefined ? undefined : check(count(500), values.limit, '--limit'),
    before: values.before === undefined ? undefined : check(count(Number.MAX_SAFE_INTEGER), values.before, '--before'),
  };
  const caller = callerOf(cli, values.as);
  const page = await withControl(cli, values.db, (deps) =>
    control.list(deps, caller, query as control.AuditQueryInput),
  );
  if (values.json) {
    cli.json({ entries: page.entries.map(auditView), next: page.next });
    return 0;
  }
  if (page.entries.length === 0) {
    cli.out(query.before === undefined ? 'no audit entries' : 'no older audit entries');
    return 0;
  }
  const now = Date.now();
  cli.out(
    table(
      ['ID', 'WHEN', 'WHO', 'ROLE', 'ACTION', 'TARGET', 'DETAIL'],
      page.entries.map((e) => [
        e.id,
        relative(e.at, now),
        e.actor,
        e.role,
        e.action,
        e.runId && e.runId !== e.target ? `${e.target} (run ${e.runId})` : e.target,
        truncate(e.detail, 80),
      ]),
    ),
  );
  if (page.next !== null) cli.out(`\nolder entries: the same command with --before ${page.next}`);
  return 0;
}

function time(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const at = parseTime(value);
  if (at === null) throw new UsageError(`${flag}: must be ${TIME_HINT}`);
  return at;
}
