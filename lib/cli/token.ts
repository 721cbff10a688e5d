/**
 * `waybill token --run ID [--ttl 24h]`: prints a run-scoped token (lib/auth/run-token.ts) for an agent in a
 * sandbox, instead of the operator token. Signed here, with this environment's WAYBILL_SESSION_SECRET and
 * tokens: the dashboard accepts it only if it has the same ones. Audited like every operator action (lib/control/tokens.ts).
 */
import { parseArgs } from 'node:util';
import { runTokenTtl } from '../auth/run-token';
import { tokens } from '../control';
import { authEnabled } from '../auth/principal';
import { runRef } from '../api/ids';
import { UsageError } from '../errors';
import { GLOBAL_OPTIONS, check, flags } from './args';
import { callerOf, type Cli, withControl } from './context';

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
  if (values.ttl !== undefined) check(runTokenTtl, values.ttl, '--ttl');
  const cfg = cli.config();
  if (!cfg.WAYBILL_SESSION_SECRET && !authEnabled(cfg)) {
    // Signed with a key anyone can derive; harmless only while the dashboard has no sign-in at all.
    cli.err(
      `${cli.command}: note: no WAYBILL_SESSION_SECRET or tokens are set, so this token holds the agent to run ${runId} but anyone could forge one`,
    );
  }
  const caller = callerOf(cli, values.as);
  const minted = await withControl(cli, values.db, (deps) =>
    tokens.mint(deps, caller, { runId, ttl: values.ttl }, { auth: cfg, nowMs: Date.now() }),
  );
  if (values.json) cli.json(minted);
  else cli.out(minted.token);
  return 0;
}
