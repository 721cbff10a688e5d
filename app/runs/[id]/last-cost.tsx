'use client';
/**
 * In the rerun and fork dialogs, before the operator confirms: what the steps they would redo cost the last
 * time they ran ("steps 20–39 cost $0.42 and 61k tokens last time"), and in the rerun's the child runs it
 * would let go. Read when the dialog opens, through the API's previews (GET /api/v1/runs/:id/rewind-cost for a
 * fork, /rerun-preview for a rerun: viewers' reads), whose sentences are the CLI's too. A refusal (a step
 * beyond the last, a child still running) is said here as the server words it; the confirm button stays, and
 * the rewind itself refuses the same way.
 */
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { Badge } from '@/app/components/ui';
import type { rerunPreviewView } from '@/lib/control/views';
import { count, counted } from '@/lib/count';

type LetGo = ReturnType<typeof rerunPreviewView>['letGo'];
type Shown =
  | { state: 'reading' }
  | { state: 'ok'; text: string; letGo: LetGo | null }
  | { state: 'failed'; text: string };

export function LastCost({
  runId,
  fromStep,
  rerun = false,
}: {
  runId: string;
  fromStep: number | string;
  rerun?: boolean;
}) {
  const [shown, setShown] = useState<Shown>({ state: 'reading' });
  useEffect(() => {
    const aborted = new AbortController();
    const url = `/api/v1/runs/${encodeURIComponent(runId)}/${rerun ? 'rerun-preview' : 'rewind-cost'}?from=${encodeURIComponent(String(fromStep))}`;
    fetch(url, { signal: aborted.signal, headers: { accept: 'application/json' } })
      .then(async (response) => {
        const body = (await response.json().catch(() => null)) as {
          text?: string;
          lastCost?: { text?: string };
          letGo?: LetGo;
          error?: { message?: string };
        } | null;
        // A rerun's preview holds the cost as lastCost, beside its letGo; the cost preview is the cost itself.
        const text = rerun ? body?.lastCost?.text : body?.text;
        if (response.ok && typeof text === 'string') setShown({ state: 'ok', text, letGo: body?.letGo ?? null });
        else
          setShown({ state: 'failed', text: body?.error?.message ?? `could not read the cost (${response.status})` });
      })
      .catch((error: unknown) => {
        if (!aborted.signal.aborted) setShown({ state: 'failed', text: `could not read the cost: ${String(error)}` });
      });
    return () => aborted.abort();
  }, [runId, fromStep, rerun]);
  return (
    <>
      <p
        data-testid="rewind-last-cost"
        data-state={shown.state}
        aria-live="polite"
        className={`mt-2 rounded-md border px-2 py-1.5 ${shown.state === 'failed' ? 'border-amber-200 bg-amber-50 text-amber-900 dark:border-amber-900 dark:bg-amber-950/40 dark:text-amber-200' : 'border-zinc-200 bg-zinc-50 text-zinc-700 dark:border-zinc-700 dark:bg-zinc-800/60 dark:text-zinc-300'}`}
      >
        {shown.state === 'reading' ? 'Reading what these steps cost last time…' : shown.text}
      </p>
      {shown.state === 'ok' && shown.letGo !== null && shown.letGo.count > 0 && <LetGoList letGo={shown.letGo} />}
    </>
  );
}

/** A dialog's worth: a fan-out parent may let go thousands (`waybill rerun --dry-run --json` lists them all). */
const LISTED = 10;

/** The children the rerun lets go, as the run page's children card shows a child: its link, workflow and status. */
function LetGoList({ letGo }: { letGo: LetGo }) {
  return (
    <div
      data-testid="rerun-let-go"
      data-count={letGo.count}
      className="mt-2 rounded-md border border-zinc-200 bg-zinc-50 px-2 py-1.5 text-zinc-700 dark:border-zinc-700 dark:bg-zinc-800/60 dark:text-zinc-300"
    >
      <p>
        Lets go {counted(letGo.count, 'child run')}, which the steps it moves started: no longer this run&apos;s
        children, and those steps start new ones.
      </p>
      <ul className="mt-1 space-y-0.5">
        {letGo.children.slice(0, LISTED).map((c) => (
          <li key={c.runId} data-testid="rerun-let-go-child" className="flex flex-wrap items-center gap-2">
            <Link
              prefetch={false}
              href={`/runs/${encodeURIComponent(c.runId)}`}
              className="font-mono text-blue-700 hover:underline dark:text-blue-400"
            >
              {c.runId}
            </Link>
            <span className="text-zinc-600 dark:text-zinc-400">{c.workflow}</span>
            <Badge value={c.status} />
          </li>
        ))}
      </ul>
      {letGo.count > LISTED && <p className="mt-1">and {count(letGo.count - LISTED)} more</p>}
    </div>
  );
}
