/**
 * Protocol requests as the contract tests write them: run `run`, worker `w1`, a minute's lease, a fresh
 * token; each field can be overridden.
 */
import { randomUUID } from 'node:crypto';
import type { ClaimRequest, CommitRequest } from '../../lib/store/contract';

export const claimRequest = (idemKey: string, over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  idemKey,
  runId: 'run',
  token: randomUUID(),
  workerId: 'w1',
  step: 0,
  attempt: 1,
  leaseMs: 60_000,
  claimTtlMs: 60_000,
  ...over,
});

/** The commit of claim `c`: its key, token, run, step and worker, with a small result. */
export const commitRequest = (c: ClaimRequest, over: Partial<CommitRequest> = {}): CommitRequest => ({
  idemKey: c.idemKey,
  token: c.token,
  runId: c.runId,
  resultJson: '"ok"',
  step: c.step,
  fingerprint: null,
  workerId: c.workerId,
  durationMs: 1,
  ...over,
});
