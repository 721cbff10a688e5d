/** A recorded model call's row (contract/model-calls.ts RecordedModelUsage), written alike by both backends. */
import type { RecordedModelUsage } from '../contract/model-calls';

/** What a recorded call's fingerprint column holds: no request was sent through the gateway to hash. */
export const RECORDED_FINGERPRINT = 'recorded';

/** The columns a report sets, on insert and on overwrite alike (the row's id and times are the backend's). */
export function recordedValues(usage: RecordedModelUsage) {
  return {
    idemKey: usage.idemKey,
    sentKey: usage.idemKey,
    runId: usage.runId,
    step: usage.step,
    api: 'recorded' as const,
    model: usage.model,
    fingerprint: RECORDED_FINGERPRINT,
    state: 'complete' as const,
    framing: 'json' as const,
    leaseToken: null,
    leaseExpiresAt: null,
    status: null,
    headersJson: null,
    body: null,
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedTokens: usage.cachedTokens,
    costUsd: usage.costUsd,
    retiredAt: null,
  };
}
