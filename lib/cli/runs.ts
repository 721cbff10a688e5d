/**
 * Read commands over runs: `runs` lists them (outside clients' runs included, as workflow `external`),
 * `inspect` shows one — its row, its map, its live claims, its committed count and its timeline.
 */
import { parseArgs } from 'node:util';
import { encodeClaimsCursor } from '../api/cursor';
import { listRuns } from '../api/runs';
import { metaFilter, tagFilter, WAITING_WITH_STATUS, waitingFilter, waitingMatchesStatus } from '../control/fields';
import { type RunFigures, readRunFigures, runFigures } from '../control/figures';
import { type QueuedReason, queuedReasonOf } from '../control/queued';
import { readRunRows } from '../control/run-rows';
import { readRunsPage } from '../control/runs-list';
import { readStallFacts, type Stall, stallOf, stallSettings } from '../control/stalled';
import { claimView, eventView, progressView, runView } from '../control/views';
import { MAX_DEPTH, nestingDepth } from '../domain/json-input';
import { eventText } from '../engine/attempt-note';
import { NotFoundError, UsageError } from '../errors';
import { runUsage, type UsageTotals } from '../gateway/ledger';
import type { ClaimRow, ProgressRow, RunRow, RunTags, Store } from '../store/contract';
import { check, count, flags, GLOBAL_OPTIONS, lookupId, positionals, statusFilter } from './args';
import { type Cli, withStore } from './context';
import { fields, progressBar, relative, table, truncate } from './format';

export async function runs(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        status: { type: 'string' },
        waiting: { type: 'string' },
        workflow: { type: 'string' },
        search: { type: 'string' },
        parent: { type: 'string' },
        tag: { type: 'string', multiple: true },
        meta: { type: 'string', multiple: true },
        limit: { type: 'string' },
        cursor: { type: 'string' },
      },
    }),
  );
  const waiting = values.waiting === undefined ? undefined : check(waitingFilter, values.waiting, '--waiting');
  const status = values.status === undefined ? undefined : check(statusFilter, values.status, '--status');
  if (!waitingMatchesStatus({ status, waiting })) throw new UsageError(`--waiting: ${WAITING_WITH_STATUS}`);
  const filter = {
    status,
    waiting,
    workflow: values.workflow === undefined ? undefined : check(lookupId, values.workflow, '--workflow'),
    search: values.search,
    parent: values.parent === undefined ? undefined : check(lookupId, values.parent, '--parent'),
    tags: values.tag && check(tagFilter, values.tag, '--tag'),
    meta: values.meta && check(metaFilter, values.meta, '--meta'),
    limit: values.limit === undefined ? 50 : check(count(10_000), values.limit, '--limit'),
    claimTtlMs: cli.config().WAYBILL_CLAIM_TTL_MS,
  };
  if (values.json) {
    // GET /api/v1/runs's answer, from the same function: { runs, nextCursor }.
    const query = { ...filter, q: filter.search, tag: filter.tags, cursor: values.cursor };
    cli.json(
      await withStore(cli, values.db, (store) =>
        listRuns(store, query, filter.claimTtlMs, stallSettings(cli.config())),
      ),
    );
    return 0;
  }
  if (values.cursor !== undefined) throw new UsageError('--cursor pages the --json answer (its nextCursor)');
  // An outside client's run is 'idle' (no claim), which RunStatus does not name; the store filters on text.
  const { runs: list } = await withStore(cli, values.db, (store) =>
    readRunsPage(store, filter, readStallFacts(store, stallSettings(cli.config()))),
  );
  const stalls = list.map((r) => r.stall);
  if (list.length === 0) {
    cli.out('no runs');
    return 0;
  }
  const now = Date.now();
  cli.out(
    table(
      ['ID', 'WORKFLOW', 'STATUS', 'PROGRESS', 'EXECUTED', 'SKIPPED', 'AWAITED', 'ORPHANED', 'UPDATED', 'STATE'],
      list.map((r) => {
        const figures = runFigures(r);
        return [
          r.id,
          r.workflow,
          r.status,
          progressBar(figures, 12),
          figures.executed,
          figures.skipped,
          figures.awaited,
          r.orphanedClaims || '',
          relative(r.updatedAt, now),
          stateText(r.stall, r.queuedReason),
        ];
      }),
    ),
  );
  const stalled = stalls.filter(Boolean).length;
  if (stalled > 0) cli.err(`${stalled} of these runs ${stalled === 1 ? 'is' : 'are'} stalled: see STATE`);
  return 0;
}

/** The STATE column: a stalled run's reason, else what a queued run waits for; '' for a run that moves. */
function stateText(stall: Stall | null, queued: QueuedReason | null): string {
  return stall ? `stalled: ${stall.message}` : queued ? `queued: ${queued.message}` : '';
}

export interface RunDetail {
  /** The runs row, or for an outside client's run one synthesized with workflow 'external'. */
  run: RunRow | ExternalRun;
  external: boolean;
  /** `updatedAt`: when progress was last saved, or null when none was. */
  progress: { step: number; state: unknown; updatedAt: number | null };
  progressRow: ProgressRow | null;
  /** The first RUN_CLAIMS_SHOWN claims, oldest first; claimCount counts them all. */
  claims: ClaimRow[];
  claimCount: { total: number; orphaned: number };
  /** Where `claims --run <id> --json --cursor` goes on, or null when every claim is shown. */
  claimsNextCursor: string | null;
  committed: number;
  /** lib/control/figures.ts */
  figures: RunFigures;
  tags: RunTags;
  events: Awaited<ReturnType<Store['listEvents']>>;
}

/** `updatedAt` is null when none of its rows has a time (a claim or progress written without one). */
type ExternalRun = Omit<RunRow, 'inputJson' | 'status' | 'createdAt' | 'updatedAt'> & {
  inputJson: null;
  status: 'running' | 'idle';
  createdAt: null;
  updatedAt: number | null;
};

export async function inspect(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({ args, strict: true, allowPositionals: true, options: GLOBAL_OPTIONS }),
  );
  const [id] = positionals(given, ['runId']);
  const runId = check(lookupId, id, 'run id');
  const { detail, stall, queuedReason, usage } = await withStore(cli, values.db, async (store) => {
    const [detail, facts, usage] = await Promise.all([
      loadDetail(store, runId, cli.config().WAYBILL_CLAIM_TTL_MS),
      readStallFacts(store, stallSettings(cli.config())),
      runUsage(store, runId),
    ]);
    const row = detail.run as RunRow;
    return {
      detail,
      stall: detail.external ? null : stallOf(row, facts),
      queuedReason: detail.external ? null : await queuedReasonOf(store, row, facts),
      usage,
    };
  });
  if (values.json) {
    cli.json(detailView(detail, cli.config().WAYBILL_CLAIM_TTL_MS, stall, queuedReason));
    return 0;
  }
  const { run, progress, figures } = detail;
  const now = Date.now();
  cli.out(
    fields([
      ['run', `${run.id}  (${run.workflow})`],
      [
        'status',
        `${run.status}${run.owner ? ` on ${run.owner}` : ''}${run.attempts > 1 ? `, attempt ${run.attempts}` : ''}`,
      ],
      ...(run.parentRunId
        ? [['parent', `${run.parentRunId}${run.detached ? ' (detached)' : ''}`] as [string, string]]
        : []),
      ...(detail.tags.tags.length ? [['tags', detail.tags.tags.join(' ')] as [string, string]] : []),
      ...Object.entries(detail.tags.metadata).map(([key, value]) => [`meta ${key}`, value] as [string, string]),
      ...(stall && stall.kind !== 'no-live-worker' ? [['stalled', stall.message] as [string, string]] : []),
      ...(queuedReason ? [['queued', queuedReason.message] as [string, string]] : []),
      ['progress', progressBar(figures)],
      ['executed', String(figures.executed)],
      ['skipped', String(figures.skipped)],
      ['committed', String(figures.committed)],
      ['created', run.createdAt === null ? '—' : relative(run.createdAt, now)],
      // The latest of the row's time and the progress's: a step's commit saves progress, not the run row.
      ['updated', when(latest(run.updatedAt, progress.updatedAt), now)],
      ...(run.error ? [['error', truncate(run.error, 200)!] as [string, string]] : []),
      ...(usage.calls > 0 ? [['model calls', usageLine(usage)] as [string, string]] : []),
    ]),
  );
  if (detail.claims.length > 0) {
    const { total } = detail.claimCount;
    cli.out(`\nclaims (${total > detail.claims.length ? `oldest ${detail.claims.length} of ${total}` : total})`);
    cli.out(
      table(
        ['KEY', 'WORKER', 'CLAIMED', 'LEASE', 'STATE'],
        detail.claims.map((c) => [
          c.idemKey,
          c.workerId,
          relative(c.claimedAt, now),
          relative(c.leaseExpiresAt, now),
          c.orphaned ? 'ORPHANED' : 'live',
        ]),
      ),
    );
  }
  const recent = detail.events.slice(-15);
  if (recent.length > 0) {
    cli.out(
      `\nevents (${recent.length < detail.events.length ? `last ${recent.length} of ` : ''}${detail.events.length})`,
    );
    cli.out(
      table(
        ['WHEN', 'OUTCOME', 'STEP', 'KEY', 'DETAIL'],
        recent.map((e) => [
          relative(e.at, now),
          e.count > 1 ? `${e.outcome} ×${e.count}` : e.outcome,
          e.step,
          e.idemKey,
          truncate(eventText(e), 80),
        ]),
      ),
    );
  }
  return 0;
}

/** Everything `inspect` shows: the run's rows as every view reads them (lib/control/run-rows.ts), and its timeline. */
export async function loadDetail(store: Store, runId: string, claimTtlMs: number): Promise<RunDetail> {
  const [rows, committed, events] = await Promise.all([
    readRunRows(store, runId, claimTtlMs),
    store.countCommitted(runId),
    store.listEvents(runId),
  ]);
  if (!rows) throw new NotFoundError(`run ${runId}`);
  const { row, outside, progress } = rows;
  // 0 is the store's "no time": null here, which inspect shows as never.
  const run: RunRow | ExternalRun = row ?? {
    ...outside!,
    inputJson: null,
    createdAt: null,
    updatedAt: latest(outside!.updatedAt),
  };
  return {
    run,
    external: !row,
    figures: await readRunFigures(store, run, progress, committed),
    progress: progress
      ? { step: progress.step, state: storedJson(progress.stateJson), updatedAt: latest(progress.updatedAt) }
      : { step: 0, state: null, updatedAt: null },
    progressRow: progress,
    claims: rows.claims,
    claimCount: rows.claimCount,
    claimsNextCursor: rows.moreClaims && rows.claims.length > 0 ? encodeClaimsCursor(rows.claims.at(-1)!) : null,
    committed,
    events,
    tags: rows.tags,
  };
}

/**
 * `inspect --json`: the run, its progress, claims and events in the API's views (lib/control/views), so the
 * fields are the API's (`input`, `key`). Where the CLI says more, it says it in the same fields: a time no row
 * gave is null rather than 0, and a run with no progress yet is at step 0.
 */
function detailView(detail: RunDetail, claimTtlMs: number, stall: Stall | null, queued: QueuedReason | null) {
  const { run, progressRow } = detail;
  const row = {
    ...run,
    inputJson: run.inputJson ?? 'null',
    createdAt: run.createdAt ?? 0,
    updatedAt: run.updatedAt ?? 0,
  };
  return {
    run: {
      ...runView(row, detail.external, stall, queued),
      createdAt: run.createdAt,
      updatedAt: run.updatedAt,
      ...detail.tags,
    },
    progress: progressRow ? { ...progressView(progressRow), updatedAt: detail.progress.updatedAt } : detail.progress,
    figures: detail.figures,
    claims: detail.claims.map((c) => claimView(c, claimTtlMs)),
    claimsNextCursor: detail.claimsNextCursor,
    committed: detail.committed,
    events: detail.events.map(eventView),
  };
}

/**
 * A stored JSON text as a value to print. An outside client may have written anything: text nested past
 * MAX_DEPTH would overflow the stack when printed (JSON.stringify recurses), and text that is not JSON is
 * shown as the text it is.
 */
function storedJson(text: string): unknown {
  const depth = nestingDepth(text);
  if (depth > MAX_DEPTH) return `(not shown: nested ${depth} levels deep, more than the ${MAX_DEPTH} Waybill prints)`;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The latest usable time, or null: 0 (an unset column) and out-of-range values are no time at all. */
function latest(...times: (number | null | undefined)[]): number | null {
  const usable = times.filter((t): t is number => typeof t === 'number' && Number.isFinite(t) && t > 0);
  return usable.length === 0 ? null : Math.max(...usable);
}

/** "12s ago", or "never" for a run no row has given a time. */
function when(epochSeconds: number | null, nowMs: number): string {
  return epochSeconds === null ? 'never' : relative(epochSeconds, nowMs);
}

/** `5 calls · 1,234 tokens in (200 cached) · 456 out · $0.0123`: what the gateway recorded for the run. */
function usageLine(u: UsageTotals): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const cost =
    u.unpriced === u.calls
      ? 'cost unknown'
      : `$${u.costUsd.toFixed(4)}${u.unpriced > 0 ? ` (+${u.unpriced} unpriced)` : ''}`;
  return `${n(u.calls)} · ${n(u.inputTokens)} tokens in${u.cachedTokens > 0 ? ` (${n(u.cachedTokens)} cached)` : ''} · ${n(u.outputTokens)} out · ${cost}`;
}
