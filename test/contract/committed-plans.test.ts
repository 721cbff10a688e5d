/**
 * No statement of the SQLite store reads `committed` whole (#29). A read by run must find its rows through an
 * index that holds them: a full scan costs a million rows on a big store, and SQLite takes one silently
 * whenever no index fits the statement's WHERE (a partial index fits only a WHERE that implies its own).
 *
 * Every text the store prepares is recorded while a store with a few runs is driven through the operations
 * that read or write committed (the run page, the runs list, claims, rewinds, metrics, retention), and each
 * text that names the table is planned: no line of its plan may scan committed, under its name or an alias,
 * in row or index order, or build an automatic index or a Bloom filter from it (each reads every row). The
 * triggers on committed's rows are planned too. A text that must visit every row is in MAY_SCAN, with why.
 */
import type Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { ManualClock } from '../../lib/clock';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { bareSql, type PreparedTexts, queryPlan, recordPrepared } from '../support/query-plans';
import { makeTempDir, type TempDir } from '../support/tmp';

const TTL = 30_000;

/** Scans that are the point of their statement, each matched by a distinctive part of its text. */
const MAY_SCAN: { text: string; line: RegExp; why: string }[] = [
  {
    text: 'SELECT run_id FROM progress UNION SELECT run_id FROM committed',
    line: /^SCAN committed\b/,
    why: "a prune of outside clients' runs (includeExternal) lists every run id with a row: a whole-store pass",
  },
  {
    text: 'INDEXED BY committed_fresh',
    line: /^SCAN committed USING (COVERING )?INDEX committed_fresh\b/,
    why: 'a settle moves every fresh row, and committed_fresh holds only those (two thousand or so)',
  },
];

/** The table named as such, not committed_history, committed_count, committed_at. */
const NAMES_COMMITTED = /\bcommitted\b/i;
/** Words that can follow a table's name and are not its alias. */
const NOT_ALIAS = new Set(
  'as where on using indexed not natural left right full inner cross join union except intersect group order limit set values select default returning window having from and or'.split(
    ' ',
  ),
);

/** The names a plan may call committed by in this text: its own and its aliases (`committed c`, `committed AS c`). */
function namesOfCommitted(sql: string): Set<string> {
  const names = new Set(['committed']);
  for (const m of bareSql(sql).matchAll(/\bcommitted\s+(?:AS\s+)?([A-Za-z_]\w*)/gi))
    if (!NOT_ALIAS.has(m[1]!.toLowerCase())) names.add(m[1]!);
  return names;
}

/**
 * The plan's lines that read every row of committed: a SCAN of it (with or without an index: a full index
 * scan reads every entry), an automatic index or a Bloom filter built from it. An alias another table shares
 * is taken for committed's unless the line names an index of another table.
 */
function scansOfCommitted(sql: string, plan: string[], tableOf: Map<string, string>): string[] {
  const names = namesOfCommitted(sql);
  return plan.filter((line) => {
    const m = /^(SCAN|SEARCH|BLOOM FILTER ON) (\S+)(.*)$/.exec(line);
    if (!m || !names.has(m[2]!)) return false;
    const index = /USING (?:COVERING )?INDEX (\w+)/.exec(m[3]!)?.[1];
    if (index && tableOf.get(index) !== 'committed') return false;
    // A SEARCH with no constraint is min() or max() walking an index from one end until a row matches the rest
    // of the WHERE: `max(committed_at) … WHERE run_id = ?` down committed_at visits every row in the worst case.
    return m[1] !== 'SEARCH' || m[3]!.includes('USING AUTOMATIC') || !m[3]!.includes('(');
  });
}

/** Each index's table, so that `SCAN c USING INDEX claims_run` is known not to be committed's. */
const indexTables = (db: Database.Database) =>
  new Map(
    db
      .prepare<[], { name: string; tbl: string }>(
        "SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'index'",
      )
      .all()
      .map((r) => [r.name, r.tbl]),
  );

/** Runs `steps` steps of a runs-row run through a worker's claim, and ends it as given. */
async function workflowRun(store: SqliteStore, id: string, steps: number, end: 'completed' | 'failed') {
  await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: steps });
  expect((await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] }))?.id).toBe(id);
  const checkpoint = new Checkpoint(store, id, { workerId: 'wk', clock: store.clock });
  await runAgent(
    Array.from({ length: steps }, (_, i) => i),
    checkpoint,
    (x) => x,
  );
  // Keyless rows (step NULL), one with a time in its key: the unstable-keys read's candidates.
  await checkpoint.runOnce(`${id}:note`, () => 'n');
  await checkpoint.runOnce(`${id}:at-1700000000`, () => 't');
  expect(await store.finishRun(id, 'wk', { status: end })).toBe(true);
}

describe('committed is never scanned on SQLite', () => {
  let dir: TempDir;
  let store: SqliteStore;
  let recorded: PreparedTexts;

  beforeAll(async () => {
    recorded = recordPrepared();
    dir = makeTempDir('waybill-plans-');
    store = openSqliteStore({ path: dir.file('store.db'), clock: new ManualClock(), synchronous: 'normal' });
    const op = recorded.during;

    await op('steps', async () => {
      await workflowRun(store, 'done', 6, 'completed');
      await workflowRun(store, 'forkme', 4, 'completed');
      await workflowRun(store, 'broke', 3, 'failed');
      await store.tagRun('done', { tags: ['blue'] });
      // An outside client's run with progress, and one with nothing but a committed row (the runs list's lone rows).
      const outside = new Checkpoint(store, 'outside', { clock: store.clock });
      await outside.runOnce('outside:step:0', () => 0, { step: 0 });
      await outside.saveProgress(1, {});
      await new Checkpoint(store, 'lone', { clock: store.clock }).runOnce('lone:a', () => 'a');
      await store.getCommitted('done:step:0');
    });
    // A claim in doubt, resolved by hand (a committed row of source 'manual'), and another expired.
    for (const idemKey of ['doubt:a', 'doubt:b']) {
      const claim = { idemKey, runId: 'doubt', token: idemKey, workerId: 'gone', step: null, attempt: 1 };
      await store.claim({ ...claim, leaseMs: 1, claimTtlMs: TTL });
    }
    await op('resolveClaim', () =>
      store.resolveClaim({ idemKey: 'doubt:a', resultJson: '1', actor: 't', claimTtlMs: TTL, force: true }),
    );
    await op('expireClaim', () => store.expireClaim('doubt:b', { actor: 't', claimTtlMs: TTL, force: true }));

    await op('listCommitted, first page', () => store.listCommitted('done', { limit: 2 }));
    await op('listCommitted, later page', async () => {
      await store.listCommitted('done', { limit: 2, afterKey: 'done:note' });
      await store.listCommitted('done', { limit: 2, afterKey: 'done:step:1' });
    });
    await op('countCommitted', async () => {
      await store.countCommitted('done');
      await store.countCommitted('lone');
    });
    await op('runFootprint', () => store.runFootprint('done'));

    // The run page: its charts, recent steps, key search, insights, last commit.
    await op('listStepTimings', () => store.listStepTimings('done'));
    await op('stepTimingBuckets', () => store.stepTimingBuckets('done', { buckets: 4 }));
    await op('commitBuckets', () => store.commitBuckets('done', { buckets: 4 }));
    await op('recentSteps', () => store.recentSteps('done', { limit: 3 }));
    await op('searchCommitted', () => store.searchCommitted('done', 'step'));
    await op('unstableKeys', () => store.unstableKeys('done'));
    await op('lastCommittedAt', () => store.lastCommittedAt('done'));
    await op('runStats', () => store.runStats({ sinceSeconds: 0, claimTtlMs: TTL }));
    await op('countClaims', () => store.countClaims({ claimTtlMs: TTL, runId: 'done' }));
    // Twice: the second scrape checks the row at its watermark.
    await op('metricsSnapshot', async () => {
      await store.metricsSnapshot({ claimTtlMs: TTL, boundsMs: [10, 100], settleMs: 0 });
      await store.metricsSnapshot({ claimTtlMs: TTL, boundsMs: [10, 100], settleMs: 0 });
    });

    // The runs list: a page not full, a full one, filters, tags, a cursor (lone runs come from lone_runs).
    await op('listRuns', async () => {
      await store.listRuns({ claimTtlMs: TTL });
      const [first] = await store.listRuns({ claimTtlMs: TTL, limit: 1 });
      await store.listRuns({ claimTtlMs: TTL, limit: 1, after: { updatedAt: first!.updatedAt, id: first!.id } });
      await store.listRuns({ claimTtlMs: TTL, status: 'completed' });
      await store.listRuns({ claimTtlMs: TTL, workflow: 'w', search: 'o' });
      await store.listRuns({ claimTtlMs: TTL, tags: ['blue'] });
    });

    // The step page and the rewinds.
    await op('readStep', () => store.readStep('done', 2));
    await op('readTrace', () => store.readTrace('done', 0, 6));
    await op('stepOfKeys', () => store.stepOfKeys('done', ['done:step:2', 'done:note']));
    await op('rewindSpan', () => store.rewindSpan('done', 3));
    await op('rerunRun', () =>
      store.rerunRun({ runId: 'done', fromStep: 3, inputJson: null, actor: 't', reason: null, claimTtlMs: TTL }),
    );
    await op('forkRun', () =>
      store.forkRun({ runId: 'forkme', fromStep: 2, newId: 'forked', inputJson: null, actor: 't', claimTtlMs: TTL }),
    );
    await op('listForks', () => store.listForks('forkme'));

    // Retention last: it takes the rows away.
    const before = store.clock.now() / 1000 + 1;
    await op('planPrune', async () => {
      await store.planPrune({ before });
      await store.planPrune({ before, includeExternal: true });
    });
    await op('pruneBatch', async () => {
      await store.pruneBatch({ before, batchSize: 5 });
      await store.pruneBatch({ before, includeExternal: true, batchSize: 5 });
    });
    recorded.restore();
  });

  afterAll(async () => {
    recorded?.restore();
    await store?.close();
    dir?.remove();
  });

  /** The recorded texts that name committed, each with the operation that first prepared it. */
  const committedTexts = () => [...recorded.texts].filter(([sql]) => NAMES_COMMITTED.test(bareSql(sql)));

  /** Each text whose plan reads committed whole (less MAY_SCAN's), with where it came from and its plan. */
  function offenders(texts: [sql: string, from: string][]): string {
    const tableOf = indexTables(store.db);
    return texts
      .flatMap(([sql, from]) => {
        const plan = queryPlan(store.db, sql);
        const allowed = MAY_SCAN.filter((entry) => sql.includes(entry.text));
        const scans = scansOfCommitted(sql, plan, tableOf).filter((line) => !allowed.some((a) => a.line.test(line)));
        return scans.length ? [`[${from}] ${sql.trim()}\n  plan:\n    ${plan.join('\n    ')}`] : [];
      })
      .join('\n\n');
  }

  it('records the statements of every operation that reads committed', () => {
    const texts = committedTexts();
    const by = (label: string) => texts.filter(([, from]) => from === label).map(([sql]) => sql);
    // What this drive prepared when it was written (42 texts): fewer means an operation's reads went unrecorded.
    expect(texts.length).toBeGreaterThanOrEqual(42);
    expect(by('listCommitted, first page')).not.toEqual([]);
    expect(by('listRuns').some((sql) => /FROM committed c WHERE c\.run_id/.test(sql))).toBe(true);
    const move = /INSERT INTO committed_history[\s\S]*FROM committed WHERE/;
    expect(by('rerunRun').some((sql) => move.test(sql))).toBe(true);
    for (const { text } of MAY_SCAN)
      expect(
        texts.some(([sql]) => sql.includes(text)),
        text,
      ).toBe(true);
  });

  it('plans every statement that names committed as a search of it, never a scan', () => {
    expect(offenders(committedTexts())).toBe('');
  });

  it("plans the triggers that read committed's rows as searches too", () => {
    const triggers = store.db
      .prepare<[], { name: string; sql: string }>("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
      .all();
    // Each statement of each body, a row's NEW.x and OLD.x a parameter.
    const statements = triggers.flatMap(({ name, sql }) =>
      sql
        .slice(sql.search(/\bBEGIN\b/i) + 'BEGIN'.length, sql.search(/\bEND\s*;?\s*$/i))
        .split(';')
        .map((body): [string, string] => [body.replace(/\b(?:NEW|OLD)\.(?:`\w+`|"\w+"|\w+)/gi, '?'), `trigger ${name}`])
        .filter(([body]) => NAMES_COMMITTED.test(bareSql(body))),
    );
    expect(statements.map(([, from]) => from)).toContain('trigger progress_committed_count');
    expect(offenders(statements)).toBe('');
  });
});
