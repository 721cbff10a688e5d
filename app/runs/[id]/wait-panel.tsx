'use client';
/**
 * An open approval on the run page: what the run waits for, its details (the draft to approve), since when,
 * the timeout, and — for an operator — Approve (note optional) and Reject (note asked for). A viewer sees it
 * read-only. The decision goes through decideWait → lib/control/waits, which decides once: a second
 * decision, from this page or anywhere, comes back as "already decided by …".
 */
import { useState, useTransition } from 'react';
import { decideWait } from '@/app/actions/waits';
import { buttonClass } from '@/app/components/ui';

export function WaitDecision({ runId, name }: { runId: string; name: string }) {
  const [pending, startTransition] = useTransition();
  const [note, setNote] = useState('');
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);

  function decide(approve: boolean) {
    if (!approve && note.trim() === '') {
      setResult({ ok: false, message: 'say why in the note: a rejection ends the run with it' });
      return;
    }
    startTransition(async () => {
      const outcome = await decideWait({ runId, name, approve, note });
      setResult({ ok: outcome.ok, message: outcome.message });
    });
  }

  return (
    <div className="mt-3 space-y-2">
      <label className="block text-xs text-zinc-600 dark:text-zinc-400" htmlFor={`note-${name}`}>
        Note (optional to approve, needed to reject)
      </label>
      <textarea
        id={`note-${name}`}
        data-testid="wait-note"
        value={note}
        onChange={(e) => setNote(e.target.value)}
        rows={2}
        maxLength={2000}
        className="w-full rounded-md border border-zinc-300 bg-white p-2 text-sm dark:border-zinc-700 dark:bg-zinc-950"
      />
      <div className="flex gap-2" role="group" aria-label={`Decide ${name}`}>
        <button
          type="button"
          data-testid="wait-approve"
          disabled={pending}
          onClick={() => decide(true)}
          className={buttonClass('primary')}
        >
          {pending ? 'Deciding…' : 'Approve'}
        </button>
        <button
          type="button"
          data-testid="wait-reject"
          disabled={pending}
          onClick={() => decide(false)}
          className={buttonClass('danger')}
        >
          Reject
        </button>
      </div>
      <p
        data-testid="wait-message"
        role="status"
        className={`text-sm empty:sr-only ${result?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {result?.message}
      </p>
    </div>
  );
}
