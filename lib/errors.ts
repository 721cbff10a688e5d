/**
 * Every error Waybill raises on purpose, in one place. Callers branch on `code`, never on message text; the
 * HTTP layer maps codes to statuses (lib/error-status.ts), the CLI to exit codes (lib/cli/main.ts). Only
 * `transient` errors are worth retrying.
 */

/** Every code a WaybillError may carry. A new condition adds its code here, so the API and CLI see it. */
export type ErrorCode =
  // the step protocol
  | 'LEASE_LOST'
  | 'IDEMPOTENCY_KEY_REUSE'
  | 'AWAIT_TIMEOUT'
  | 'STEP_FAILED'
  | 'STEP_TIMEOUT'
  | 'NON_RETRYABLE'
  // runs
  | 'RUN_PAUSED'
  | 'RUN_CANCELLED'
  | 'RUN_INTERRUPTED'
  | 'CHILD_RUN_FAILED'
  | 'INVALID_TRANSITION'
  // input and configuration
  | 'INVALID_INPUT'
  | 'INVALID_JSON'
  | 'INVALID_CONFIG'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'METHOD_NOT_ALLOWED'
  // answered by lib/launch/http-guard.mjs before a route sees the request
  | 'HEADERS_TOO_LARGE'
  | 'REQUEST_TIMEOUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  // who may
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  // the store
  | 'STORE_UNAVAILABLE'
  | 'STORE_TOO_NEW'
  | 'STORE_LEDGER_DAMAGED'
  | 'STORE_FOREIGN_TABLES'
  | 'STORE_MISSING'
  | 'STORE_BEHIND'
  | 'SCHEMA_NOT_APPLIED'
  | 'DRIVER_MISSING'
  | 'DEPENDENCY_VERSION'
  | 'UNSUPPORTED'
  // the model gateway
  | 'BUDGET_REACHED'
  // built-in workflows and tools
  | 'MODEL_ERROR'
  | 'LOCK_TIMEOUT'
  | 'DRILL_FAILED'
  | 'COMMAND_FAILED';

/** Marks every WaybillError, whichever copy of this module made it (see WaybillError's hasInstance). */
const BRAND = Symbol.for('waybill.error');

export class WaybillError extends Error {
  readonly code: ErrorCode;
  readonly transient: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; transient?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.transient = options?.transient ?? false;
  }

  /**
   * A Next.js build may hold two copies of this module (a page's server chunk and a route's), and a store
   * opened by one throws the other's classes through the shared store: `instanceof WaybillError` holds for
   * both copies' errors, by the brand. A subclass's own instanceof stays the ordinary one.
   */
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: which class is asked (a subclass, or this one) decides the test
    if (this !== WaybillError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && BRAND in value;
  }
}
Object.defineProperty(WaybillError.prototype, BRAND, { value: true });

/** Our claim was taken over or expired before we committed: the fencing token no longer matches. */
export class LeaseLostError extends WaybillError {
  constructor(
    readonly idemKey: string,
    detail = 'the claim is no longer held by this token',
  ) {
    super('LEASE_LOST', `lease lost on ${idemKey}: ${detail}; nothing was committed`);
  }

  /** A claim refused by the run-level fence (ClaimRequest.fence): the run has moved on from this execution. */
  static runFenced(idemKey: string): LeaseLostError {
    return new LeaseLostError(idemKey, "the run is no longer this execution's (rerun, taken over or handed back)");
  }
}

/** The key is committed with a different input fingerprint: the caller reused a key for other work. */
export class IdempotencyKeyReuseError extends WaybillError {
  constructor(
    readonly idemKey: string,
    readonly committedFingerprint: string,
    readonly givenFingerprint: string,
  ) {
    super(
      'IDEMPOTENCY_KEY_REUSE',
      `idempotency key ${idemKey} was committed with fingerprint ${committedFingerprint}, ` +
        `not ${givenFingerprint}: keys must be derived from what is processed`,
    );
  }
}

/** Waiting for another holder's commit took longer than the caller allowed. */
export class AwaitTimeoutError extends WaybillError {
  constructor(
    readonly idemKey: string,
    waitedMs: number,
  ) {
    super('AWAIT_TIMEOUT', `timed out after ${waitedMs} ms awaiting the commit of ${idemKey}`);
  }
}

/**
 * A model call refused before it went upstream: its run's recorded spend has reached its budget, and the run
 * is paused. Raise the budget and resume the run to continue.
 */
export class BudgetReachedError extends WaybillError {
  constructor(
    readonly runId: string,
    readonly spentUsd: number,
    readonly budgetUsd: number,
  ) {
    super(
      'BUDGET_REACHED',
      `run ${runId} has spent $${spentUsd.toFixed(6)} of its $${budgetUsd} budget: the call was not made and the run ` +
        'is paused; raise its budget (waybill budget <runId> <usd>) and resume it to continue',
    );
  }
}

/** A configuration value or argument is invalid; the message names it. */
export class InvalidInputError extends WaybillError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
  }
}

/** The thing asked for does not exist. */
export class NotFoundError extends WaybillError {
  constructor(what: string) {
    super('NOT_FOUND', `${what} not found`);
  }
}

/** The store failed in a way that may succeed on retry (busy database, lost connection, serialization). */
export class StoreUnavailableError extends WaybillError {
  constructor(message: string, cause: unknown) {
    super('STORE_UNAVAILABLE', message, { cause, transient: true });
  }
}

/** Something with that id already exists. */
export class ConflictError extends WaybillError {
  constructor(what: string) {
    super('CONFLICT', `${what} already exists`);
  }
}

/** An event re-sent under its id with another name or data: the first stands, nothing was written. */
export class EventConflictError extends WaybillError {
  constructor(eventId: string, differs: string[]) {
    super('CONFLICT', `event ${eventId} was sent before with another ${differs.join(' and ')}; nothing was written`);
  }
}

/**
 * A start under the id of a run with another workflow or input; the same workflow and input is answered with
 * the run instead (lib/engine/run-exists.ts). Nothing was written.
 */
export class RunExistsError extends WaybillError {
  constructor(
    readonly runId: string,
    readonly difference: string,
  ) {
    super('CONFLICT', `run ${runId} exists with ${difference}`);
  }
}

/**
 * A run claimed a key whose committed row or live claim is another run's: a key is one run's, so its result is
 * not that run's to skip with, nor its claim to wait on. Nothing was written.
 */
export class KeyOfAnotherRunError extends WaybillError {
  constructor(
    readonly idemKey: string,
    readonly runId: string,
    readonly ownerRunId: string,
    held: 'committed' | 'claimed',
  ) {
    super(
      'CONFLICT',
      `key ${idemKey} is ${held} by run ${ownerRunId}, not by run ${runId}: a key belongs to one run; nothing was written`,
    );
  }
}

/**
 * An operator's resolve was refused and nothing was written: the claim's lease is live (`live`: its holder
 * may be executing the side effect now), or the claim is no longer the one the operator decided about
 * (`replaced`: taken over since, by a worker whose side effect may be running).
 */
export class ClaimNotOrphanedError extends WaybillError {
  constructor(
    readonly idemKey: string,
    readonly reason: 'live' | 'replaced',
    detail: string,
  ) {
    super('CONFLICT', `not resolved: the claim on ${idemKey} ${detail}; nothing was committed`);
  }
}

/** The status of a run (or of a schedule or webhook: `what`) does not allow the action asked for. */
export class InvalidTransitionError extends WaybillError {
  constructor(id: string, action: string, status: string, what: 'run' | 'schedule' | 'webhook' = 'run') {
    super('INVALID_TRANSITION', `cannot ${action} ${what} ${id}: it is ${status}`);
  }
}

/**
 * A library loop stopped before its next step because an operator paused or cancelled its run. The step in
 * hand was finished and committed; nothing after it ran. A paused run continues when it is resumed and the
 * loop is started again; a cancelled one does not.
 */
export class RunStoppedError extends WaybillError {
  constructor(
    code: 'RUN_PAUSED' | 'RUN_CANCELLED',
    readonly runId: string,
    readonly status: 'paused' | 'cancelled',
  ) {
    super(
      code,
      `run ${runId} is ${status}: the loop stopped before its next step` +
        (status === 'paused' ? '; resume the run, then start the loop again to continue' : ''),
    );
  }
}

export class RunPausedError extends RunStoppedError {
  constructor(runId: string) {
    super('RUN_PAUSED', runId, 'paused');
  }
}

export class RunCancelledError extends RunStoppedError {
  constructor(runId: string) {
    super('RUN_CANCELLED', runId, 'cancelled');
  }
}

/**
 * The database driver a store URL needs is not installed: a project that uses one backend installs only its
 * driver, and the other is loaded only when a URL asks for it.
 */
export class DriverMissingError extends WaybillError {
  constructor(
    readonly driver: string,
    url: string,
    cause: unknown,
    /** What `npm install` is given: the driver, with the major version Waybill's range allows where it names one. */
    install: string = driver,
  ) {
    super('DRIVER_MISSING', `${url} needs the ${driver} package, which is not installed here: npm install ${install}`, {
      cause,
    });
  }
}

/**
 * A package the project installs for Waybill (a peer dependency: zod) is a major version Waybill cannot run
 * on. Raised as the package loads, before anything uses it, so the message names the fix instead of the
 * TypeError deep inside the other package that would come first.
 */
export class DependencyVersionError extends WaybillError {
  constructor(message: string) {
    super('DEPENDENCY_VERSION', message);
  }
}

/**
 * The store cannot be opened safely by this Waybill, and nothing was changed: it was migrated by a newer
 * Waybill (`STORE_TOO_NEW`: an old worker would write rows the new schema does not expect), or it has
 * Waybill's tables but no readable migration ledger (`STORE_LEDGER_DAMAGED`: migrating it again would fail half-way
 * or treat its rows as the article's), or tables of another application share Waybill's names there
 * (`STORE_FOREIGN_TABLES`), or the schema asked for is not the one its connections see (`SCHEMA_NOT_APPLIED`: a
 * pooler dropped the search_path startup option, and the tables would land elsewhere). Opened without migrating
 * (a read-only command, WAYBILL_MIGRATE=off), a store also is refused when there is none (`STORE_MISSING`) or it
 * is behind this Waybill (`STORE_BEHIND`): `waybill migrate` creates or upgrades it.
 */
export class StoreRefusedError extends WaybillError {
  constructor(
    code:
      | 'STORE_TOO_NEW'
      | 'STORE_LEDGER_DAMAGED'
      | 'STORE_FOREIGN_TABLES'
      | 'STORE_MISSING'
      | 'STORE_BEHIND'
      | 'SCHEMA_NOT_APPLIED',
    message: string,
  ) {
    super(code, message);
  }
}

/** A configuration value (an environment variable) is invalid; the message names it. Exit 2 for the CLI. */
export class ConfigError extends WaybillError {
  constructor(message: string) {
    super('INVALID_CONFIG', message);
  }
}

/** A CLI flag or argument is wrong; the message names it, nothing was opened. Exit 2. */
export class UsageError extends WaybillError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
  }
}

/** Field name → what is wrong with it, in the operation's own names (`key`, `reason`, `input.count`). */
export type FieldErrors = Record<string, string[]>;

/**
 * Input that does not fit, nothing changed. The API answers `fields` as they are, the dashboard shows them
 * beside its form fields, and the CLI says them as its flags (`--reason`).
 */
export class ControlInputError extends WaybillError {
  constructor(
    message: string,
    readonly fields: FieldErrors,
  ) {
    super('INVALID_INPUT', message);
  }

  static of(fields: FieldErrors): ControlInputError {
    const [name, messages] = Object.entries(fields)[0] ?? ['input', ['is invalid']];
    return new ControlInputError(`${name}: ${messages[0]}`, fields);
  }
}

/**
 * A start refused for its workflow or its input: `input` by the workflow's schema, `limit-key` by the key one of its
 * limits reads from the input (lib/domain/run-limits.ts). `issues` for callers that word them their own way.
 */
export class StartRefusedError extends ControlInputError {
  constructor(
    readonly workflow: string,
    readonly kind: 'unknown-workflow' | 'input' | 'limit-key',
    message: string,
    fields: FieldErrors,
    readonly issues: { path: PropertyKey[]; message: string }[] = [],
  ) {
    super(message, fields);
  }
}

/** The caller's role does not allow the operation. Nothing was read or written. */
export class ForbiddenError extends WaybillError {
  constructor(
    readonly role: 'viewer' | 'operator' | 'local' | 'run',
    readonly need: 'viewer' | 'operator' | 'local',
  ) {
    super('FORBIDDEN', `the ${role} role may not do this: it needs ${need}`);
  }
}

/** A claim whose lease is live: its worker may be executing it right now. */
export class LiveClaimError extends WaybillError {
  /** `force`: how the caller's channel says it (`send "force": true`, `--force`), or null where it cannot. */
  constructor(
    readonly key: string,
    verb: string,
    force: string | null,
  ) {
    super(
      'CONFLICT',
      `the claim on ${key} has a live lease (its holder may be executing it): ${verb} only claims whose side effect is in doubt${force ? `, or ${force}` : ''}`,
    );
  }
}

/** A refusal raised inside lib/api (bad body, bad query): carries its own field errors and extra answer fields. */
export class ApiError extends WaybillError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly fields?: FieldErrors,
    readonly extra?: Record<string, unknown>,
  ) {
    super(code, message);
  }
}

/** A step failed every attempt its policy allowed. */
export class StepFailedError extends WaybillError {
  constructor(
    readonly idemKey: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      'STEP_FAILED',
      `step ${idemKey} failed after ${attempts} attempt(s): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/**
 * Thrown by a side effect that knows retrying cannot help (a refused card, a 4xx that will stay a 4xx): the
 * step is not retried, whatever its policy, and the run fails at once with this message.
 */
export class NonRetryableError extends WaybillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NON_RETRYABLE', message, options);
    this.name = 'NonRetryableError';
  }
}

/** A step ran past its policy's timeoutMs: its signal was aborted and the attempt counts as failed. */
export class StepTimeoutError extends WaybillError {
  constructor(
    readonly idemKey: string,
    readonly timeoutMs: number,
  ) {
    super('STEP_TIMEOUT', `step ${idemKey} timed out after ${timeoutMs} ms`);
    this.name = 'StepTimeoutError';
  }
}

/** Why a run stopped without finishing: it was paused, cancelled or taken over, or the worker drains. */
export class RunInterruptedError extends WaybillError {
  constructor(
    runId: string,
    readonly reason: string,
  ) {
    super('RUN_INTERRUPTED', `run ${runId} interrupted: ${reason}`);
  }
}

/** A workflow module that cannot be served (exit 2): the message starts with the file as the user gave it. */
export class WorkflowModuleError extends WaybillError {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super('INVALID_INPUT', `${file}: ${problem}`);
  }
}

/** A failed model call. `status` is the HTTP status when the endpoint answered. */
export class ModelError extends WaybillError {
  constructor(
    message: string,
    readonly status: number | null,
    transient: boolean,
    cause?: unknown,
  ) {
    super('MODEL_ERROR', message, { transient, cause });
  }
}

/** A file lock still held by a live process after the wait allowed (transient: the run context retries). */
export class LockTimeoutError extends WaybillError {
  constructor(path: string, owner: number | null, waitedMs: number) {
    super('LOCK_TIMEOUT', `lock ${path} still held by live pid ${owner ?? '?'} after ${waitedMs} ms`, {
      transient: true,
    });
  }
}

/** The program failed (or could not start) on every attempt; or the worker cannot run programs at all. */
export class CommandFailedError extends WaybillError {
  constructor(message: string) {
    super('COMMAND_FAILED', message);
  }
}

export type RewindRefusal = 'no-run' | 'status' | 'step' | 'live-claims' | 'foreign-keys' | 'id-taken';

/**
 * A rerun or fork refused with nothing changed (lib/store/shared/rewind.ts decides, in its transaction). Its code is
 * the nearest existing one: INVALID_TRANSITION for a status that does not allow it (running: pause it first),
 * INVALID_INPUT for a step beyond the run's last, CONFLICT for a live claim, an outside client's run (no
 * workflow to run it again), keys that do not embed the run id, or a fork id already taken.
 */
export class RewindRefusedError extends WaybillError {
  constructor(
    readonly kind: RewindRefusal,
    message: string,
  ) {
    super(
      kind === 'status' ? 'INVALID_TRANSITION' : kind === 'step' ? 'INVALID_INPUT' : 'CONFLICT',
      `${message}; nothing was changed`,
    );
  }
}

/** A wait was already decided (or is being decided by someone else this instant): the first decision stands. */
export class WaitDecidedError extends WaybillError {
  constructor(
    readonly runId: string,
    readonly name: string,
    readonly decidedBy: string | null,
  ) {
    super(
      'CONFLICT',
      `wait ${name} of run ${runId} was already decided${decidedBy ? ` by ${decidedBy}` : ''}; nothing was changed`,
    );
  }
}

/**
 * A signal sent ahead would add a wait to a run that holds as many as it may (WAYBILL_MAX_WAITS_PER_RUN):
 * without a bound, signals nobody waits for grow the run, and its page, without end.
 */
export class WaitLimitError extends WaybillError {
  constructor(
    readonly runId: string,
    readonly name: string,
    readonly limit: number,
  ) {
    super(
      'PAYLOAD_TOO_LARGE',
      `run ${runId} holds ${limit.toLocaleString('en-US')} waits, the most a run may hold ` +
        `(WAYBILL_MAX_WAITS_PER_RUN); signal ${name} was not sent; nothing was written`,
    );
  }
}

/**
 * Thrown inside a run by ctx.waitForApproval/waitForSignal/sleep once the run is parked: the worker lets it go
 * as after a clean stop (no failure, no finish). A workflow must not catch it; the wait resumes the run later.
 */
export class RunParkedError extends WaybillError {
  constructor(
    readonly runId: string,
    readonly waitName: string,
  ) {
    super('RUN_INTERRUPTED', `run ${runId} is waiting on ${waitName}`);
  }
}

/** A child run the parent waited for ended other than completed (ctx.waitForChild without `settled`). */
export class ChildRunFailedError extends WaybillError {
  constructor(readonly outcome: { runId: string; status: string; error: string | null }) {
    super(
      'CHILD_RUN_FAILED',
      `child run ${outcome.runId} ${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}`,
    );
  }
}

/** A workflow ends its run as `rejected` (an approval said no): an answer, not a failure. */
export class RunRejectedError extends WaybillError {
  constructor(readonly note: string) {
    super('RUN_INTERRUPTED', `rejected: ${note}`);
  }
}
