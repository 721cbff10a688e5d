/**
 * Every error Waybill raises on purpose. Callers branch on `code`, never on message text, and the
 * HTTP layer maps codes to statuses. Only `transient` errors are worth retrying.
 */
export class WaybillError extends Error {
  readonly code: string;
  readonly transient: boolean;

  constructor(code: string, message: string, options?: { cause?: unknown; transient?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.transient = options?.transient ?? false;
  }
}

/** Our claim was taken over or expired before we committed: the fencing token no longer matches. */
export class LeaseLostError extends WaybillError {
  constructor(readonly idemKey: string, detail = 'the claim is no longer held by this token') {
    super('LEASE_LOST', `lease lost on ${idemKey}: ${detail}; nothing was committed`);
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
  constructor(readonly idemKey: string, waitedMs: number) {
    super('AWAIT_TIMEOUT', `timed out after ${waitedMs} ms awaiting the commit of ${idemKey}`);
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

/**
 * An operator's resolve was refused and nothing was written: the claim's lease is live (`live`: its holder
 * may be executing the side effect now), or the claim is no longer the one the operator decided about
 * (`replaced`: taken over since, by a worker whose side effect may be running).
 */
export class ClaimNotOrphanedError extends WaybillError {
  constructor(readonly idemKey: string, readonly reason: 'live' | 'replaced', detail: string) {
    super('CONFLICT', `not resolved: the claim on ${idemKey} ${detail}; nothing was committed`);
  }
}

/** The run's status does not allow the action asked for. */
export class InvalidTransitionError extends WaybillError {
  constructor(runId: string, action: string, status: string) {
    super('INVALID_TRANSITION', `cannot ${action} run ${runId}: it is ${status}`);
  }
}

/**
 * A library loop stopped before its next step because an operator paused or cancelled its run. The step in
 * hand was finished and committed; nothing after it ran. A paused run continues when it is resumed and the
 * loop is started again; a cancelled one does not.
 */
export class RunStoppedError extends WaybillError {
  constructor(code: 'RUN_PAUSED' | 'RUN_CANCELLED', readonly runId: string, readonly status: 'paused' | 'cancelled') {
    super(code, `run ${runId} is ${status}: the loop stopped before its next step` +
      (status === 'paused' ? '; resume the run, then start the loop again to continue' : ''));
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
  constructor(readonly driver: string, url: string, cause: unknown) {
    super('DRIVER_MISSING', `${url} needs the ${driver} package, which is not installed here: npm install ${driver}`, { cause });
  }
}

/**
 * The store cannot be opened safely by this Waybill, and nothing was changed: it was migrated by a newer
 * Waybill (`STORE_TOO_NEW`: an old worker would write rows the new schema does not expect), or it has
 * Waybill's tables but no readable migration ledger (`STORE_LEDGER_DAMAGED`: migrating it again would fail half-way
 * or treat its rows as the article's).
 */
export class StoreRefusedError extends WaybillError {
  constructor(code: 'STORE_TOO_NEW' | 'STORE_LEDGER_DAMAGED', message: string) {
    super(code, message);
  }
}
