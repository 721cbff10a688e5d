/**
 * A run token's reach on the checkpoint protocol's routes that name their run in the body (claim, commit,
 * release) or not at all (renew): the run named must be the token's, and so must every key the request names
 * that belongs to a run already — its committed row or its claim — or a token for run A could read run B's
 * committed results by claiming B's keys "for A", or renew B's claim. And every key must be the run's by the
 * key rule (keyRun: `A:step:7`, as runAgent and the Python client make them, or `A:<name>` with no `:` in the
 * name): otherwise a token for A could claim and commit B's next key before B does (`B:step:9`, or
 * `A:nightly:step:0` of run `A:nightly`: run ids may contain `:`), or a key runs share by content, and hand B
 * a result B never produced. Keys shared between runs need the operator token. Refused as 403 FORBIDDEN
 * before the protocol writes anything. Any other principal passes untouched: its role was judged already.
 */
import type { Principal } from '../auth/principal';
import { keyRun } from '../checkpoint/keys';
import type { Store } from '../store/types';
import { ApiError } from '../errors';

export async function checkRunScope(
  store: Store,
  who: Principal,
  request: { runId?: string; keys: (string | undefined)[] },
  claimTtlMs: number,
): Promise<void> {
  if (who.role !== 'run') return;
  const own = who.runId!;
  if (request.runId !== undefined && request.runId !== own) {
    throw new ApiError('FORBIDDEN', `a run token for run ${own} may not touch run ${request.runId}`);
  }
  for (const key of request.keys) {
    if (key === undefined) continue;
    const run = keyRun(key);
    if (run !== own) {
      throw new ApiError(
        'FORBIDDEN',
        `a run token for run ${own} may use only its run's keys ("${own}:step:<n>", or "${own}:<name>" with no ":" in the name), not ${key.slice(0, 200)}${run === null ? '' : `: that key is run ${run.slice(0, 200)}'s`}`,
      );
    }
    const committed = await store.getCommitted(key);
    const claim = committed ? undefined : await store.getClaim(key, { claimTtlMs });
    const owner = committed?.runId ?? claim?.runId;
    if (owner && owner !== own) {
      throw new ApiError(
        'FORBIDDEN',
        `a run token for run ${own} may not touch key ${key.slice(0, 200)}: it belongs to another run`,
      );
    }
  }
}
