/**
 * A step's retry policy: how many attempts, how long between them, how long one may take, and which errors
 * are worth another attempt. A step's own options win field by field over its workflow's `retry`, which wins
 * over the worker's defaults. The shape follows Temporal's RetryPolicy (initial interval, coefficient, maximum
 * interval, non-retryable error types) with Inngest's escape hatch: a NonRetryableError fails the run at once.
 *
 * Checked when the workflow is defined (and when a step first gives its own), so a policy that cannot work
 * (a factor below 1, a cap below the first wait) is a message naming the field, never a surprise mid-run.
 */
import { z } from 'zod';
import { IdempotencyKeyReuseError, InvalidInputError, LeaseLostError, NonRetryableError } from '../errors';

/** Errors retried or not, by `name` (the class: 'TypeError', 'StepTimeoutError') or `code` ('ECONNRESET', 'MODEL_ERROR'). */
export type ErrorMatcher = string[] | ((error: unknown, attempt: number) => boolean);

export interface RetryPolicy {
  /** Attempts in all, the first included: 1 never retries. Default 3. */
  maxAttempts?: number;
  /** The wait before attempt n+1 is min(maxMs, initialMs × factor^(n-1)). */
  backoff?: {
    /** Default 200. */
    initialMs?: number;
    /** Default 10,000; at least initialMs. */
    maxMs?: number;
    /** Default 2; at least 1 (1: the same wait every time). */
    factor?: number;
    /** Full jitter: each wait drawn from [0, the wait). Default false for a policy given; the worker's own default has it. */
    jitter?: boolean;
  };
  /** An attempt running longer than this is aborted (its signal fires) and counts as failed. Default none. */
  timeoutMs?: number;
  /** Retry only these errors (a list of names or codes, or a predicate); every other error fails the run. */
  retryOn?: ErrorMatcher;
  /** Never retry these errors (names or codes, or a predicate); every other error is retried. */
  nonRetryable?: ErrorMatcher;
}

/** A policy with every field settled: what a step runs under. */
export interface ResolvedRetryPolicy {
  maxAttempts: number;
  backoff: { initialMs: number; maxMs: number; factor: number; jitter: boolean };
  timeoutMs: number | null;
  retryOn: ErrorMatcher | null;
  nonRetryable: ErrorMatcher | null;
}

export const DEFAULT_RETRY: ResolvedRetryPolicy = {
  maxAttempts: 3,
  backoff: { initialMs: 200, maxMs: 10_000, factor: 2, jitter: true },
  timeoutMs: null,
  retryOn: null,
  nonRetryable: null,
};

const matcher = z.union(
  [
    z
      .array(z.string().min(1, 'each entry must be an error name or code'))
      .min(1, 'must list at least one error name or code'),
    z.custom<(error: unknown, attempt: number) => boolean>((v) => typeof v === 'function'),
  ],
  { error: 'must be a list of error names or codes, or a function' },
);

const ms = (what: string) =>
  z.number({ error: `must be a number of milliseconds` }).finite(`must be finite`).min(0, `${what} must be ≥ 0`);

const policySchema = z
  .strictObject(
    {
      maxAttempts: z
        .number({ error: 'must be a whole number' })
        .int('must be a whole number')
        .min(1, 'must be ≥ 1')
        .max(1000, 'must be ≤ 1000')
        .optional(),
      backoff: z
        .strictObject(
          {
            initialMs: ms('initialMs').optional(),
            maxMs: ms('maxMs').optional(),
            factor: z
              .number({ error: 'must be a number' })
              .finite('must be finite')
              .min(1, 'must be ≥ 1')
              .max(100, 'must be ≤ 100')
              .optional(),
            jitter: z.boolean({ error: 'must be true or false' }).optional(),
          },
          {
            error: (issue) =>
              issue.code === 'unrecognized_keys'
                ? `unknown field(s) ${issue.keys.join(', ')} (initialMs, maxMs, factor, jitter)`
                : 'must be an object',
          },
        )
        .optional(),
      timeoutMs: z
        .number({ error: 'must be a number of milliseconds' })
        .int('must be a whole number of milliseconds')
        .min(1, 'must be ≥ 1')
        .max(2 ** 31 - 1, 'must be below 2^31')
        .optional(),
      retryOn: matcher.optional(),
      nonRetryable: matcher.optional(),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown field(s) ${issue.keys.join(', ')} (maxAttempts, backoff, timeoutMs, retryOn, nonRetryable)`
          : 'must be an object',
    },
  )
  .superRefine((p, ctx) => {
    if (p.retryOn !== undefined && p.nonRetryable !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['retryOn'], message: 'give retryOn or nonRetryable, not both' });
    }
    const initial = p.backoff?.initialMs;
    const max = p.backoff?.maxMs;
    if (initial !== undefined && max !== undefined && max < initial) {
      ctx.addIssue({ code: 'custom', path: ['backoff', 'maxMs'], message: `must be ≥ backoff.initialMs (${initial})` });
    }
  });

/** The policy's fields a step's options may carry beside the checkpoint's own. */
export const POLICY_FIELDS = ['maxAttempts', 'backoff', 'timeoutMs', 'retryOn', 'nonRetryable'] as const;

/**
 * Refuses a policy that cannot work, naming the field: `retry.backoff.factor: must be ≥ 1`. `where` prefixes
 * the path (`retry` for a workflow's, `step "charge"` for a step's own).
 */
export function checkRetryPolicy(policy: unknown, where: string, label: string): RetryPolicy {
  const parsed = policySchema.safeParse(policy);
  if (parsed.success) return parsed.data as RetryPolicy;
  const problems = parsed.error.issues.map((issue) => {
    const path = [where, ...issue.path.map(String)].filter(Boolean).join('.');
    return `${path}: ${issue.message}`;
  });
  throw new InvalidInputError(`${label}: ${problems.join('; ')}`);
}

/** Layers policies, the last given winning field by field (backoff too); retryOn and nonRetryable replace each other. */
export function resolvePolicy(base: ResolvedRetryPolicy, ...layers: (RetryPolicy | undefined)[]): ResolvedRetryPolicy {
  let out = base;
  for (const layer of layers) {
    if (!layer) continue;
    const given = layer.backoff;
    // A policy that sets its own backoff means the waits it wrote: no jitter unless it asks.
    const backoff = given ? { ...out.backoff, jitter: false, ...stripUndefined(given) } : out.backoff;
    const matchers =
      layer.retryOn !== undefined
        ? { retryOn: layer.retryOn, nonRetryable: null }
        : layer.nonRetryable !== undefined
          ? { retryOn: null, nonRetryable: layer.nonRetryable }
          : {};
    out = {
      ...out,
      ...(layer.maxAttempts !== undefined ? { maxAttempts: layer.maxAttempts } : {}),
      ...(layer.timeoutMs !== undefined ? { timeoutMs: layer.timeoutMs } : {}),
      backoff,
      ...matchers,
    };
  }
  return out;
}

/**
 * Whether this error deserves another attempt under the policy, attempts aside. Errors retrying cannot fix
 * (a lost lease, a reused key, an abort, a NonRetryableError) are never retried, whatever the policy says.
 */
export function retryableUnder(policy: ResolvedRetryPolicy, error: unknown, attempt: number): boolean {
  if (
    error instanceof LeaseLostError ||
    error instanceof IdempotencyKeyReuseError ||
    error instanceof NonRetryableError
  )
    return false;
  if (error instanceof Error && error.name === 'AbortError') return false;
  if (policy.retryOn) return matches(policy.retryOn, error, attempt);
  if (policy.nonRetryable) return !matches(policy.nonRetryable, error, attempt);
  return true;
}

/** The wait before the attempt after `attempt` (1-based). `random`: a seeded generator (lib/random.ts) in tests. */
export function backoffMs(
  policy: Pick<ResolvedRetryPolicy, 'backoff'>,
  attempt: number,
  random: () => number = Math.random,
): number {
  const { initialMs, maxMs, factor, jitter } = policy.backoff;
  const wait = Math.min(maxMs, initialMs * factor ** (attempt - 1));
  return jitter ? random() * wait : wait;
}

function matches(matcher: ErrorMatcher, error: unknown, attempt: number): boolean {
  if (typeof matcher === 'function') return matcher(error, attempt);
  const name = error instanceof Error ? error.name : undefined;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return matcher.some((m) => m === name || m === code);
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
