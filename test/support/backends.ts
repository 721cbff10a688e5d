/**
 * The backends every contract suite runs against: SQLite always, PostgreSQL when it answers (under CI=true it
 * must: see test/support/postgres.ts).
 *
 *   const list = await backends();
 *   describe.each(list)('store contract on $name', (backend) => { … backend.open() … });
 *
 * Time. Each store runs on a clock the test moves, and so does everything the test gives `h.clock` (a
 * Checkpoint's renewals and waits, a worker's beats): `elapse(ms)` moves it, firing the timers due, and
 * nothing sleeps. SQLite (a fresh temp file per test) runs on a ManualClock, which stands still unless moved.
 * PostgreSQL judges leases by the database's own clock, so its store runs on a ShiftedClock: the database's
 * now() as ever, plus the time the test let pass — it ticks by itself and jumps on elapse. Tests that need a
 * lease to pass use short leases (≈200 ms) and elapse a generous multiple of them, the same on both.
 */
import { type Clock, ManualClock } from '../../lib/clock';
import type { RunStatus, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { createSchema, postgresAvailable } from './postgres';
import { ShiftedClock } from './shifted-clock';
import { makeTempDir } from './tmp';

export interface StoreHandle {
  store: Store;
  /** The store's clock, for whatever the test runs over the store (Checkpoint, Worker): see the header. */
  clock: Clock;
  /**
   * Lets `ms` pass on the store's clock. SQLite: the ManualClock moves, the timers due fire in order, and
   * nothing sleeps. PostgreSQL: a real wait, because the database's clock is the one that counts.
   */
  elapse(ms: number): Promise<void>;
  /**
   * Awaits work that waits on the clock (a Checkpoint awaiting another holder, retrying a commit): on SQLite
   * the ManualClock jumps to each timer as the work comes to wait on it; on PostgreSQL the ShiftedClock's
   * timers fire in real time, as they would in production.
   */
  settle<T>(work: Promise<T>): Promise<T>;
  /** Epoch seconds by the store's clock (the database's on PostgreSQL): for rows a test writes by hand. */
  now(): Promise<number>;
  /**
   * Writes a claim the way the article's client does — idem_key, run_id, claimed_at only (no token, no
   * lease) — with claimed_at taken from the store's own clock.
   */
  insertOutsideClaim(idemKey: string, runId: string): Promise<void>;
  /** Runs SQL against the store's tables directly, as another client (or an operator's psql) would. */
  exec(sql: string): Promise<void>;
  /** One SELECT against the store's tables directly, its rows. */
  rows<T>(sql: string): Promise<T[]>;
  /**
   * Another store on the same file or schema, as a second dashboard process (or the same one restarted)
   * would open it. Closed by close().
   */
  reopen(): Promise<Store>;
  /** Closes the store, and every reopened one, and removes its file or schema. */
  close(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** What a suite's title calls it: the name, and how the store was opened when that differs. */
  label: string;
  open(): Promise<StoreHandle>;
}

/** SQLite with group commit (the default), or with every claim and commit a transaction of its own. */
function sqliteOpened(groupCommit: boolean): Backend {
  return {
    name: 'sqlite',
    label: groupCommit ? 'sqlite' : 'sqlite (group commit off)',
    open: () => openSqlite(groupCommit),
  };
}

export const sqliteBackend: Backend = sqliteOpened(true);
export const sqliteSoloBackend: Backend = sqliteOpened(false);

async function openSqlite(groupCommit: boolean): Promise<StoreHandle> {
  const dir = makeTempDir('waybill-contract-');
  const clock = new ManualClock();
  // NORMAL: these tests are about the protocol, not about surviving power loss; FULL only costs fsyncs.
  const store: SqliteStore = openSqliteStore({
    path: dir.file('store.db'),
    clock,
    synchronous: 'normal',
    groupCommit,
  });
  const others: Store[] = [];
  return {
    store,
    clock,
    async reopen() {
      const other = openSqliteStore({ path: dir.file('store.db'), clock, synchronous: 'normal', groupCommit });
      others.push(other);
      return other;
    },
    elapse: (ms) => clock.tick(ms),
    settle: (work) => clock.runUntil(work),
    now: async () => clock.now() / 1000,
    async insertOutsideClaim(idemKey, runId) {
      store.db
        .prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES(?,?,?)')
        .run(idemKey, runId, clock.now() / 1000);
    },
    async exec(sql) {
      store.db.exec(sql);
    },
    rows: async <T>(sql: string) => store.db.prepare(sql).all() as T[],
    async close() {
      for (const other of others) await other.close();
      await store.close();
      dir.remove();
    },
  };
}

export const postgresBackend: Backend = {
  name: 'postgres',
  label: 'postgres',
  async open() {
    const schema = await createSchema('wb_test');
    const clock = new ShiftedClock();
    const open = (): Promise<Store> => openStore(schema.url, { clock });
    let store: Store;
    try {
      store = await open();
    } catch (error) {
      await schema.drop();
      throw error;
    }
    const others: Store[] = [];
    return {
      store,
      clock,
      async reopen() {
        const other = await open();
        others.push(other);
        return other;
      },
      elapse: (ms) => clock.advance(ms),
      settle: (work) => work,
      async now() {
        const [row] = await schema.admin.query<{ now: number }>(
          'SELECT extract(epoch from now())::float8 + $1 AS now',
          [clock.shiftMs / 1000],
        );
        return Number(row!.now);
      },
      async insertOutsideClaim(idemKey, runId) {
        await schema.admin.query(
          `INSERT INTO ${schema.t('claims')} (idem_key, run_id, claimed_at) VALUES ($1, $2, extract(epoch from clock_timestamp()) + $3)`,
          [idemKey, runId, clock.shiftMs / 1000],
        );
      },
      async exec(sql) {
        await schema.admin.query(`SET search_path TO "${schema.name}"; ${sql}; RESET search_path`);
      },
      async rows<T>(sql: string) {
        await schema.admin.query(`SET search_path TO "${schema.name}"`);
        try {
          return (await schema.admin.query(sql)) as T[];
        } finally {
          await schema.admin.query('RESET search_path');
        }
      },
      async close() {
        try {
          for (const other of others) await other.close();
          await store.close();
        } finally {
          await schema.drop();
        }
      },
    };
  },
};

let cached: Promise<Backend[]> | undefined;

/** SQLite, plus PostgreSQL when it is available (required under CI=true). */
export function backends(): Promise<Backend[]> {
  cached ??= postgresAvailable('the contract suites').then((up) =>
    up ? [sqliteBackend, postgresBackend] : [sqliteBackend],
  );
  return cached;
}

/**
 * For the suites of the step protocol itself: also SQLite with group commit off (WAYBILL_GROUP_COMMIT=off),
 * whose claims and commits take the other path through lib/store/sqlite/steps.ts, with the same answers.
 */
export async function stepBackends(): Promise<Backend[]> {
  const [sqlite, ...rest] = await backends();
  return [sqlite!, sqliteSoloBackend, ...rest];
}

/**
 * Lets the store's clock pass 10 ms at a time (elapse: on SQLite nothing sleeps) until run `id` has `status`
 * after at least `attempts` takes, for a worker running in the test's process on that clock. Throws with the
 * run's row when it never does.
 */
export async function untilRun(h: StoreHandle, id: string, status: RunStatus, attempts = 1): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    const run = await h.store.getRun(id);
    if (run?.status === status && run.attempts >= attempts) return;
    await h.elapse(10);
  }
  throw new Error(`run ${id} never became ${status}: ${JSON.stringify(await h.store.getRun(id))}`);
}
