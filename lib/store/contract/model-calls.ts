/**
 * Model calls recorded by the gateway (lib/gateway/). A call with an idempotency key is asked upstream once:
 * the first request takes the key's lease and goes; a request that finds the answer stored is given it; one
 * that finds a live lease waits for the answer, and takes the lease over once it has run out (the first
 * gateway died). An upstream that failed leaves nothing behind, so the key can be tried again.
 */
import type { ModelApi, ModelCallRow } from './rows';

export interface ModelCallStart {
  /** Null: recorded for the ledger only, never served again. */
  idemKey: string | null;
  runId: string | null;
  step: number | null;
  api: ModelApi;
  model: string | null;
  fingerprint: string;
  framing: 'json' | 'sse';
  leaseMs: number;
}

export type ModelCallBegin =
  /** Ask the upstream: this lease token fences every write of the answer. */
  | { kind: 'lead'; callId: string; token: string }
  /** The stored answer, to give back as it is. */
  | { kind: 'answered'; call: ModelCallRow }
  /** Another request holds a live lease on the key: wait for its answer (or for the lease to run out). */
  | { kind: 'in_flight'; call: ModelCallRow };

/** What the upstream answered, and what it cost. */
export interface ModelCallAnswer {
  status: number;
  headersJson: string;
  /** Null for a stream: its chunks were appended as they came. */
  body: string | null;
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  costUsd: number | null;
}

/**
 * A model call made without the gateway, reported by its step (lib/gateway/recorded-usage.ts checks and prices
 * it): stored complete, api `recorded`, under a key of the step's attempt (`<step key>:usage:<attempt>:<n>`), so
 * the same report written again counts once.
 */
export interface RecordedModelUsage {
  idemKey: string;
  runId: string;
  step: number | null;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  costUsd: number | null;
}

/** The sums of complete calls of one model (null: the answer named none). */
export interface ModelUsageRow {
  model: string | null;
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  /** USD of the priced calls; `unpriced` counts the others. */
  costUsd: number;
  unpriced: number;
}

export interface ModelCallStore {
  /**
   * The key's state, in one transaction: no row yet (or one whose lease ran out) → `lead`; a stored answer →
   * `answered`; a live lease → `in_flight`. A row under the key with another fingerprint throws
   * IdempotencyKeyReuseError and changes nothing.
   */
  beginModelCall(start: ModelCallStart): Promise<ModelCallBegin>;
  /** Extends the lease; false when it is no longer this token's (taken over): stop writing. */
  renewModelCall(callId: string, token: string, leaseMs: number): Promise<boolean>;
  /** Appends a stream's chunks from `fromSeq` (0-based) if the lease is still this token's. */
  appendModelCallChunks(callId: string, token: string, fromSeq: number, chunks: string[]): Promise<boolean>;
  /** Stores the answer and ends the lease, if it is still this token's. */
  completeModelCall(callId: string, token: string, answer: ModelCallAnswer): Promise<boolean>;
  /** The upstream failed: the row and its chunks go, so the key can be tried again. */
  abandonModelCall(callId: string, token: string): Promise<void>;
  /**
   * Stores a recorded call, complete, in one statement; a recorded call already under the key is overwritten.
   * A gateway call under the key is IdempotencyKeyReuseError, and nothing is written.
   */
  recordModelUsage(usage: RecordedModelUsage): Promise<void>;
  getModelCall(idemKey: string): Promise<ModelCallRow | undefined>;
  /** A streamed answer's chunks, in order. */
  readModelCallChunks(callId: string): Promise<string[]>;
  /** The calls of a run (retired ones included), oldest first: what the ledger sums. */
  listModelCalls(filter: { runId: string }): Promise<ModelCallRow[]>;
  /**
   * The complete calls' sums by model, in one aggregate read, retired calls included (they were paid): every
   * call recorded, or with `workflow` only the calls of that workflow's runs. Models in byte order, null last.
   */
  sumModelCalls(filter: { workflow?: string }): Promise<ModelUsageRow[]>;
}
