/**
 * Claims, and what an operator does about orphaned ones: `expire` gives up on a claim (the step runs again),
 * `resolve` commits a result by hand (it never runs again), `sweep` expires every orphaned claim.
 * An orphaned claim's side effect may or may not have happened: these are decisions, made by a person, and
 * lib/control/claims makes them (with the audit line, as `--as NAME` or `cli:<OS user>`); this file parses and prints.
 */
import { parseArgs } from 'node:util';
import { listClaims } from '../api/claims';
import { type Caller, type ControlDeps, claims as control } from '../control';
import { readClaimsPage } from '../control/claims-list';
import { isOutsideClaim, sweepView } from '../control/views';
import { LiveClaimError, NotFoundError, UsageError } from '../errors';
import { reasonSchema } from '../reason';
import { check, count, flags, GLOBAL_OPTIONS, jsonArg, lookupId, positionals } from './args';
import { type Cli, callerOf, withControl, withStore } from './context';
import { bar, LiveBlock, relative, table } from './format';

export async function claims(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({
      args,
      strict: true,
      options: {
        ...GLOBAL_OPTIONS,
        orphaned: { type: 'boolean' },
        run: { type: 'string' },
        limit: { type: 'string' },
        cursor: { type: 'string' },
      },
    }),
  );
  const runId = values.run === undefined ? undefined : check(lookupId, values.run, '--run');
  if (values.json) {
    // GET /api/v1/claims's answer, from the same function: { claims, nextCursor }, a page at a time.
    const query = {
      runId,
      orphaned: values.orphaned,
      limit: values.limit === undefined ? undefined : check(count(500), values.limit, '--limit'),
      cursor: values.cursor,
    };
    cli.json(await withStore(cli, values.db, (store) => listClaims(store, query, cli.config().WAYBILL_CLAIM_TTL_MS)));
    return 0;
  }
  if (values.limit !== undefined || values.cursor !== undefined)
    throw new UsageError('--limit and --cursor page the --json answer; the table lists every claim');
  const { claims: list } = await withStore(cli, values.db, (store) =>
    readClaimsPage(store, { runId, orphanedOnly: values.orphaned }, cli.config().WAYBILL_CLAIM_TTL_MS),
  );
  if (list.length === 0) {
    cli.out(values.orphaned ? 'no orphaned claims' : 'no claims');
    return 0;
  }
  const now = Date.now();
  cli.out(
    table(
      ['KEY', 'RUN', 'WORKER', 'CLAIMED', 'LEASE', 'STATE'],
      list.map((c) => [
        c.idemKey,
        c.runId,
        c.workerId ?? (isOutsideClaim(c) ? '(outside client)' : null),
        relative(c.claimedAt, now),
        c.leaseExpiresAt === null ? 'no lease' : relative(c.leaseExpiresAt, now),
        c.orphaned ? 'ORPHANED' : 'live',
      ]),
    ),
  );
  return 0;
}

export async function expire(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: keys } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        'all-orphaned': { type: 'boolean' },
        force: { type: 'boolean' },
        reason: { type: 'string' },
      },
    }),
  );
  const reason = reasonArg(values.reason);
  if (values['all-orphaned'] && keys.length > 0) throw new UsageError('give keys or --all-orphaned, not both');
  if (!values['all-orphaned'] && keys.length === 0) throw new UsageError('missing <key…> (or --all-orphaned)');
  for (const key of keys) check(lookupId, key, 'key');
  const caller = callerOf(cli, values.as);
  if (values['all-orphaned']) return sweepOrphaned(cli, caller, values.db, Boolean(values.json), reason);

  const report = await withControl(cli, values.db, (deps) =>
    expireEach(cli, deps, caller, keys, { force: Boolean(values.force), reason }),
  );
  if (values.json) cli.json(report);
  else {
    for (const key of report.expired) cli.out(`expired ${key}: the step will run again`);
    for (const { key, why } of report.notExpired) {
      cli.err(
        `waybill expire: ${key}: not expired (${why === 'missing' ? 'no claim on it' : 'its lease is live: --force expires a live claim'})`,
      );
    }
  }
  return report.notExpired.length > 0 ? 1 : 0;
}

export async function sweep(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() =>
    parseArgs({ args, strict: true, options: { ...GLOBAL_OPTIONS, reason: { type: 'string' } } }),
  );
  return sweepOrphaned(cli, callerOf(cli, values.as), values.db, Boolean(values.json), reasonArg(values.reason));
}

export async function resolve(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, result: { type: 'string' }, note: { type: 'string' }, force: { type: 'boolean' } },
    }),
  );
  const [key] = positionals(given, ['key']);
  const idemKey = check(lookupId, key, 'key');
  if (values.result === undefined) throw new UsageError('missing --result JSON|@file (the result to commit)');
  const result = jsonArg(values.result, '--result', cli.config().WAYBILL_MAX_BODY_BYTES);
  const caller = callerOf(cli, values.as);
  let done: { key: string; runId: string };
  try {
    // The store decides, in the transaction that resolves: a claim taken over since it was listed is refused.
    done = await withControl(cli, values.db, (deps) =>
      control.resolve(deps, caller, { key: idemKey, result, note: values.note, force: Boolean(values.force) }),
    );
  } catch (error) {
    if (!(error instanceof LiveClaimError)) throw error;
    const message = `${idemKey}: not resolved (its lease is live: --force resolves a live claim)`;
    if (values.json)
      cli.err(JSON.stringify({ error: { code: 'CONFLICT', message, command: cli.command, exitCode: 1 } }));
    else cli.err(`waybill resolve: ${message}`);
    return 1;
  }
  if (values.json) cli.json({ ...done, resolved: true });
  else cli.out(`resolved ${idemKey}: committed by hand, it will not run again`);
  return 0;
}

interface ExpireReport {
  expired: string[];
  notExpired: { key: string; why: 'missing' | 'live' }[];
}

/** Every orphaned claim expired through lib/control's sweep, with a progress bar on a terminal. */
async function sweepOrphaned(
  cli: Cli,
  caller: Caller,
  db: string | undefined,
  json: boolean,
  reason: string | undefined,
): Promise<number> {
  const live = !json && cli.tty ? new LiveBlock(cli.stderr) : null;
  let lastLine = Date.now();
  const report = await withControl(cli, db, (deps) =>
    control.sweep(
      deps,
      caller,
      { reason },
      {
        onProgress: (done, total) => {
          if (json || total < 2) return;
          if (live) live.update([`expiring ${bar(done, total)}`]);
          else if (Date.now() - lastLine >= 3000) {
            cli.err(`expiring: ${done}/${total}`);
            lastLine = Date.now();
          }
        },
      },
    ),
  );
  live?.done();
  if (json) cli.json(sweepView(report));
  else {
    const total = report.keys.length + report.skipped.length;
    cli.out(
      total === 0
        ? 'no orphaned claims'
        : `expired ${report.keys.length} of ${total} orphaned claim(s)` +
            (report.skipped.length ? `; ${report.skipped.length} came back to life or were taken meanwhile` : ''),
    );
  }
  return 0;
}

/** Each key through lib/control's expire; a key with no claim, or a live one without --force, is reported, not fatal. */
async function expireEach(
  cli: Cli,
  deps: ControlDeps,
  caller: Caller,
  keys: string[],
  { force, reason }: { force: boolean; reason?: string },
): Promise<ExpireReport> {
  const report: ExpireReport = { expired: [], notExpired: [] };
  const live = cli.tty && keys.length > 1 ? new LiveBlock(cli.stderr) : null;
  for (const [i, key] of keys.entries()) {
    try {
      await control.expire(deps, caller, { key, force, reason });
      report.expired.push(key);
    } catch (error) {
      if (error instanceof NotFoundError) report.notExpired.push({ key, why: 'missing' });
      else if (error instanceof LiveClaimError) report.notExpired.push({ key, why: 'live' });
      else throw error;
    }
    live?.update([`expiring ${bar(i + 1, keys.length)}`]);
  }
  live?.done();
  return report;
}

/** `--reason` checked before anything is opened, as lib/control checks it (one schema, lib/reason.ts). */
function reasonArg(value: string | undefined): string | undefined {
  return value === undefined ? undefined : check(reasonSchema, value, '--reason');
}
