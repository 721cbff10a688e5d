/**
 * Run tokens: a credential that may use the checkpoint protocol of one run and nothing else, for an agent in a
 * sandbox instead of the operator token (lib/auth/run-token.ts signs them). Minting one hands out a credential,
 * so it is an operator's action and audited like any other, from the API and the CLI alike. The run need not
 * exist yet: an agent's loop declares its run with the token it was given. A worker minting tokens for the
 * programs it spawns is configuration, not an operator's decision, and does not come through here.
 */
import { z } from 'zod';
import type { AuthConfig } from '../auth/principal';
import { mintRunToken, runTokenTtl } from '../auth/run-token';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { runRef } from './fields';
import type { ControlDeps } from './store';

const mintInput = z.strictObject({
  runId: runRef,
  ttl: z.string({ error: 'must be a duration such as 24h' }).pipe(runTokenTtl).optional(),
});

export interface MintedToken {
  token: string;
  runId: string;
  /** Epoch seconds. */
  expiresAt: number;
}

export async function mint(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof mintInput>,
  options: {
    auth: AuthConfig;
    nowMs: number;
  },
): Promise<MintedToken> {
  authorize(caller, 'operator');
  const given = validate(mintInput, input);
  const minted = mintRunToken(options.auth, given.runId, given.ttl, options.nowMs);
  const store = await deps.store();
  await record(store, caller, {
    action: 'token',
    target: given.runId,
    runId: given.runId,
    note: `expires ${new Date(minted.expiresAt * 1000).toISOString()}`,
  });
  return minted;
}
