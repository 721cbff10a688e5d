/**
 * `waybill migrate`: the one command that creates a store or brings it up to date (everything else that only
 * reads refuses a store that is missing or behind, and says to run this). `--check` only says whether the
 * store is current (exit 1 when it is not), `--print-sql` what migrating would run; neither writes anything.
 * Current means every migration applied and, on PostgreSQL, this Waybill's functions in place (functions/).
 * `--move-to-schema` moves a PostgreSQL store an older Waybill made in `public` into a schema of its own.
 */
import { parseArgs } from 'node:util';
import { pgSchemaName, storeOptions } from '../config';
import { UsageError } from '../errors';
import { inspectStore, moveStoreToSchema, openBackend } from '../store/index';
import type { MigrationPlan } from '../store/migrate/runner';
import { check, flags, GLOBAL_OPTIONS } from './args';
import type { Cli } from './context';

export async function migrate(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        check: { type: 'boolean' },
        'print-sql': { type: 'boolean' },
        'move-to-schema': { type: 'string' },
      },
    }),
  );
  const chosen = ['check', 'print-sql', 'move-to-schema'].filter((f) => values[f as keyof typeof values] !== undefined);
  if (chosen.length > 1) throw new UsageError(`--${chosen[0]} and --${chosen[1]} do different things: give one`);
  const cfg = cli.config();
  const url = values.db ?? cfg.DATABASE_URL;
  const options = storeOptions(cfg);
  if (values['move-to-schema'] !== undefined) {
    const to = check(pgSchemaName, values['move-to-schema'], '--move-to-schema');
    const moved = await moveStoreToSchema(url, to, { schema: options.schema });
    if (values.json) cli.json({ ...moved, to });
    else
      cli.out(
        `moved the store from schema "${moved.from}" to "${to}": ${moved.tables.length} tables, ` +
          `${moved.functions.length} functions. Point DATABASE_URL at it (?schema=${to}, or WAYBILL_PG_SCHEMA=${to}` +
          `${to === 'waybill' ? ', or neither: it is the default' : ''}) and start the workers again`,
      );
    return 0;
  }
  const plan = await inspectStore(url, { schema: options.schema });
  const behind = !plan.exists || plan.pending.length > 0 || plan.functions !== null;
  if (values['print-sql']) {
    if (values.json) cli.json({ ...summary(plan), sql: sqlOf(plan) });
    else cli.out(sqlOf(plan) || `-- ${plan.where} is up to date: nothing to run`);
    return 0;
  }
  if (values.check) {
    if (values.json) cli.json(summary(plan));
    else cli.out(describe(plan));
    return behind ? 1 : 0;
  }
  if (!behind) {
    if (values.json) cli.json(summary(plan));
    else cli.out(describe(plan));
    return 0;
  }
  // Opening migrates: the same locked transaction a worker's open runs, whatever WAYBILL_MIGRATE says.
  const store = await openBackend(url, { ...options, migrate: true });
  await store.close();
  const done = { ...summary(plan), applied: plan.pending.map((m) => m.tag), pending: [], functionsPending: false };
  if (values.json) cli.json(done);
  else if (plan.pending.length === 0) cli.out(`replaced the functions of ${plan.where} with this Waybill's`);
  else
    cli.out(
      `${plan.exists ? 'upgraded' : 'created'} ${plan.where}: applied ${plan.pending.length} migration` +
        `${plan.pending.length === 1 ? '' : 's'}, up to ${plan.pending.at(-1)!.tag}` +
        (plan.adopted.length ? ` (adopted the article's tables ${plan.adopted.join(', ')}, rows kept)` : ''),
    );
  return 0;
}

function summary(plan: MigrationPlan) {
  return {
    store: plan.where,
    exists: plan.exists,
    applied: plan.applied,
    pending: plan.pending.map((m) => m.tag),
    functionsPending: plan.functions !== null,
    current: plan.exists && plan.pending.length === 0 && plan.functions === null,
  };
}

function describe(plan: MigrationPlan): string {
  const total = plan.applied.length + plan.pending.length;
  if (!plan.exists)
    return `no Waybill store at ${plan.where}: ${plan.pending.length} migrations to apply (waybill migrate)`;
  if (plan.pending.length === 0 && plan.functions)
    return `${plan.where} runs other versions of Waybill's functions (${total} migrations applied; waybill migrate)`;
  if (plan.pending.length === 0) return `${plan.where} is up to date (${total} migrations)`;
  return (
    `${plan.where} is behind: ${plan.applied.length} of ${total} migrations applied, ` +
    `${plan.pending.length} to apply (${plan.pending.map((m) => m.tag).join(', ')}; waybill migrate)`
  );
}

/** The statements migrating would run, each migration headed by its tag: what a reviewer reads before a deploy. */
function sqlOf(plan: MigrationPlan): string {
  const lines: string[] = [];
  if (plan.adopted.length) {
    lines.push(
      `-- adopt the article's tables ${plan.adopted.join(', ')}: renamed to article_<name>, rows copied, dropped`,
    );
  }
  for (const migration of plan.pending) {
    lines.push(`-- ${migration.tag}`);
    for (const statement of migration.statements) lines.push(statement.endsWith(';') ? statement : `${statement};`);
  }
  if (plan.functions) {
    lines.push(`-- functions ${plan.functions.hash}`);
    for (const statement of plan.functions.statements) lines.push(`${statement};`);
  }
  return lines.join('\n');
}
