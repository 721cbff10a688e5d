/**
 * `waybill webhooks` (the subscriptions) and `waybill webhook add|pause|resume|delete|deliveries|resend`. Thin:
 * lib/control/webhooks validates (a bad URL or an unknown event exits 2 naming the field, having written
 * nothing), writes and audits as `--as NAME` or `cli:<OS user>`.
 */
import { parseArgs } from 'node:util';
import { webhooks as control } from '../control';
import { UsageError } from '../errors';
import { actionOf, flags, GLOBAL_OPTIONS, positionals } from './args';
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
    cli.out('no webhooks (add one with `waybill webhook add <url> --event run.failed`)');
    return 0;
  }
  cli.out(
    table(
      ['ID', 'URL', 'EVENTS', 'STATE', 'SECRET'],
      rows.map((w) => [w.id, w.url, w.events.join(','), w.paused ? 'paused' : 'active', w.secretHint]),
    ),
  );
  return 0;
}

const SUBCOMMANDS = ['add', 'pause', 'resume', 'delete', 'deliveries', 'resend'] as const;

export async function webhook(cli: Cli, args: string[]): Promise<number> {
  const { action: sub, rest } = actionOf(args, SUBCOMMANDS);
  if (sub === 'add') return add(cli, rest);
  if (sub === 'deliveries') return deliveries(cli, rest);
  if (sub === 'resend') return resend(cli, rest);
  return change(cli, sub, rest);
}

async function add(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        event: { type: 'string', multiple: true },
        secret: { type: 'string' },
        'in-doubt-seconds': { type: 'string' },
        reason: { type: 'string' },
      },
    }),
  );
  const [url] = positionals(given, ['url']) as [string];
  if (!values.event?.length) throw new UsageError('missing --event NAME (repeat it for more events)');
  const inDoubt = values['in-doubt-seconds'];
  const caller = callerOf(cli, values.as);
  const row = await withControl(cli, values.db, (deps) =>
    control.add(deps, caller, {
      url,
      events: values.event as never,
      secret: values.secret,
      inDoubtSeconds: inDoubt === undefined ? undefined : /^\d+$/.test(inDoubt) ? Number(inDoubt) : (inDoubt as never),
      reason: values.reason,
    }),
  );
  if (values.json) cli.json(row);
  else
    cli.out(
      `added webhook ${row.id}: ${row.url} for ${row.events.join(', ')}\nsecret ${row.secret} (shown this once: receivers verify the Waybill-Signature header with it)`,
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
  const [id] = positionals(given, ['id']) as [string];
  const caller = callerOf(cli, values.as);
  const request = { id, reason: values.reason };
  if (sub === 'delete') {
    await withControl(cli, values.db, (deps) => control.remove(deps, caller, request));
    if (values.json) cli.json({ id, deleted: true });
    else cli.out(`deleted webhook ${id} and its deliveries`);
    return 0;
  }
  const row = await withControl(cli, values.db, (deps) => control.setPaused(deps, caller, sub === 'pause', request));
  if (values.json) cli.json(row);
  else cli.out(sub === 'pause' ? `paused webhook ${id}` : `resumed webhook ${id}`);
  return 0;
}

async function deliveries(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        webhook: { type: 'string' },
        status: { type: 'string' },
        limit: { type: 'string' },
      },
    }),
  );
  positionals(given, []);
  const limit = values.limit;
  const caller = callerOf(cli, values.as);
  const rows = await withControl(cli, values.db, (deps) =>
    control.deliveries(deps, caller, {
      webhookId: values.webhook,
      status: values.status as never,
      limit: limit === undefined ? undefined : /^\d+$/.test(limit) ? Number(limit) : (limit as never),
    }),
  );
  if (values.json) {
    cli.json(rows);
    return 0;
  }
  if (rows.length === 0) {
    cli.out('no deliveries');
    return 0;
  }
  const now = Date.now();
  cli.out(
    table(
      ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT'],
      rows.map((d) => [
        d.id,
        d.event,
        d.status,
        d.attempts,
        d.lastError ?? (d.lastStatus === null ? null : `HTTP ${d.lastStatus}`),
        d.nextAttemptAt === null ? null : relative(d.nextAttemptAt, now),
      ]),
    ),
  );
  return 0;
}

async function resend(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, reason: { type: 'string' } },
    }),
  );
  const [id] = positionals(given, ['deliveryId']) as [string];
  const caller = callerOf(cli, values.as);
  const row = await withControl(cli, values.db, (deps) => control.resend(deps, caller, { id, reason: values.reason }));
  if (values.json) cli.json(row);
  else cli.out(`re-sending ${row.id}: due now, under the same id`);
  return 0;
}
