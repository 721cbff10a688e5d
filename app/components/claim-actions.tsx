'use client';
/**
 * What an operator can do about an orphaned claim: expire it (the step runs again) or resolve it by hand
 * (commit a result they supply, marked manual). Both report into the page's claim message. A result over
 * WAYBILL_MAX_BODY_BYTES is refused by the form itself, beside the field (json-limit.ts).
 */
import { type FormEvent, useActionState, useId, useRef, useState } from 'react';
import { expireClaimAction, resolveClaimAction } from '@/app/actions/claims';
import type { ActionResult } from '@/app/actions/result';
import { useClaimBoard } from './claim-board';
import { ConfirmAction } from './confirm-action';
import { tooLargeText } from './json-limit';
import { buttonClass } from './ui';

export function ClaimActions({ idemKey, attempt }: { idemKey: string; attempt: number }) {
  const board = useClaimBoard();
  const resolveButton = useRef<HTMLButtonElement>(null);
  const formId = useId();
  const open = board.openResolve === idemKey;

  const close = () => {
    board.setOpenResolve(null);
    resolveButton.current?.focus();
  };

  return (
    <div className="space-y-2">
      <div className="flex flex-wrap gap-2">
        <ConfirmAction
          testId={`expire-${idemKey}`}
          label="Expire"
          pendingLabel="Expiring…"
          triggerTitle="Delete the claim: the step runs again"
          heading="Expire this claim?"
          confirmLabel="Expire: run the step again"
          onConfirm={async (reason) => {
            const result = await expireClaimAction({ key: idemKey, reason });
            if (result.ok || !result.errors?.reason) board.say(result);
            return result;
          }}
        >
          <ExpireWarning idemKey={idemKey} />
        </ConfirmAction>
        <button
          type="button"
          ref={resolveButton}
          data-testid={`resolve-${idemKey}`}
          aria-expanded={open}
          aria-controls={open ? formId : undefined}
          onClick={() => board.setOpenResolve(open ? null : idemKey)}
          className={buttonClass()}
          title="Commit a result you supply, marked manual"
        >
          Resolve…
        </button>
      </div>
      {open && <ResolveForm id={formId} idemKey={idemKey} attempt={attempt} onClose={close} />}
    </div>
  );
}

function ResolveForm({
  id,
  idemKey,
  attempt,
  onClose,
}: {
  id: string;
  idemKey: string;
  attempt: number;
  onClose: () => void;
}) {
  const board = useClaimBoard();
  // Controlled, because React resets a form after its action: a typo in the JSON must survive the round trip.
  const [result, setResult] = useState('');
  const [note, setNote] = useState('');
  // Fixed when the form opens: the page refreshes under it, and a takeover must not retarget the decision.
  const [seenAttempt] = useState(attempt);
  // The claim's row goes away with the refresh a successful resolve triggers, so the message is handed to
  // the board here rather than in an effect that might never run.
  const [state, formAction, pending] = useActionState(async (previous: ActionResult | null, form: FormData) => {
    const outcome = await resolveClaimAction(previous, form);
    board.say(outcome);
    if (outcome.ok) board.setOpenResolve(null);
    return outcome;
  }, null);
  // A result refused here, shown in place of the last answer's errors; cleared by the next send.
  const [refused, setRefused] = useState<string | null>(null);
  const errors = state && !state.ok ? state.errors : undefined;
  const resultError = refused ?? errors?.result?.join('; ');
  const noteError = refused ? undefined : errors?.note?.join('; ');
  const formError =
    state && !state.ok && !resultError && !noteError ? (errors?.key?.join('; ') ?? state.message) : null;

  // Prevented, React does not call the action: nothing is sent, and the text stays.
  const submit = (event: FormEvent<HTMLFormElement>) => {
    const large = tooLargeText(result, board.maxResultBytes);
    setRefused(large);
    if (large !== null) event.preventDefault();
  };

  return (
    <form
      id={id}
      action={formAction}
      onSubmit={submit}
      aria-label={`Resolve ${idemKey} by hand`}
      className="w-72 space-y-3 rounded-md border border-zinc-200 bg-zinc-50 p-3 dark:border-zinc-700 dark:bg-zinc-800/60"
      onKeyDown={(e) => {
        if (e.key === 'Escape') onClose();
      }}
    >
      <input type="hidden" name="key" value={idemKey} />
      {/* The claim this operator is deciding about: if a worker takes it over meanwhile, the store refuses. */}
      <input type="hidden" name="attempt" value={seenAttempt} />
      <div className="space-y-1">
        <label htmlFor={`${id}-result`} className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
          Result (JSON)
        </label>
        <textarea
          id={`${id}-result`}
          name="result"
          data-testid="resolve-result"
          rows={3}
          autoFocus
          aria-required
          spellCheck={false}
          placeholder='{"sent": true}'
          value={result}
          onChange={(e) => setResult(e.target.value)}
          aria-invalid={resultError ? true : undefined}
          aria-describedby={`${id}-result-hint${resultError ? ` ${id}-result-error` : ''}`}
          className={`block w-full rounded-md border bg-white px-2 py-1.5 font-mono text-xs text-zinc-900 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:bg-zinc-900 dark:text-zinc-100 ${
            resultError ? 'border-red-500 dark:border-red-400' : 'border-zinc-300 dark:border-zinc-600'
          }`}
        />
        <p id={`${id}-result-hint`} className="text-xs text-zinc-500 dark:text-zinc-400">
          Committed as the step&apos;s result, marked manual; the step will not run again.
        </p>
        {resultError && (
          <p
            id={`${id}-result-error`}
            data-testid="field-error-result"
            className="text-xs text-red-700 dark:text-red-300"
          >
            {resultError}
          </p>
        )}
      </div>
      <div className="space-y-1">
        <label htmlFor={`${id}-note`} className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
          Note <span className="font-normal text-zinc-500 dark:text-zinc-400">(optional)</span>
        </label>
        <input
          id={`${id}-note`}
          name="note"
          data-testid="resolve-note"
          type="text"
          maxLength={2000}
          value={note}
          onChange={(e) => setNote(e.target.value)}
          placeholder="e.g. checked the provider: it was sent"
          aria-invalid={noteError ? true : undefined}
          aria-describedby={noteError ? `${id}-note-error` : undefined}
          className="block w-full rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-sm text-zinc-900 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:border-zinc-600 dark:bg-zinc-900 dark:text-zinc-100"
        />
        {noteError && (
          <p id={`${id}-note-error`} data-testid="field-error-note" className="text-xs text-red-700 dark:text-red-300">
            {noteError}
          </p>
        )}
      </div>
      {formError && <p className="text-xs text-red-700 dark:text-red-300">{formError}</p>}
      <div className="flex gap-2">
        <button type="submit" data-testid="resolve-submit" disabled={pending} className={buttonClass('primary')}>
          {pending ? 'Committing…' : 'Commit result'}
        </button>
        <button type="button" onClick={onClose} className={buttonClass()}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** What expiring does, said where the operator decides (the claims page and the run page). */
export function ExpireWarning({ idemKey }: { idemKey: string }) {
  return (
    <>
      <p className="break-all font-mono text-xs">{idemKey}</p>
      <p className="mt-2">
        The claim is deleted and the step runs again. If its side effect did happen before the holder stopped, it
        happens a second time unless the receiving system honours the idempotency key. To keep a result you have
        checked, resolve the claim by hand instead.
      </p>
    </>
  );
}
