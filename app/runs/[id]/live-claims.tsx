'use client';
/**
 * The run's claims, i.e. the side effects in flight, with a lease countdown that ticks every second between
 * refreshes. Times are the store's: the page passes its own clock reading (`serverNow`) so the countdown
 * follows the store's clock, not the browser's, whatever their skew. A passed lease means the side effect is
 * in doubt; the operator expires the claim (the step runs again) or resolves it with a result by hand.
 * A viewer sees the doubt but not the buttons: the server would refuse them. A result over WAYBILL_MAX_BODY_BYTES
 * is refused by the resolve form itself, under the field (app/components/json-limit.ts).
 */
import { type FormEvent, useActionState, useEffect, useState } from 'react';
import { expireClaimAction, resolveClaimAction } from '@/app/actions/claims';
import type { ActionResult } from '@/app/actions/result';
import { ExpireWarning } from '@/app/components/claim-actions';
import { ConfirmAction } from '@/app/components/confirm-action';
import { tooLargeText } from '@/app/components/json-limit';
import { buttonClass } from '@/app/components/ui';

export interface LiveClaim {
  key: string;
  step: number | null;
  workerId: string | null;
  attempt: number;
  claimedAt: number;
  /** leaseExpiresAt, or claimedAt + the claim TTL for an outside client's claim with no lease column. */
  expiresAt: number;
  /** The store's own verdict when the page was rendered. */
  orphaned: boolean;
}

/** The store's clock as seen from here: its reading at render time, advanced by the browser's clock since. */
function useStoreClock(serverNow: number): number {
  const [now, setNow] = useState(serverNow);
  useEffect(() => {
    const skew = serverNow - Date.now() / 1000;
    setNow(Date.now() / 1000 + skew);
    const timer = setInterval(() => setNow(Date.now() / 1000 + skew), 1000);
    return () => clearInterval(timer);
  }, [serverNow]);
  return now;
}

export function LiveClaims({
  claims,
  serverNow,
  operator,
  maxResultBytes,
}: {
  claims: LiveClaim[];
  serverNow: number;
  operator: boolean;
  /** WAYBILL_MAX_BODY_BYTES: a result past it is refused here, before a body the server would not read is sent. */
  maxResultBytes: number;
}) {
  const now = useStoreClock(serverNow);
  if (claims.length === 0) {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400">No step in flight: nothing is claimed right now.</p>;
  }
  return (
    <ul className="space-y-3">
      {claims.map((claim) => (
        <ClaimItem key={claim.key} claim={claim} now={now} operator={operator} maxResultBytes={maxResultBytes} />
      ))}
    </ul>
  );
}

function ClaimItem({
  claim,
  now,
  operator,
  maxResultBytes,
}: {
  claim: LiveClaim;
  now: number;
  operator: boolean;
  maxResultBytes: number;
}) {
  const left = claim.expiresAt - now;
  const passed = claim.orphaned || left <= 0;
  return (
    <li
      data-testid="claim-item"
      data-orphaned={passed}
      className={`rounded-md border p-3 ${passed ? 'border-orange-300 bg-orange-50 dark:border-orange-900 dark:bg-orange-950/40' : 'border-zinc-200 dark:border-zinc-800'}`}
    >
      <div className="break-all font-mono text-sm" data-testid="claim-key">
        {claim.key}
      </div>
      <dl className="mt-2 grid grid-cols-[auto_1fr] gap-x-3 gap-y-1 text-xs">
        <dt className="text-zinc-500 dark:text-zinc-400">Worker</dt>
        <dd className="break-all">{claim.workerId ?? 'unknown'}</dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Attempt</dt>
        <dd className="tabular-nums">
          {claim.attempt}
          {claim.step !== null && <span className="text-zinc-500 dark:text-zinc-400"> · step {claim.step}</span>}
        </dd>
        <dt className="text-zinc-500 dark:text-zinc-400">Lease</dt>
        <dd
          data-testid="claim-countdown"
          className={`font-medium tabular-nums ${passed ? 'text-orange-800 dark:text-orange-300' : ''}`}
        >
          {passed ? 'lease passed — side effect in doubt' : `${formatLeft(left)} left`}
        </dd>
      </dl>
      {passed &&
        (operator ? (
          <DoubtActions claimKey={claim.key} attempt={claim.attempt} maxResultBytes={maxResultBytes} />
        ) : (
          <p className="mt-3 text-xs text-zinc-700 dark:text-zinc-300">
            Its worker stopped renewing the lease: whether the side effect happened is unknown. An operator can expire
            or resolve it.
          </p>
        ))}
    </li>
  );
}

function DoubtActions({
  claimKey,
  attempt,
  maxResultBytes,
}: {
  claimKey: string;
  attempt: number;
  maxResultBytes: number;
}) {
  const [message, setMessage] = useState<{ ok: boolean; message: string } | null>(null);
  const [resolving, setResolving] = useState(false);

  return (
    <div className="mt-3 space-y-2">
      <p className="text-xs text-zinc-700 dark:text-zinc-300">
        Its worker stopped renewing the lease: whether the side effect happened is unknown. Expire it to run the step
        again, or resolve it with the result you know it produced.
      </p>
      <div className="flex flex-wrap gap-2">
        <ConfirmAction
          testId="claim-expire"
          label="Expire"
          pendingLabel="Expiring…"
          tone="danger"
          heading="Expire this claim?"
          confirmLabel="Expire: run the step again"
          onConfirm={async (reason) => {
            const result = await expireClaimAction({ key: claimKey, reason });
            if (result.ok || !result.errors?.reason) setMessage({ ok: result.ok, message: result.message });
            return result;
          }}
        >
          <ExpireWarning idemKey={claimKey} />
        </ConfirmAction>
        <button
          type="button"
          data-testid="claim-resolve"
          aria-expanded={resolving}
          onClick={() => setResolving((v) => !v)}
          className={buttonClass()}
        >
          {resolving ? 'Close resolve form' : 'Resolve…'}
        </button>
      </div>
      <p
        role="status"
        data-testid="claim-message"
        className={`text-xs empty:sr-only ${message?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {message?.message}
      </p>
      {resolving && <ResolveForm claimKey={claimKey} attempt={attempt} maxResultBytes={maxResultBytes} />}
    </div>
  );
}

function ResolveForm({
  claimKey,
  attempt,
  maxResultBytes,
}: {
  claimKey: string;
  attempt: number;
  maxResultBytes: number;
}) {
  const [state, formAction, pending] = useActionState<ActionResult | null, FormData>(resolveClaimAction, null);
  // Controlled, so that a refused submission keeps what the operator typed (React resets uncontrolled forms).
  const [result, setResult] = useState('');
  const [note, setNote] = useState('');
  // Fixed when the form opens: the page refreshes under it, and a takeover must not retarget the decision.
  const [seenAttempt] = useState(attempt);
  // A result refused here, shown in place of the last answer's errors; cleared by the next send.
  const [refused, setRefused] = useState<string | null>(null);
  const answered = state && !state.ok && refused === null ? state : null;
  const resultErrors = refused !== null ? [refused] : answered?.errors?.result;
  const noteErrors = answered?.errors?.note;
  const id = `resolve-${claimKey.replace(/[^a-zA-Z0-9_-]/g, '_')}`;

  // Prevented, React does not call the action: nothing is sent, and the text stays.
  const submit = (event: FormEvent<HTMLFormElement>) => {
    const large = tooLargeText(result, maxResultBytes);
    setRefused(large);
    if (large !== null) event.preventDefault();
  };

  return (
    <form
      action={formAction}
      onSubmit={submit}
      className="space-y-2 rounded-md border border-zinc-200 bg-white p-3 dark:border-zinc-800 dark:bg-zinc-900"
    >
      <input type="hidden" name="key" value={claimKey} />
      {/* The claim this operator is deciding about: if a worker takes it over meanwhile, the store refuses. */}
      <input type="hidden" name="attempt" value={seenAttempt} />
      <div>
        <label htmlFor={`${id}-result`} className="block text-xs font-medium">
          Result (JSON)
        </label>
        <textarea
          id={`${id}-result`}
          name="result"
          data-testid="resolve-result"
          aria-required
          rows={4}
          value={result}
          onChange={(e) => setResult(e.target.value)}
          placeholder='{"ok": true}'
          aria-invalid={resultErrors ? true : undefined}
          aria-describedby={resultErrors ? `${id}-result-error` : undefined}
          className="mt-1 block w-full rounded-md border border-zinc-300 bg-white px-2 py-1.5 font-mono text-xs focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
        />
        {resultErrors && (
          <p
            id={`${id}-result-error`}
            data-testid="field-error-result"
            className="mt-1 text-xs text-red-700 dark:text-red-400"
          >
            {resultErrors.join('; ')}
          </p>
        )}
      </div>
      <div>
        <label htmlFor={`${id}-note`} className="block text-xs font-medium">
          Note <span className="font-normal text-zinc-500 dark:text-zinc-400">(optional, kept in the timeline)</span>
        </label>
        <input
          id={`${id}-note`}
          name="note"
          data-testid="resolve-note"
          maxLength={2000}
          value={note}
          onChange={(e) => setNote(e.target.value)}
          aria-invalid={noteErrors ? true : undefined}
          className="mt-1 block w-full rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-xs focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
        />
        {noteErrors && (
          <p data-testid="field-error-note" className="mt-1 text-xs text-red-700 dark:text-red-400">
            {noteErrors.join('; ')}
          </p>
        )}
      </div>
      <div className="flex flex-wrap items-center gap-3">
        <button type="submit" data-testid="resolve-submit" disabled={pending} className={buttonClass('primary')}>
          {pending ? 'Committing…' : 'Commit this result'}
        </button>
        <p
          role="status"
          data-testid="resolve-message"
          className={`text-xs ${answered ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
        >
          {refused === null && state?.message}
        </p>
      </div>
    </form>
  );
}

function formatLeft(seconds: number): string {
  const s = Math.ceil(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}
