/**
 * The migrations drizzle-kit generated (drizzle/<dialect>/, embedded by scripts/embed-migrations.ts), and how
 * they are applied: one runner (runMigrations) for both dialects, each of which only says how to take its lock,
 * read its ledger and set a table aside (sqlite/migrate.ts, postgres/migrate.ts). We apply them ourselves
 * rather than with drizzle's migrator because that one takes no lock: two workers opening a fresh store at
 * once would both run CREATE TABLE. Each backend applies these under its own writer lock (BEGIN IMMEDIATE,
 * pg_advisory_xact_lock) and records them in waybill_migrations.
 */
import { createHash } from 'node:crypto';
import { StoreRefusedError } from '../../errors';
import { type EmbeddedMigration, PG_MIGRATIONS, SQLITE_MIGRATIONS } from './migrations.generated';

export interface Migration {
  tag: string;
  hash: string;
  statements: string[];
}

/**
 * Code a store runs that is replaced whole rather than migrated: PostgreSQL's functions (postgres/functions/).
 * The store records the version and hash of the set it was given last. An older version, or the same version
 * with another text (a checkout under development), means the statements run again; a newer version is a newer
 * Waybill's, with the same signatures (changing one takes a migration), and is kept: two releases side by side
 * in a rolling upgrade never put each other's functions back.
 */
export interface FunctionSet {
  /** Raised whenever a text changes (test/postgres/functions.test.ts pins each version's hash). */
  version: number;
  hash: string;
  statements: readonly string[];
}

/** Whether `wanted` is to replace what the store recorded (FunctionSet says when). */
function replaces(wanted: FunctionSet, recorded: { version: number; hash: string } | null): boolean {
  if (recorded === null || recorded.version < wanted.version) return true;
  return recorded.version === wanted.version && recorded.hash !== wanted.hash;
}

/** The article's three tables: a store they created is adopted, rows kept, before the first migration. */
export const ARTICLE_TABLES = ['progress', 'committed', 'claims'] as const;
export const ARTICLE_COLUMNS: Record<(typeof ARTICLE_TABLES)[number], string[]> = {
  progress: ['run_id', 'step', 'state_json', 'updated_at'],
  committed: ['idem_key', 'run_id', 'result_json', 'committed_at'],
  claims: ['idem_key', 'run_id', 'claimed_at'],
};

const parsed = new Map<'sqlite' | 'pg', Migration[]>();

/**
 * A dialect's migrations, in order: embedded in the code (migrations.generated.ts), so a bundle of the library
 * carries them and nothing is read from files beside it. The hash is the SQL file's, as the ledger records it.
 */
export function migrationsOf(dialect: 'sqlite' | 'pg'): Migration[] {
  let found = parsed.get(dialect);
  if (!found) {
    found = (dialect === 'sqlite' ? SQLITE_MIGRATIONS : PG_MIGRATIONS).map(toMigration);
    parsed.set(dialect, found);
  }
  return found;
}

function toMigration({ tag, sql }: EmbeddedMigration): Migration {
  return {
    tag,
    hash: createHash('sha256').update(sql).digest('hex'),
    statements: sql
      .split('--> statement-breakpoint')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}

/** The tables our migrations create beyond the article's three: their presence says Waybill migrated the store. */
export function waybillOnlyTables(migrations: Migration[]): string[] {
  const names = new Set<string>();
  for (const m of migrations) {
    for (const statement of m.statements) {
      // A migration's first statement may open with its comment.
      const created = /^(?:--[^\n]*\n\s*)*CREATE TABLE (?:IF NOT EXISTS )?[`"]?(\w+)/i.exec(statement);
      if (created) names.add(created[1]!);
    }
  }
  for (const t of ARTICLE_TABLES) names.delete(t);
  return [...names];
}

/**
 * Refuses, before anything is written, a store this Waybill must not migrate or run on. `applied` is the
 * ledger's tags (null: there is no ledger table); `present` those of waybillOnlyTables() the store has. Three cases:
 *
 * - The ledger names migrations this Waybill does not know: a newer Waybill migrated the store. Running an
 *   old worker on it is how a side effect ran three times and committed zero (its commits hit columns and
 *   rules it has never heard of), so it stops here, as a rolling upgrade needs: the old version refuses,
 *   the new one runs.
 * - There is no ledger, and only some of the tables every Waybill store has had since its first migration:
 *   another application's tables that happen to share a name (its own `runs`). Waybill leaves them alone.
 * - The ledger is empty (or missing) but Waybill's tables are there: the ledger was damaged (a zeroed page)
 *   or dropped. "No migrations applied" would then mean running 0000 over live tables, or setting them
 *   aside as the article's. A store with the article's three tables only has no such table and is adopted.
 */
export function refuseUnsafeLedger(
  migrations: Migration[],
  applied: string[] | null,
  present: string[],
  where: string,
): void {
  const known = new Set(migrations.map((m) => m.tag));
  const unknown = (applied ?? []).filter((tag) => !known.has(tag)).sort();
  const latest = migrations.at(-1);
  const ours = `this Waybill knows ${migrations.length} migrations, up to ${latest?.tag ?? 'none'}`;
  if (unknown.length > 0) {
    throw new StoreRefusedError(
      'STORE_TOO_NEW',
      `${where} was migrated by a newer Waybill: ${ours}, but the store has ${applied!.length} applied, ` +
        `up to ${unknown.at(-1)} (unknown here: ${unknown.join(', ')}). Run the newer Waybill against it; ` +
        'nothing was changed',
    );
  }
  if (present.length === 0 || (applied !== null && applied.length > 0)) return;
  const first = migrations[0] ? waybillOnlyTables([migrations[0]]) : [];
  if (applied === null && !first.every((t) => present.includes(t))) {
    throw new StoreRefusedError(
      'STORE_FOREIGN_TABLES',
      `${where} has tables of another application named like Waybill's (${present.join(', ')}) and no ` +
        'waybill_migrations ledger: Waybill did not make them and will not touch them. Give Waybill a schema of ' +
        'its own (?schema= in DATABASE_URL or WAYBILL_PG_SCHEMA; on SQLite, another file); nothing was changed',
    );
  }
  throw new StoreRefusedError(
    'STORE_LEDGER_DAMAGED',
    `${where} has Waybill's tables (${present.join(', ')}) but its migration ledger waybill_migrations is ` +
      `missing or empty (${ours}): the ledger was damaged or dropped, and migrating again would run over live ` +
      'tables. Restore the store from a backup, or rebuild the ledger by hand; nothing was changed',
  );
}

/**
 * Refuses to make a new store beside another application's tables (`others`: the ones found where it would be
 * made). Waybill's tables and functions would share a schema with the application's, which its ORM then reports as
 * drift and its migrations may drop. The way there is an application's DATABASE_URL handed to Waybill as it is,
 * its `?schema=public` (Prisma's convention) naming the application's schema. A store made before keeps working.
 */
export function refuseSharedStore(others: string[], where: string): void {
  if (others.length === 0) return;
  const named =
    others.length > 5 ? `${others.slice(0, 5).join(', ')} and ${others.length - 5} more` : others.join(', ');
  throw new StoreRefusedError(
    'STORE_FOREIGN_TABLES',
    `${where}, named by ?schema= in DATABASE_URL, holds another application's tables (${named}): Waybill makes a ` +
      'new store only in a schema of its own. Leave ?schema= out of the URL you give Waybill (it then uses the ' +
      'schema waybill), or name an empty schema there or in WAYBILL_PG_SCHEMA; nothing was changed',
  );
}

/** What a store holds and what migrating it would do, read without writing anything. */
export interface MigrationPlan {
  /** How messages name the store (its file, or its schema). */
  where: string;
  /** Whether the store has a ledger: false for nothing there yet, or the article's tables only. */
  exists: boolean;
  applied: string[];
  pending: Migration[];
  /** The article's tables that migrating would adopt (rows copied into Waybill's). */
  adopted: (typeof ARTICLE_TABLES)[number][];
  /**
   * The functions migrating would (re)create: this Waybill's, when the store recorded none or another set. Null
   * when it has these already, or its dialect keeps none (SQLite).
   */
  functions: FunctionSet | null;
}

/**
 * What the runner needs of a dialect; every call runs inside the transaction begin() opened. SQLite's
 * methods answer at once (better-sqlite3 is synchronous, and its store opens synchronously), PostgreSQL's
 * with promises: one algorithm serves both, driven by runMigrationsSync or runMigrations.
 */
export interface MigrationTarget<R extends 'sync' | 'async'> {
  /** Opens the transaction and takes the writer lock, so concurrent openers serialize. */
  begin(): Answer<R, void>;
  commit(): Answer<R, void>;
  rollback(): Answer<R, void>;
  /** The ledger's tags; null when there is no ledger table (StoreRefusedError when it is unreadable). */
  appliedTags(): Answer<R, string[] | null>;
  /** Creates what the first migration needs first: the ledger table (and on PostgreSQL its schema). */
  createLedger(): Answer<R, void>;
  /** Which of these tables the store has. */
  tablesPresent(names: readonly string[]): Answer<R, string[]>;
  /**
   * The store's tables and views other than these, in name order: given where a new store must not be made beside
   * another application's (a PostgreSQL schema named by DATABASE_URL's ?schema=, refuseSharedStore).
   */
  tablesBesides?(names: readonly string[]): Answer<R, string[]>;
  /** How error messages name the store (its file, or its schema); asked after tablesPresent. */
  where(): string;
  /** Renames an article table (and whatever would clash with ours) to article_<name>. */
  setAside(table: string): Answer<R, void>;
  exec(statement: string): Answer<R, void>;
  record(migration: Migration): Answer<R, void>;
  /** The dialect's functions, replaced after the migrations when the store recorded another set (PostgreSQL). */
  functions?: {
    wanted: FunctionSet;
    /** The set the store recorded; null when none (or no table for it yet: a pending migration makes it). */
    recorded(): Answer<R, { version: number; hash: string } | null>;
    record(set: FunctionSet): Answer<R, void>;
  };
}

type Answer<R extends 'sync' | 'async', T> = R extends 'sync' ? T : Promise<T>;
type Step = () => unknown;
type Target = MigrationTarget<'sync'> | MigrationTarget<'async'>;

/** One call to the target, its answer handed back by whichever driver runs the steps. */
function* call<T>(fn: () => T | Promise<T>): Generator<Step, T, unknown> {
  return (yield fn) as T;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Reads the ledger and the tables, refuses what must not be run on (refuseUnsafeLedger); writes nothing. */
function* planSteps(target: Target, migrations: Migration[]): Generator<Step, MigrationPlan, unknown> {
  const tags = yield* call(() => target.appliedTags());
  const present = yield* call(() => target.tablesPresent(waybillOnlyTables(migrations)));
  refuseUnsafeLedger(migrations, tags, present, target.where());
  const besides = target.tablesBesides?.bind(target);
  if (tags === null && besides) {
    refuseSharedStore(
      yield* call(() => besides([...waybillOnlyTables(migrations), ...ARTICLE_TABLES])),
      target.where(),
    );
  }
  const applied = new Set(tags ?? []);
  const pending = migrations.filter((m) => !applied.has(m.tag));
  const article = applied.size === 0 ? yield* call(() => target.tablesPresent(ARTICLE_TABLES)) : [];
  const functions = target.functions;
  const recorded = functions ? yield* call(() => functions.recorded()) : null;
  return {
    where: target.where(),
    exists: tags !== null,
    applied: tags ?? [],
    pending,
    adopted: ARTICLE_TABLES.filter((t) => article.includes(t)),
    functions: functions && replaces(functions.wanted, recorded) ? functions.wanted : null,
  };
}

/**
 * Brings a store to the current schema, and then its functions to this Waybill's, in one transaction, or (mode
 * 'inspect') only says what that would do, and rolls back. A store created by the reference article's three CREATE TABLE statements is adopted in the
 * same transaction: its tables are renamed aside, the first migration creates ours, the rows are copied over
 * column by column, and the old tables are dropped. Either all of that happens or none of it.
 */
function* migrationSteps(
  target: Target,
  migrations: Migration[],
  mode: 'apply' | 'inspect',
): Generator<Step, MigrationPlan, unknown> {
  yield* call(() => target.begin());
  try {
    const plan = yield* planSteps(target, migrations);
    if (mode === 'inspect' || (plan.pending.length === 0 && !plan.functions)) {
      yield* call(() => (mode === 'inspect' ? target.rollback() : target.commit()));
      return plan;
    }
    if (!plan.exists) yield* call(() => target.createLedger());
    for (const table of plan.adopted) yield* call(() => target.setAside(table));
    for (const migration of plan.pending) {
      for (const statement of migration.statements) yield* call(() => target.exec(statement));
      yield* call(() => target.record(migration));
    }
    for (const table of plan.adopted) {
      const columns = ARTICLE_COLUMNS[table].map(quote).join(', ');
      yield* call(() =>
        target.exec(`INSERT INTO ${quote(table)} (${columns}) SELECT ${columns} FROM ${quote(`article_${table}`)}`),
      );
      yield* call(() => target.exec(`DROP TABLE ${quote(`article_${table}`)}`));
    }
    const functions = plan.functions;
    if (functions) {
      for (const statement of functions.statements) yield* call(() => target.exec(statement));
      yield* call(() => target.functions!.record(functions));
    }
    yield* call(() => target.commit());
    return plan;
  } catch (error) {
    // A connection that died mid-transaction cannot roll back; the server already has.
    try {
      yield* call(() => target.rollback());
    } catch {
      // the rollback's own failure says nothing the first error does not
    }
    throw error;
  }
}

export function runMigrationsSync(
  target: MigrationTarget<'sync'>,
  migrations: Migration[],
  mode: 'apply' | 'inspect' = 'apply',
): MigrationPlan {
  const steps = migrationSteps(target, migrations, mode);
  let next = steps.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = next.value();
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

export async function runMigrations(
  target: MigrationTarget<'async'>,
  migrations: Migration[],
  mode: 'apply' | 'inspect' = 'apply',
): Promise<MigrationPlan> {
  const steps = migrationSteps(target, migrations, mode);
  let next = steps.next();
  while (!next.done) {
    let answer: unknown;
    try {
      answer = await next.value();
    } catch (error) {
      next = steps.throw(error);
      continue;
    }
    next = steps.next(answer);
  }
  return next.value;
}

/**
 * The refusal a store that cannot be used as it is gets when it is opened without migrating (read-only
 * commands, or WAYBILL_MIGRATE=off): none there yet, behind this Waybill, or running functions other than
 * this Waybill's (an older or a newer one's: the hash does not say which). Null when it is current.
 */
export function notCurrent(plan: MigrationPlan, migrations: Migration[]): StoreRefusedError | null {
  if (!plan.exists) {
    return new StoreRefusedError(
      'STORE_MISSING',
      `no Waybill store at ${plan.where} (\`waybill migrate\` creates one)`,
    );
  }
  if (plan.pending.length === 0) {
    if (!plan.functions) return null;
    return new StoreRefusedError(
      'STORE_BEHIND',
      `${plan.where} runs other versions of Waybill's functions than this Waybill's ` +
        `(${plan.functions.hash.slice(0, 12)}); \`waybill migrate\` replaces them; nothing was changed`,
    );
  }
  return new StoreRefusedError(
    'STORE_BEHIND',
    `${plan.where} is behind this Waybill: ${plan.applied.length} of ${migrations.length} migrations applied, ` +
      `${plan.pending.length} to go (up to ${plan.pending.at(-1)!.tag}); \`waybill migrate\` upgrades it; nothing was changed`,
  );
}
