'use client';
/**
 * A button whose action is asked about first: cancel and expire cannot be undone, and a click that lands on
 * the wrong row must cost nothing. The dialog says what will happen and takes an optional reason, which the
 * server keeps in the audit log. The dialog is in the document only while open, so its test ids are unique.
 */
import { type ReactNode, useEffect, useId, useRef, useState, useTransition } from 'react';
import type { ActionResult } from '@/app/actions/result';
import { buttonClass } from './ui';

export interface ConfirmActionProps {
  /** The trigger's test id; the dialog's parts are `confirm-dialog`, `confirm-reason`, `confirm-submit`, `confirm-cancel`. */
  testId: string;
  label: string;
  pendingLabel: string;
  tone?: 'default' | 'danger' | 'primary';
  triggerClass?: string;
  triggerTitle?: string;
  disabled?: boolean;
  heading: string;
  children: ReactNode;
  confirmLabel: string;
  /** Runs the action; a refusal naming `reason` keeps the dialog open with the message under the field. */
  onConfirm: (reason: string | undefined) => Promise<ActionResult<unknown>>;
}

const REASON_MAX = 500;

export function ConfirmAction(props: ConfirmActionProps) {
  // The props as they were at the click: a live refresh under the open dialog must not change what it does.
  const [open, setOpen] = useState<ConfirmActionProps | null>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  const close = () => {
    setOpen(null);
    trigger.current?.focus();
  };
  return (
    <>
      <button
        ref={trigger}
        type="button"
        data-testid={props.testId}
        aria-haspopup="dialog"
        disabled={props.disabled}
        title={props.triggerTitle}
        onClick={() => setOpen(props)}
        className={props.triggerClass ?? buttonClass(props.tone ?? 'default')}
      >
        {props.label}
      </button>
      {open && <ConfirmDialog {...open} onClose={close} />}
    </>
  );
}

function ConfirmDialog({
  heading,
  children,
  confirmLabel,
  pendingLabel,
  tone,
  onConfirm,
  onClose,
}: ConfirmActionProps & { onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const id = useId();
  const [reason, setReason] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  // Native <dialog> as a modal: focus is trapped, Escape cancels, the page behind is inert.
  useEffect(() => {
    const node = dialog.current;
    if (node && !node.open) node.showModal();
  }, []);

  const confirm = () =>
    startTransition(async () => {
      const result = await onConfirm(reason.trim() || undefined);
      const reasonErrors = !result.ok ? result.errors?.reason : undefined;
      if (reasonErrors?.length) setError(reasonErrors.join('; '));
      else onClose();
    });

  return (
    <dialog
      ref={dialog}
      data-testid="confirm-dialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-body`}
      onCancel={(event) => {
        event.preventDefault();
        if (!pending) onClose();
      }}
      className="m-auto w-[min(30rem,calc(100vw-2rem))] rounded-lg border border-zinc-200 bg-white p-5 text-zinc-900 shadow-xl backdrop:bg-zinc-950/50 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100"
    >
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          confirm();
        }}
      >
        <h2 id={`${id}-title`} className="text-base font-semibold">
          {heading}
        </h2>
        <div id={`${id}-body`} className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
          {children}
        </div>
        <div className="mt-4 space-y-1">
          <label htmlFor={`${id}-reason`} className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Reason{' '}
            <span className="font-normal text-zinc-500 dark:text-zinc-400">(optional, kept in the audit log)</span>
          </label>
          <input
            id={`${id}-reason`}
            data-testid="confirm-reason"
            type="text"
            maxLength={REASON_MAX}
            value={reason}
            onChange={(event) => setReason(event.target.value)}
            placeholder="e.g. wrong input, started twice"
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? `${id}-reason-error` : undefined}
            className="block w-full rounded-md border border-zinc-300 bg-white px-2 py-1.5 text-sm text-zinc-900 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:border-zinc-600 dark:bg-zinc-950 dark:text-zinc-100"
          />
          {error && (
            <p
              id={`${id}-reason-error`}
              data-testid="field-error-reason"
              className="text-xs text-red-700 dark:text-red-300"
            >
              {error}
            </p>
          )}
        </div>
        <div className="mt-5 flex justify-end gap-2">
          {/* Focus starts on the harmless choice: Enter right after the click does not confirm. */}
          <button
            type="button"
            data-testid="confirm-cancel"
            autoFocus
            onClick={onClose}
            disabled={pending}
            className={buttonClass()}
          >
            Keep it
          </button>
          <button
            type="submit"
            data-testid="confirm-submit"
            disabled={pending}
            className={buttonClass(tone ?? 'danger')}
          >
            {pending ? pendingLabel : confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
