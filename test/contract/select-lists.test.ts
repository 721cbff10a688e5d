/**
 * The SELECT lists the hand-written statements read rows through (lib/store/sqlite/columns.ts,
 * lib/store/postgres/columns.ts) are built from the Drizzle tables; these tests hold each one to the row type
 * the store hands out, twice: by type (a list's row is the interface's row, so a list that drops or renames a
 * column fails `npm run typecheck`), and by running it on each backend and reading the names of the columns it
 * returns against the row type's keys, written below as objects the type checks are complete and exact.
 */
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type {
  CommittedRow,
  ProgressRow,
  RunLogRow,
  RunRow,
  StepEvent,
  StepTiming,
  Store,
  WaitRow,
} from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import * as pgLists from '../../lib/store/postgres/columns';
import type { RowOf } from '../../lib/store/shared/columns';
import type { UnstableCandidate } from '../../lib/store/shared/insights-unstable';
import type { TallyRow } from '../../lib/store/shared/metrics-tally';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import * as sqliteLists from '../../lib/store/sqlite/columns';
import { toPositional } from '../../lib/store/sqlite/statement';
import type { RawClaim } from '../../lib/store/sqlite/steps';
import { createSchema, postgresAvailable, type TestSchema } from '../support/postgres';
import { makeTempDir } from '../support/tmp';

/** Each row type's keys, as a value: `satisfies` refuses a key missing from or foreign to the type. */
const keys =
  <Row>() =>
  <K extends Record<keyof Row, true>>(k: K & Record<Exclude<keyof K, keyof Row>, never>) =>
    Object.keys(k).sort();

const COMMITTED = keys<CommittedRow>()({
  idemKey: true,
  runId: true,
  resultJson: true,
  committedAt: true,
  step: true,
  fingerprint: true,
  workerId: true,
  durationMs: true,
  source: true,
  forkedFrom: true,
  inputJson: true,
  priorStep: true,
  priorStateJson: true,
});
const CLAIM = keys<RawClaim>()({
  idemKey: true,
  runId: true,
  claimedAt: true,
  token: true,
  workerId: true,
  leaseExpiresAt: true,
  heartbeatAt: true,
  step: true,
  attempt: true,
});
const PROGRESS = keys<ProgressRow>()({
  runId: true,
  step: true,
  stateJson: true,
  updatedAt: true,
  executed: true,
  skipped: true,
  awaited: true,
  saveMs: true,
  committedCount: true,
});
const EVENT = keys<StepEvent>()({
  id: true,
  runId: true,
  idemKey: true,
  step: true,
  outcome: true,
  count: true,
  durationMs: true,
  workerId: true,
  detail: true,
  at: true,
  attempt: true,
  maxAttempts: true,
  retryAt: true,
  previousWorkerId: true,
  previousAttempt: true,
});
const RUN = keys<RunRow>()({
  id: true,
  workflow: true,
  inputJson: true,
  status: true,
  totalSteps: true,
  owner: true,
  leaseExpiresAt: true,
  attempts: true,
  error: true,
  outputJson: true,
  createdAt: true,
  updatedAt: true,
  startedAt: true,
  finishedAt: true,
  forkedFromRun: true,
  forkedAtStep: true,
  budgetUsd: true,
  parentRunId: true,
  detached: true,
  priority: true,
  traceparent: true,
  cancelledWith: true,
});
const WAIT = keys<WaitRow>()({
  runId: true,
  name: true,
  kind: true,
  detailsJson: true,
  createdAt: true,
  dueAt: true,
  onTimeout: true,
  decidedAt: true,
  decisionJson: true,
  decidedBy: true,
  note: true,
});
const LOG = keys<RunLogRow>()({
  runId: true,
  seq: true,
  at: true,
  stream: true,
  line: true,
  workerId: true,
  attempt: true,
});
const TALLY = keys<TallyRow>()({
  bounds: true,
  committedMark: true,
  committedMarkKey: true,
  committedMarkAt: true,
  eventsMark: true,
  stepsJson: true,
  durationsJson: true,
});
const TIMING = keys<StepTiming>()({ step: true, idemKey: true, committedAt: true, durationMs: true, source: true });
const UNSTABLE = keys<UnstableCandidate>()({ idemKey: true, fingerprint: true, committedAt: true });
const LOOP_RUN = ['leaseExpiresAt', 'owner', 'status', 'workflow'];

describe('select lists by type', () => {
  it('read exactly the rows the store hands out', () => {
    expectTypeOf<RowOf<typeof sqliteLists.COMMITTED>>().toEqualTypeOf<CommittedRow>();
    expectTypeOf<RowOf<typeof pgLists.COMMITTED>>().toEqualTypeOf<CommittedRow>();
    expectTypeOf<RowOf<typeof sqliteLists.CLAIM>>().toEqualTypeOf<RawClaim>();
    expectTypeOf<RowOf<typeof pgLists.CLAIM>>().toEqualTypeOf<RawClaim>();
    expectTypeOf<RowOf<typeof sqliteLists.PROGRESS>>().toEqualTypeOf<ProgressRow>();
    expectTypeOf<RowOf<typeof sqliteLists.EVENT>>().toEqualTypeOf<StepEvent>();
    expectTypeOf<RowOf<typeof pgLists.EVENT>>().toEqualTypeOf<StepEvent>();
    expectTypeOf<RowOf<typeof pgLists.RUN>>().toEqualTypeOf<RunRow>();
    expectTypeOf<RowOf<typeof pgLists.RUN_ALIASES>>().toEqualTypeOf<RunRow>();
    expectTypeOf<RowOf<typeof pgLists.WAIT>>().toEqualTypeOf<WaitRow>();
    expectTypeOf<RowOf<typeof pgLists.LOG>>().toEqualTypeOf<RunLogRow>();
    expectTypeOf<RowOf<typeof sqliteLists.TALLY>>().toEqualTypeOf<TallyRow>();
    expectTypeOf<RowOf<typeof pgLists.TALLY>>().toEqualTypeOf<TallyRow>();
    expectTypeOf<RowOf<typeof sqliteLists.UNSTABLE>>().toEqualTypeOf<UnstableCandidate>();
    expectTypeOf<RowOf<typeof pgLists.UNSTABLE>>().toEqualTypeOf<UnstableCandidate>();
  });

  it('read the columns of the views they feed (a timing row narrows source; the keys are the same)', () => {
    expectTypeOf<keyof RowOf<typeof sqliteLists.TIMING>>().toEqualTypeOf<keyof StepTiming>();
    expectTypeOf<keyof RowOf<typeof pgLists.TIMING>>().toEqualTypeOf<keyof StepTiming>();
  });
});

/** Each list, the table it reads, the alias it expects, and the row type's keys. */
const CASES = [
  ['COMMITTED', 'committed', '', COMMITTED],
  ['CLAIM', 'claims', '', CLAIM],
  ['PROGRESS', 'progress', '', PROGRESS],
  ['EVENT', 'step_events', '', EVENT],
  ['RUN', 'runs', 'r', RUN],
  ['WAIT', 'waits', 'w', WAIT],
  ['LOG', 'run_logs', '', LOG],
  ['TALLY', 'metrics_tally', '', TALLY],
  ['TIMING', 'committed', '', TIMING],
  ['UNSTABLE', 'committed', '', UNSTABLE],
  ['LOOP_RUN', 'runs', '', LOOP_RUN],
] as const;

/** The list's own statement shape: one row of nulls whatever the table holds, so its keys are the columns'. */
const probe = (list: string, table: string, alias: string) =>
  `SELECT x.* FROM (SELECT 1 AS one) o LEFT JOIN (SELECT ${list} FROM ${table} ${alias}) x ON true LIMIT 1`;

describe('select lists on SQLite', () => {
  let store: SqliteStore;
  let dir: ReturnType<typeof makeTempDir>;
  beforeAll(() => {
    dir = makeTempDir();
    store = openSqliteStore({ path: dir.file('store.db') });
  });
  afterAll(async () => {
    await store.close();
    dir.remove();
  });

  it.each(CASES.filter(([name]) => name in sqliteLists))(
    '%s returns the row type’s columns',
    (name, table, alias, expected) => {
      const list = (sqliteLists as Record<string, string>)[name]!;
      const names = store.db
        .prepare(probe(list, table, alias))
        .columns()
        .map((c) => c.name);
      expect(names.sort()).toEqual([...expected].sort());
    },
  );
});

const pgUp = await postgresAvailable('select lists');

describe.skipIf(!pgUp)('select lists on PostgreSQL', () => {
  let schema: TestSchema;
  let store: Store;
  beforeAll(async () => {
    schema = await createSchema('wb_lists');
    store = await openStore(schema.url);
    await schema.admin.query(`SET search_path TO "${schema.name}"`);
  });
  afterAll(async () => {
    await store?.close();
    await schema?.drop();
  });

  it.each(CASES.filter(([name]) => name in pgLists))(
    '%s returns the row type’s columns',
    async (name, table, alias, expected) => {
      const list = (pgLists as Record<string, unknown>)[name] as string;
      const [row] = await schema.admin.query(probe(list, table, alias));
      expect(Object.keys(row!).sort()).toEqual([...expected].sort());
    },
  );
});

describe('@name parameters', () => {
  it('become ? in order, a repeated name bound twice; quotes and comments are left alone', () => {
    expect(
      toPositional(`SELECT '@no', "@col" FROM t -- a note@here
      WHERE a = @a AND b = @bee /* @c */ AND c = @a`),
    ).toEqual({
      positional: `SELECT '@no', "@col" FROM t -- a note@here
      WHERE a = ? AND b = ? /* @c */ AND c = ?`,
      names: ['a', 'bee', 'a'],
    });
  });

  it('refuse a ? or a $name among them', () => {
    expect(() => toPositional('SELECT @a, ?')).toThrow(/only @name/);
    expect(() => toPositional('SELECT @a, $b')).toThrow(/only @name/);
  });
});
