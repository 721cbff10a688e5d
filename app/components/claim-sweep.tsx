'use client';
/**
 * Expire every orphaned claim at once, behind a confirmation: each of their steps runs again, and a side
 * effect that did happen before its holder stopped will happen twice unless its sink honours the key.
 */
import { useRef, useState, useTransition } from 'react';
import { sweepOrphanedAction } from '@/app/actions/claims';
import { useClaimBoard } from './claim-board';
import { buttonClass } from './ui';

export function ClaimSweep({ orphaned }: { orphaned: number }) {
  const board = useClaimBoard();
  const dialog = useRef<HTMLDialogElement>(null);
  const [pending, startSweep] = useTransition();
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<string | null>(null);

  const confirm = () =>
    startSweep(async () => {
      const result = await sweepOrphanedAction({ confirm: true, reason: reason.trim() || undefined });
      const refused = !result.ok ? result.errors?.reason : undefined;
      if (refused?.length) {
        setReasonError(refused.join('; '));
        return;
      }
      board.say(result);
      setReason('');
      setReasonError(null);
      dialog.current?.close();
    });

  return (
    <>
      <button
        type="button"
        data-testid="sweep-all"
        disabled={orphaned === 0}
        aria-haspopup="dialog"
        title={orphaned === 0 ? 'No claim is orphaned' : undefined}
        onClick={() => dialog.current?.showModal()}
        className={buttonClass(orphaned > 0 ? 'danger' : 'default')}
      >
        Sweep all orphaned{orphaned > 0 ? ` (${orphaned})` : ''}
      </button>
      {/* Native <dialog>: showModal traps focus, Escape cancels, focus returns to the button on close. */}
      <dialog
        ref={dialog}
        aria-labelledby="sweep-title"
        aria-describedby="sweep-body"
        className="m-auto w-[min(28rem,calc(100vw-2rem))] rounded-lg border border-zinc-200 bg-white p-5 text-zinc-900 shadow-xl backdrop:bg-zinc-950/50 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100"
      >
        <h2 id="sweep-title" className="text-base font-semibold">
          Expire {orphaned === 1 ? 'the orphaned claim' : `all ${orphaned} orphaned claims`}?
        </h2>
        <p id="sweep-body" className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
          Each step runs again. Where the side effect did happen before its holder stopped, it happens a second time
          unless the receiving system honours the idempotency key. To keep a result you have checked, resolve that claim
          by hand instead.
        </p>
        <div className="mt-4 space-y-1">
          <label htmlFor="sweep-reason" className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Reason{' '}
            <span className="font-normal text-zinc-500 dark:text-zinc-400">(optional, kept in the audit log)</span>
          </label>
          <input
            id="sweep-reason"
            data-testid="sweep-reason"
            type="text"
            maxLength={500}
            value={reason}
            onChange={(event) => setReason(event.target.value)}
            aria-invalid={reasonError ? true : undefined}
            aria-describedby={reasonError ? 'sweep-reason-error' : undefined}
            className="block w-full rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-sm text-zinc-900 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:border-zinc-600 dark:bg-zinc-950 dark:text-zinc-100"
          />
          {reasonError && (
            <p
              id="sweep-reason-error"
              data-testid="field-error-reason"
              className="text-xs text-red-700 dark:text-red-300"
            >
              {reasonError}
            </p>
          )}
        </div>
        <div className="mt-5 flex justify-end gap-2">
          <button
            type="button"
            data-testid="sweep-cancel"
            autoFocus
            onClick={() => dialog.current?.close()}
            className={buttonClass()}
          >
            Cancel
          </button>
          <button
            type="button"
            data-testid="sweep-confirm"
            onClick={confirm}
            disabled={pending}
            className={buttonClass('danger')}
          >
            {pending ? 'Sweeping…' : 'Expire them'}
          </button>
        </div>
      </dialog>
    </>
  );
}
