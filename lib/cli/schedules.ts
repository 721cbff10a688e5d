/**
 * `waybill schedules` (the list, with each next fire time and last run) and `waybill schedule
 * add|pause|resume|delete`. Thin: lib/control/schedules validates (a bad cron expression or time zone exits 2
 * naming its flag, having written nothing), writes and audits as `--as NAME` or `cli:<OS user>`.
 */
import { parseArgs } from 'node:util';
import { schedules as control } from '../control';
import { UsageError } from '../errors';
import { actionOf, flags, GLOBAL_OPTIONS, jsonArg, positionals } from './args';
import { type Cli, callerOf, withControl } from './context';
import { relative, table } from './format';

export async function list(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options: GLOBAL_OPTIONS }),
  );
  positionals(given, []);
  const caller = callerOf(cli, values.as);
  const rows = await withControl(cli, values.db, (deps) => control.list(deps, caller));
  if (values.json) {
    cli.json(rows);
    return 0;
  }
  if (rows.length === 0) {
    cli.out('no schedules (add one with `waybill schedule add`, or declare one in defineWorkflow)');
    return 0;
  }
  const now = Date.now();
  cli.out(
    table(
      ['NAME', 'WORKFLOW', 'CRON', 'TIME ZONE', 'NEXT FIRE', 'LAST RUN', 'POLICIES', 'SOURCE'],
      rows.map((s) => [
        s.name,
        s.workflow,
        s.cron,
        s.timeZone,
        s.paused
          ? 'paused'
          : s.finished
            ? 'finished'
            : `${new Date(s.nextFireAt! * 1000).toISOString()} (${relative(s.nextFireAt!, now)})`,
        s.lastRuns[0] ? `${s.lastRuns[0].id} ${s.lastRuns[0].status}` : '',
        `overlap ${s.overlap}, catch-up ${s.catchUp}${s.catchUp === 'all' ? ` ≤${s.catchUpCap}` : ''}`,
        s.source,
      ]),
    ),
  );
  return 0;
}

const SUBCOMMANDS = ['add', 'pause', 'resume', 'delete'] as const;

export async function schedule(cli: Cli, args: string[]): Promise<number> {
  const { action, rest } = actionOf(args, SUBCOMMANDS);
  return action === 'add' ? add(cli, rest) : change(cli, action, rest);
}

async function add(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        cron: { type: 'string' },
        tz: { type: 'string' },
        input: { type: 'string' },
        overlap: { type: 'string' },
        'catch-up': { type: 'string' },
        'catch-up-cap': { type: 'string' },
        paused: { type: 'boolean' },
        reason: { type: 'string' },
      },
    }),
  );
  const [name, workflow] = positionals(given, ['name', 'workflow']) as [string, string];
  if (values.cron === undefined) throw new UsageError('missing --cron EXPR');
  const input = values.input === undefined ? {} : jsonArg(values.input, '--input', cli.config().WAYBILL_MAX_BODY_BYTES);
  const cap = values['catch-up-cap'];
  const caller = callerOf(cli, values.as);
  const row = await withControl(cli, values.db, (deps) =>
    control.add(deps, caller, {
      name,
      workflow,
      cron: values.cron!,
      timeZone: values.tz,
      input,
      overlap: values.overlap as never,
      catchUp: values['catch-up'] as never,
      catchUpCap: cap === undefined ? undefined : (control.capFromText(cap) as number),
      paused: values.paused,
      reason: values.reason,
    }),
  );
  if (values.json) cli.json(control.scheduleView(row));
  else
    cli.out(
      `added schedule ${row.name}: ${row.workflow} on ${row.cron} (${row.timeZone})${row.paused ? ', paused' : `, next ${new Date(row.nextFireAt * 1000).toISOString()}`}`,
    );
  return 0;
}

async function change(cli: Cli, sub: 'pause' | 'resume' | 'delete', args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, reason: { type: 'string' } },
    }),
  );
  const [name] = positionals(given, ['name']) as [string];
  const caller = callerOf(cli, values.as);
  const request = { name, reason: values.reason };
  if (sub === 'delete') {
    await withControl(cli, values.db, (deps) => control.remove(deps, caller, request));
    if (values.json) cli.json({ name, deleted: true });
    else cli.out(`deleted schedule ${name}; the runs it started stay`);
    return 0;
  }
  const row = await withControl(cli, values.db, (deps) => control.setPaused(deps, caller, sub === 'pause', request));
  if (values.json) cli.json(control.scheduleView(row));
  else
    cli.out(
      sub === 'pause'
        ? `paused schedule ${name}`
        : `resumed schedule ${name}: next ${new Date(row.nextFireAt * 1000).toISOString()}`,
    );
  return 0;
}
