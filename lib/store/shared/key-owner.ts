/**
 * A key is one run's. A claim of run B that finds the key committed or held by run A is refused
 * (KeyOfAnotherRunError): answered as `committed`, B would skip its step with a result A wrote (its side effect
 * never run); as `held`, B would wait on A's lease. Both backends decide the claim, then ask this. A takeover
 * of an orphaned claim is the claimer's, as before: the lease passed, and the claim's run is then the taker's.
 */
import { KeyOfAnotherRunError } from '../../errors';
import type { ClaimOutcome, ClaimRequest } from '../contract/steps';

/** The outcome, or KeyOfAnotherRunError when the key's committed row or live claim is another run's. */
export function ownRunOutcome(r: ClaimRequest, outcome: ClaimOutcome): ClaimOutcome {
  if (outcome.kind === 'committed' && outcome.row.runId !== r.runId)
    throw new KeyOfAnotherRunError(r.idemKey, r.runId, outcome.row.runId, 'committed');
  if (outcome.kind === 'held' && outcome.holder.runId !== r.runId)
    throw new KeyOfAnotherRunError(r.idemKey, r.runId, outcome.holder.runId, 'claimed');
  return outcome;
}

/**
 * A commit's next key as claimed ahead in its transaction: another run's key is no claim ahead (null, so the
 * caller claims it itself and is refused then), and the commit it rides with stands.
 */
export function ownRunNext(r: ClaimRequest, outcome: ClaimOutcome): ClaimOutcome | null {
  try {
    return ownRunOutcome(r, outcome);
  } catch (error) {
    if (error instanceof KeyOfAnotherRunError) return null;
    throw error;
  }
}
