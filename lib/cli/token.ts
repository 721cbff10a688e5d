/**
 * `waybill token --run ID [--ttl 24h]`: prints a run-scoped token (lib/auth/run-token.ts) for an agent in a
 * sandbox, instead of the operator token. Signed here, with a key derived from this environment's
 * WAYBILL_SESSION_SECRET and tokens (lib/auth/signed.ts): the dashboard accepts it only if it has the same
 * ones. Nothing is shared through the store, so a shell without them would sign with another key and hand
 * out a token the dashboard answers 401. Before printing one, this asks the dashboard at WAYBILL_URL (a read
 * a run token may make); without WAYBILL_URL it refuses when it has no key material at all. Audited like
 * every operator action (lib/control/tokens.ts).
 */
import { parseArgs } from 'node:util';
import { runRef } from '../api/ids';
import { authEnabled } from '../auth/principal';
import { mintRunToken, runTokenTtl } from '../auth/run-token';
import type { Config } from '../config';
import { tokens } from '../control';
import { ConfigError, UsageError } from '../errors';
import { check, flags, GLOBAL_OPTIONS } from './args';
import { type Cli, callerOf, withControl } from './context';

/** A dashboard answers this read in milliseconds; a loaded machine's first request compiles its route. */
const PROBE_MS = 15_000;
const SET_KEY =
  "set WAYBILL_SESSION_SECRET, WAYBILL_OPERATOR_TOKEN and WAYBILL_VIEWER_TOKEN here as the dashboard's server has them";

export async function token(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { ...GLOBAL_OPTIONS, run: { type: 'string' }, ttl: { type: 'string' } },
    }),
  );
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])} (the run is --run ID)`);
  if (values.run === undefined) throw new UsageError('missing --run ID: a token is for one run');
  const runId = check(runRef, values.run, '--run');
  const ttlMs = values.ttl === undefined ? undefined : check(runTokenTtl, values.ttl, '--ttl');
  const cfg = cli.config();
  const nowMs = Date.now();
  // The same token tokens.mint signs below (same key, run, lifetime and second), tried before it is audited.
  await checkAccepted(cli, cfg, mintRunToken(cfg, runId, ttlMs, nowMs).token, runId);
  const caller = callerOf(cli, values.as);
  const minted = await withControl(cli, values.db, (deps) =>
    tokens.mint(deps, caller, { runId, ttl: values.ttl }, { auth: cfg, nowMs }),
  );
  if (values.json) cli.json(minted);
  else cli.out(minted.token);
  return 0;
}

/** Throws ConfigError, naming what to set, when the dashboard will not (or may not) accept `probe`. */
async function checkAccepted(cli: Cli, cfg: Config, probe: string, runId: string): Promise<void> {
  const keyed = cfg.WAYBILL_SESSION_SECRET !== undefined || authEnabled(cfg);
  const anyone = `a key anyone can derive (no WAYBILL_SESSION_SECRET, WAYBILL_OPERATOR_TOKEN or WAYBILL_VIEWER_TOKEN is set here)`;
  if (!cfg.WAYBILL_URL) {
    if (keyed) return;
    throw new ConfigError(
      `refused: a token signed here would use ${anyone}, and a dashboard with sign-in answers it 401. ${SET_KEY}, ` +
        'or set WAYBILL_URL to the dashboard so that waybill token can ask it',
    );
  }
  const answer = await probeDashboard(cfg.WAYBILL_URL, runId, probe);
  if (answer.status === 401) {
    throw new ConfigError(
      `refused: the dashboard at ${cfg.WAYBILL_URL} does not accept tokens signed here (401: ${answer.message}), ` +
        `because they are signed with ${keyed ? "this shell's WAYBILL_SESSION_SECRET and tokens, not the server's" : anyone}: ${SET_KEY}`,
    );
  }
  if (answer.status === null) {
    if (!keyed)
      throw new ConfigError(
        `refused: cannot reach the dashboard at ${cfg.WAYBILL_URL} (${answer.message}) to check a token signed with ${anyone}: start it, or ${SET_KEY}`,
      );
    cli.err(
      `${cli.command}: note: could not reach the dashboard at ${cfg.WAYBILL_URL} (${answer.message}): the token is signed with this shell's WAYBILL_SESSION_SECRET and tokens, unchecked`,
    );
    return;
  }
  if (!keyed) {
    cli.err(
      `${cli.command}: note: the dashboard at ${cfg.WAYBILL_URL} has no sign-in, so this token holds the agent to run ${runId} but anyone could forge one`,
    );
  }
}

/** GET the run's committed results with the token: a read a run token may make, so only a bad key is 401. */
async function probeDashboard(
  url: string,
  runId: string,
  probe: string,
): Promise<{ status: number | null; message: string }> {
  try {
    const response = await fetch(
      new URL(`api/v1/runs/${encodeURIComponent(runId)}/committed?limit=1`, `${url.replace(/\/?$/, '/')}`),
      {
        headers: { authorization: `Bearer ${probe}` },
        signal: AbortSignal.timeout(PROBE_MS),
      },
    );
    const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
    return { status: response.status, message: body?.error?.message ?? response.statusText };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { status: null, message: cause?.code ?? cause?.message ?? (error as Error).message };
  }
}
