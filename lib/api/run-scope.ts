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
 *
 * A run token also ends with its run: once the run is completed, failed, cancelled or rejected, every protocol
 * call but `end` (a client stopping for a cancel says so) is 403. And what it writes is bounded by what its
 * run then holds, keys and bytes (WAYBILL_RUN_TOKEN_MAX_KEYS, WAYBILL_RUN_TOKEN_MAX_BYTES): 413 past either.
 */
import type { Principal } from '../auth/principal';
import { keyRun } from '../checkpoint/keys';
import { config } from '../config';
import { ApiError } from '../errors';
import type { Store } from '../store/contract';
import { FINISHED_STATUSES } from '../store/shared/sql';

/** What a request names: its run, its keys, and the JSON values it would store (results, inputs, state). */
export interface ScopedRequest {
  runId?: string;
  keys: (string | undefined)[];
  writes?: unknown[];
}

export async function checkRunScope(
  store: Store,
  who: Principal,
  request: ScopedRequest,
  claimTtlMs: number,
): Promise<void> {
  if (who.role !== 'run') return;
  const own = who.runId!;
  if (request.runId !== undefined && request.runId !== own) {
    throw new ApiError('FORBIDDEN', `a run token for run ${own} may not touch run ${request.runId}`);
  }
  const status = (await store.getRun(own))?.status;
  if (status !== undefined && (FINISHED_STATUSES as readonly string[]).includes(status)) {
    throw new ApiError('FORBIDDEN', `run ${own} is ${status}: its run tokens are refused`);
  }
  let newKeys = 0;
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
    if (!owner) newKeys++;
  }
  const bytes = (request.writes ?? []).reduce<number>(
    (sum, value) => sum + (value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value) ?? '')),
    0,
  );
  if (newKeys > 0 || bytes > 0) await checkBounds(store, own, newKeys, bytes);
}

/** The run's keys and bytes after this request, against the bounds a run token writes within. */
async function checkBounds(store: Store, runId: string, newKeys: number, bytes: number): Promise<void> {
  const { WAYBILL_RUN_TOKEN_MAX_KEYS: maxKeys, WAYBILL_RUN_TOKEN_MAX_BYTES: maxBytes } = config();
  const held = await store.runFootprint(runId);
  const n = (x: number) => x.toLocaleString('en-US');
  if (held.keys + newKeys > maxKeys) {
    throw new ApiError(
      'PAYLOAD_TOO_LARGE',
      `run ${runId} holds ${n(held.keys)} keys; a run token may write at most ${n(maxKeys)} (WAYBILL_RUN_TOKEN_MAX_KEYS); nothing was written`,
      undefined,
      { limit: maxKeys },
    );
  }
  if (held.bytes + bytes > maxBytes) {
    throw new ApiError(
      'PAYLOAD_TOO_LARGE',
      `run ${runId} holds ${n(held.bytes)} bytes and this request would add ${n(bytes)}; a run token may write at most ${n(maxBytes)} (WAYBILL_RUN_TOKEN_MAX_BYTES); nothing was written`,
      undefined,
      { limit: maxBytes },
    );
  }
}
