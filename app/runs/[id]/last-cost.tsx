'use client';
/**
 * In the rerun and fork dialogs, before the operator confirms: what the steps they would redo cost the last
 * time they ran ("steps 20–39 cost $0.42 and 61k tokens last time"). Read when the dialog opens, through the
 * API's preview (GET /api/v1/runs/:id/rewind-cost, a viewer's read), whose sentence is the CLI's too. A
 * refusal (a step beyond the last) is said here as the server words it; the confirm button stays, and the
 * rewind itself refuses the same way.
 */
import { useEffect, useState } from 'react';

type Shown = { state: 'reading' } | { state: 'ok'; text: string } | { state: 'failed'; text: string };

export function LastCost({ runId, fromStep }: { runId: string; fromStep: number | string }) {
  const [shown, setShown] = useState<Shown>({ state: 'reading' });
  useEffect(() => {
    const aborted = new AbortController();
    const url = `/api/v1/runs/${encodeURIComponent(runId)}/rewind-cost?from=${encodeURIComponent(String(fromStep))}`;
    fetch(url, { signal: aborted.signal, headers: { accept: 'application/json' } })
      .then(async (response) => {
        const body = (await response.json().catch(() => null)) as {
          text?: string;
          error?: { message?: string };
        } | null;
        if (response.ok && typeof body?.text === 'string') setShown({ state: 'ok', text: body.text });
        else
          setShown({ state: 'failed', text: body?.error?.message ?? `could not read the cost (${response.status})` });
      })
      .catch((error: unknown) => {
        if (!aborted.signal.aborted) setShown({ state: 'failed', text: `could not read the cost: ${String(error)}` });
      });
    return () => aborted.abort();
  }, [runId, fromStep]);
  return (
    <p
      data-testid="rewind-last-cost"
      data-state={shown.state}
      aria-live="polite"
      className={`mt-2 rounded-md border px-2 py-1.5 ${shown.state === 'failed' ? 'border-amber-200 bg-amber-50 text-amber-900 dark:border-amber-900 dark:bg-amber-950/40 dark:text-amber-200' : 'border-zinc-200 bg-zinc-50 text-zinc-700 dark:border-zinc-700 dark:bg-zinc-800/60 dark:text-zinc-300'}`}
    >
      {shown.state === 'reading' ? 'Reading what these steps cost last time…' : shown.text}
    </p>
  );
}
