/**
 * The JSON shapes the API answers with and the CLI's --json prints, made from store rows in one place, so
 * a script reads the same field names either way (`input`, `key`, never `inputJson`, `idemKey`). Stored JSON text is parsed so
 * clients get values, not strings of JSON. Times are epoch seconds, as in the tables. A claim's fencing
 * token is never shown: only the client that claimed holds it.
 */

import { count, counted } from '../count';
import { claimExpiresAt } from '../domain/claim-expiry';
import { MAX_DEPTH, nestingDepth } from '../domain/json-input';
import { lastCostText, type RewindCost } from '../gateway/rewind-cost';
import type {
  AuditEntry,
  ClaimRow,
  CommittedRow,
  LetGoChild,
  ProgressRow,
  RewindOutcome,
  RunLogRow,
  RunRow,
  RunSummary,
  RunTags,
  StepEvent,
} from '../store/contract';
import { runFigures } from './figures';
import type { QueuedReason } from './queued';
import type { RerunPreview } from './rewind';
import { type Stall, stallField } from './stalled';

/**
 * Stored JSON as a value; text an outside client wrote that is not JSON comes back as the string itself.
 * Text nested deeper than the API accepts (an outside client may write anything) comes back as null: the
 * answer is serialized by recursion, which 50,000 levels overflow, and that made the endpoint a 500 for good.
 */
export function jsonValue(text: string | null): unknown {
  if (text === null || nestingDepth(text) > MAX_DEPTH) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `{ <name>Truncated: why }` for a value jsonValue left out because it nests too deep, else nothing. */
export function truncation(name: string, text: string | null): Record<string, string> {
  if (text === null) return {};
  const depth = nestingDepth(text);
  if (depth <= MAX_DEPTH) return {};
  return {
    [`${name}Truncated`]: `nested ${depth.toLocaleString('en-US')} levels deep, more than the ${MAX_DEPTH} the API accepts and answers with: left out here (the stored text is unchanged)`,
  };
}

/**
 * A run's row, or an outside client's run made from its rows (status `idle` or `running`, see lib/store/shared/outside-runs.ts).
 * `stall`: why it is not moving (lib/control/stalled.ts), null when it is, or was not asked. `queuedReason`:
 * what a queued run waits for (queued.ts), null otherwise or not asked.
 */
export function runView(
  row: Omit<RunRow, 'status'> & { status: RunSummary['status'] },
  external = false,
  stall: Stall | null = null,
  queuedReason: QueuedReason | null = null,
) {
  return {
    id: row.id,
    workflow: row.workflow,
    status: row.status,
    input: jsonValue(row.inputJson),
    output: jsonValue(row.outputJson),
    ...truncation('input', row.inputJson),
    ...truncation('output', row.outputJson),
    error: row.error,
    totalSteps: row.totalSteps,
    attempts: row.attempts,
    owner: row.owner,
    leaseExpiresAt: row.leaseExpiresAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    external,
    stall: stallField(stall),
    queuedReason,
    forkedFromRun: row.forkedFromRun,
    forkedAtStep: row.forkedAtStep,
    budgetUsd: row.budgetUsd,
    parentRunId: row.parentRunId,
    detached: row.detached,
    priority: row.priority,
  };
}

/** `figures`: progress, executed, committed… as every view shows them (lib/control/figures.ts). */
export function runSummaryView(
  row: RunSummary & { tags: RunTags },
  stall: Stall | null = null,
  queuedReason: QueuedReason | null = null,
) {
  return {
    id: row.id,
    workflow: row.workflow,
    status: row.status,
    step: row.step,
    totalSteps: row.totalSteps,
    executed: row.executed,
    committed: row.committed,
    skipped: row.skipped,
    awaited: row.awaited,
    figures: runFigures(row),
    orphanedClaims: row.orphanedClaims,
    owner: row.owner,
    error: row.error,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    stall: stallField(stall),
    queuedReason,
    tags: row.tags.tags,
    metadata: row.tags.metadata,
  };
}

export function progressView(row: ProgressRow) {
  return {
    runId: row.runId,
    step: row.step,
    state: jsonValue(row.stateJson),
    ...truncation('state', row.stateJson),
    updatedAt: row.updatedAt,
    counters: { executed: row.executed, skipped: row.skipped, awaited: row.awaited },
    saveMs: row.saveMs,
  };
}

/** A claim an outside client wrote straight into the store: no fencing token, so no lease of its own. */
export const isOutsideClaim = (row: Pick<ClaimRow, 'token'>): boolean => row.token === null;

export function claimView(row: ClaimRow, claimTtlMs: number) {
  return {
    key: row.idemKey,
    runId: row.runId,
    step: row.step,
    attempt: row.attempt,
    workerId: row.workerId,
    claimedAt: row.claimedAt,
    leaseExpiresAt: row.leaseExpiresAt,
    heartbeatAt: row.heartbeatAt,
    expiresAt: claimExpiresAt(row, claimTtlMs),
    orphaned: row.orphaned,
    outsideClient: isOutsideClaim(row),
  };
}

export function committedView(row: CommittedRow) {
  return {
    key: row.idemKey,
    runId: row.runId,
    step: row.step,
    result: jsonValue(row.resultJson),
    ...truncation('result', row.resultJson),
    committedAt: row.committedAt,
    fingerprint: row.fingerprint,
    workerId: row.workerId,
    durationMs: row.durationMs,
    source: row.source,
    forkedFrom: row.forkedFrom,
    input: jsonValue(row.inputJson),
    ...truncation('input', row.inputJson),
  };
}

/** One line of the operators' log, as stored: who (actor, role), what (action), on what (target, runId), detail. */
export function auditView(row: AuditEntry) {
  return {
    id: row.id,
    at: row.at,
    actor: row.actor,
    role: row.role,
    action: row.action,
    target: row.target,
    runId: row.runId,
    detail: row.detail,
  };
}

/** One line of a run's step history. */
export function eventView(row: StepEvent) {
  return {
    id: row.id,
    runId: row.runId,
    key: row.idemKey,
    step: row.step,
    outcome: row.outcome,
    count: row.count,
    durationMs: row.durationMs,
    workerId: row.workerId,
    detail: row.detail,
    at: row.at,
    // Attempts as data (null on older rows, whose detail says it in words).
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    retryAt: row.retryAt,
    previousWorkerId: row.previousWorkerId,
    previousAttempt: row.previousAttempt,
  };
}

/** What the steps a rewind redoes cost the last time they ran, with the sentence the CLI and the dialogs say. */
export function lastCostView(cost: RewindCost) {
  return {
    fromStep: cost.fromStep,
    toStep: cost.toStep,
    calls: cost.calls,
    inputTokens: cost.inputTokens,
    outputTokens: cost.outputTokens,
    cachedTokens: cost.cachedTokens,
    tokens: cost.tokens,
    costUsd: cost.costUsd,
    unpriced: cost.unpriced,
    text: lastCostText(cost),
  };
}

/** How many children the sentence names; a fan-out parent may let go thousands, which the list holds. */
const LET_GO_NAMED = 10;

/**
 * The child runs a rerun lets go, each of them, with the sentence the CLI prints: "lets go 2 child runs:
 * crawl-7:a (fetch, completed), crawl-7:b (fetch, failed)", the first ten named and the rest counted.
 */
export function letGoView(children: LetGoChild[]) {
  const named = children
    .slice(0, LET_GO_NAMED)
    .map((c) => `${c.runId} (${c.workflow}, ${c.status})`)
    .join(', ');
  const more = children.length > LET_GO_NAMED ? `, and ${count(children.length - LET_GO_NAMED)} more` : '';
  return {
    count: children.length,
    children: children.map((c) => ({ runId: c.runId, workflow: c.workflow, status: c.status, step: c.step })),
    text:
      children.length === 0
        ? 'lets go no child runs'
        : `lets go ${counted(children.length, 'child run')}: ${named}${more}`,
  };
}

/** A rerun's preview: the step it resolved to, the last cost of the steps it redoes, and the children it lets go. */
export function rerunPreviewView(preview: RerunPreview) {
  return { fromStep: preview.fromStep, lastCost: lastCostView(preview.lastCost), letGo: letGoView(preview.letGo) };
}

/** What a rerun did: the run, the results moved, which rerun, the step it resolved to, its saved state, and the last cost. */
export function rerunAnswer(outcome: RewindOutcome & { fromStep: number; lastCost: RewindCost }) {
  return {
    run: runView(outcome.run),
    moved: outcome.moved,
    rerun: outcome.rerun,
    fromStep: outcome.fromStep,
    state: outcome.state,
    stateStep: outcome.stateStep,
    lastCost: lastCostView(outcome.lastCost),
  };
}

/** What a fork did: the new run, the results copied, the step it resolved to, its starting state, and the last cost. */
export function forkAnswer(outcome: RewindOutcome & { fromStep: number; lastCost: RewindCost }) {
  return {
    run: runView(outcome.run),
    copied: outcome.moved,
    fromStep: outcome.fromStep,
    state: outcome.state,
    stateStep: outcome.stateStep,
    lastCost: lastCostView(outcome.lastCost),
  };
}

/** What a sweep did: how many it expired and which, and those it left (renewed or taken meanwhile). */
export function sweepView(report: { keys: string[]; skipped: { key: string; why: 'missing' | 'live' }[] }) {
  return { expired: report.keys.length, keys: report.keys, skipped: report.skipped };
}

/** One line of a run's log: what its program printed (stdout, stderr) or its worker noted (worker). */
export function runLogLineView(row: RunLogRow) {
  return {
    seq: row.seq,
    at: row.at,
    stream: row.stream,
    line: row.line,
    workerId: row.workerId,
    attempt: row.attempt,
  };
}
