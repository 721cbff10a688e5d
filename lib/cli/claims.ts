/**
 * Claims, and what an operator does about orphaned ones: `expire` gives up on a claim (the step runs again),
 * `resolve` commits a result by hand (it never runs again), `sweep` expires every orphaned claim.
 * An orphaned claim's side effect may or may not have happened: these are decisions, made by a person.
 */
import { parseArgs } from 'node:util';
import { ClaimNotOrphanedError } from '../errors';
import type { Store } from '../store/types';
import { GLOBAL_OPTIONS, UsageError, check, flags, jsonArg, lookupId, positionals } from './args';
import { auditDetail } from '../reason';
import { reasonArg, recordCliAudit } from './audit';
import { withStore, type Cli } from './context';
import { LiveBlock, bar, relative, table } from './format';

export async function claims(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() => parseArgs({
    args, strict: true, options: { ...GLOBAL_OPTIONS, orphaned: { type: 'boolean' }, run: { type: 'string' } },
  }));
  const runId = values.run === undefined ? undefined : check(lookupId, values.run, '--run');
  const list = await withStore(cli, values.db, (store) =>
    store.listClaims({ runId, orphanedOnly: values.orphaned, claimTtlMs: cli.config().WAYBILL_CLAIM_TTL_MS }));
  if (values.json) {
    cli.json(list.map(({ idemKey, runId, workerId, claimedAt, leaseExpiresAt, orphaned }) =>
      ({ idemKey, runId, workerId, claimedAt, leaseExpiresAt, orphaned })));
    return 0;
  }
  if (list.length === 0) {
    cli.out(values.orphaned ? 'no orphaned claims' : 'no claims');
    return 0;
  }
  const now = Date.now();
  cli.out(table(['KEY', 'RUN', 'WORKER', 'CLAIMED', 'LEASE', 'STATE'], list.map((c) => [
    c.idemKey, c.runId, c.workerId ?? (c.token === null ? '(outside client)' : null), relative(c.claimedAt, now),
    c.leaseExpiresAt === null ? 'no lease' : relative(c.leaseExpiresAt, now), c.orphaned ? 'ORPHANED' : 'live',
  ])));
  return 0;
}

export async function expire(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: keys } = flags(() => parseArgs({
    args, strict: true, allowPositionals: true,
    options: { ...GLOBAL_OPTIONS, 'all-orphaned': { type: 'boolean' }, force: { type: 'boolean' }, reason: { type: 'string' } },
  }));
  const reason = reasonArg(values.reason);
  if (values['all-orphaned'] && keys.length > 0) throw new UsageError('give keys or --all-orphaned, not both');
  if (!values['all-orphaned'] && keys.length === 0) throw new UsageError('missing <key…> (or --all-orphaned)');
  for (const key of keys) check(lookupId, key, 'key');
  if (values['all-orphaned']) return sweepOrphaned(cli, values.db, Boolean(values.json), reason);

  const report = await withStore(cli, values.db, (store) => expireEach(cli, store, keys, { force: Boolean(values.force), reason }));
  if (values.json) cli.json(report);
  else {
    for (const key of report.expired) cli.out(`expired ${key}: the step will run again`);
    for (const { key, why } of report.notExpired) {
      cli.err(`waybill expire: ${key}: not expired (${why === 'missing' ? 'no claim on it' : 'its lease is live: --force expires a live claim'})`);
    }
  }
  return report.notExpired.length > 0 ? 1 : 0;
}

export async function sweep(cli: Cli, args: string[]): Promise<number> {
  const { values } = flags(() => parseArgs({ args, strict: true, options: { ...GLOBAL_OPTIONS, reason: { type: 'string' } } }));
  return sweepOrphaned(cli, values.db, Boolean(values.json), reasonArg(values.reason));
}

export async function resolve(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() => parseArgs({
    args, strict: true, allowPositionals: true,
    options: { ...GLOBAL_OPTIONS, result: { type: 'string' }, note: { type: 'string' }, force: { type: 'boolean' } },
  }));
  const [key] = positionals(given, ['key']);
  const idemKey = check(lookupId, key, 'key');
  if (values.result === undefined) throw new UsageError('missing --result JSON|@file (the result to commit)');
  const resultJson = JSON.stringify(jsonArg(values.result, '--result'));
  try {
    // The store decides, in the transaction that resolves: a claim taken over since it was listed is refused.
    await withStore(cli, values.db, (store) => store.resolveClaim({
      idemKey, resultJson, actor: cli.actor, note: values.note, claimTtlMs: cli.config().WAYBILL_CLAIM_TTL_MS, force: Boolean(values.force),
    }));
  } catch (error) {
    if (!(error instanceof ClaimNotOrphanedError && error.reason === 'live')) throw error;
    const message = `${idemKey}: not resolved (its lease is live: --force resolves a live claim)`;
    if (values.json) cli.err(JSON.stringify({ error: { code: 'CONFLICT', message, command: cli.command, exitCode: 1 } }));
    else cli.err(`waybill resolve: ${message}`);
    return 1;
  }
  if (values.json) cli.json({ resolved: idemKey });
  else cli.out(`resolved ${idemKey}: committed by hand, it will not run again`);
  return 0;
}

interface ExpireReport {
  expired: string[];
  notExpired: { key: string; why: 'missing' | 'live' }[];
}

/**
 * Expires every claim orphaned when listed. Not forced: a claim whose holder renewed it meanwhile was not
 * orphaned after all, and stays.
 */
async function sweepOrphaned(cli: Cli, db: string | undefined, json: boolean, reason: string | undefined): Promise<number> {
  const report = await withStore(cli, db, async (store) => {
    const orphaned = await store.listClaims({ orphanedOnly: true, claimTtlMs: cli.config().WAYBILL_CLAIM_TTL_MS });
    const swept = await expireEach(cli, store, orphaned.map((c) => c.idemKey), { force: false, progress: !json, audit: false });
    // One line for the sweep, as the dashboard writes; each expiry is in its run's timeline already.
    if (swept.expired.length > 0) {
      const listed = swept.expired.slice(0, 20).join(', ') + (swept.expired.length > 20 ? `, and ${swept.expired.length - 20} more` : '');
      await recordCliAudit(cli, store, {
        action: 'sweep', target: '*', runId: null,
        detail: auditDetail({ note: `expired ${swept.expired.length} orphaned claim(s): ${listed}`, reason }),
      });
    }
    return swept;
  });
  if (json) cli.json(report);
  else {
    const total = report.expired.length + report.notExpired.length;
    cli.out(total === 0 ? 'no orphaned claims' : `expired ${report.expired.length} of ${total} orphaned claim(s)` +
      (report.notExpired.length ? `; ${report.notExpired.length} came back to life or were taken meanwhile` : ''));
  }
  return 0;
}

async function expireEach(cli: Cli, store: Store, keys: string[],
  { force, reason, progress = false, audit = true }: { force: boolean; reason?: string; progress?: boolean; audit?: boolean }): Promise<ExpireReport> {
  const claimTtlMs = cli.config().WAYBILL_CLAIM_TTL_MS;
  const report: ExpireReport = { expired: [], notExpired: [] };
  const live = progress && cli.tty && keys.length > 1 ? new LiveBlock(cli.stderr) : null;
  let lastLine = Date.now();
  for (const [i, key] of keys.entries()) {
    const held = audit ? await store.getClaim(key, { claimTtlMs }) : null;
    const outcome = await store.expireClaim(key, { actor: cli.actor, force, claimTtlMs });
    if (outcome !== 'expired') report.notExpired.push({ key, why: outcome });
    else {
      report.expired.push(key);
      if (audit) {
        await recordCliAudit(cli, store, {
          action: 'expire', target: key, runId: held?.runId ?? null,
          detail: auditDetail({ note: force && held && !held.orphaned ? 'forced: the lease was live' : null, reason }),
        });
      }
    }
    if (live) live.update([`expiring ${bar(i + 1, keys.length)}`]);
    else if (progress && Date.now() - lastLine >= 3000) {
      cli.err(`expiring: ${i + 1}/${keys.length}`);
      lastLine = Date.now();
    }
  }
  live?.done();
  return report;
}
