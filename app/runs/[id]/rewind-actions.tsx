'use client';
/**
 * Rerun or fork the run from a step: choose the step (and, optionally, an edited input), then confirm in the
 * shared dialog with an optional reason. The server refuses what the run does not allow and says why.
 */
import Link from 'next/link';
import { useState } from 'react';
import { forkAction, rerunAction } from '@/app/actions/rewind';
import { ConfirmAction } from '@/app/components/confirm-action';

export function RewindActions({
  runId,
  lastStep,
  rerunnable,
}: {
  runId: string;
  lastStep: number;
  rerunnable: boolean;
}) {
  const [step, setStep] = useState(String(Math.max(0, lastStep)));
  const [input, setInput] = useState('');
  const [result, setResult] = useState<{ ok: boolean; message: string; fork?: string } | null>(null);
  // A number, or a step's name (resolved in the run by the server: the lowest step under that key).
  const given = step.trim();
  const fromStep: number | string | null = given === '' ? null : /^\d{1,15}$/.test(given) ? Number(given) : given;
  const field = 'rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm dark:border-zinc-600 dark:bg-zinc-950';
  return (
    <div data-testid="rewind" className="space-y-2 text-sm">
      <div className="flex flex-wrap items-end gap-2">
        <label className="flex flex-col text-xs">
          From step (number or name)
          <input
            data-testid="rewind-step"
            type="text"
            inputMode="numeric"
            maxLength={512}
            value={step}
            onChange={(e) => setStep(e.target.value)}
            className={`${field} w-24`}
          />
        </label>
        <label className="flex min-w-48 flex-1 flex-col text-xs">
          Edited input (JSON, optional)
          <input
            data-testid="rewind-input"
            type="text"
            value={input}
            onChange={(e) => setInput(e.target.value)}
            placeholder="keep the run's input"
            className={field}
          />
        </label>
        {rerunnable && (
          <ConfirmAction
            testId="action-rerun"
            label="Rerun from step"
            pendingLabel="Rerunning…"
            tone="primary"
            disabled={fromStep === null}
            heading={`Rerun ${runId} from step ${given}?`}
            confirmLabel="Rerun"
            onConfirm={async (reason) => {
              const outcome = await rerunAction({ runId, fromStep: fromStep!, input, reason });
              setResult({
                ok: outcome.ok,
                message:
                  outcome.message +
                  (!outcome.ok && outcome.errors
                    ? `: ${Object.entries(outcome.errors)
                        .map(([k, v]) => `${k} ${v.join(', ')}`)
                        .join('; ')}`
                    : ''),
              });
              return outcome;
            }}
          >
            <p>
              Every committed result from step {step} on moves to the step history (still readable on each step&apos;s
              page), and the run is queued again from there under the same idempotency keys. Steps before it stay
              committed.
            </p>
          </ConfirmAction>
        )}
        <ConfirmAction
          testId="action-fork"
          label="Fork from step"
          pendingLabel="Forking…"
          tone="default"
          disabled={fromStep === null}
          heading={`Fork ${runId} from step ${given}?`}
          confirmLabel="Fork"
          onConfirm={async (reason) => {
            const outcome = await forkAction({ runId, fromStep: fromStep!, input, reason });
            setResult({ ok: outcome.ok, message: outcome.message, fork: outcome.ok ? outcome.data?.id : undefined });
            return outcome;
          }}
        >
          <p>
            A new run: steps before {step} are copied from this one as committed, the rest run anew under the new
            run&apos;s keys. This run is not changed.
          </p>
        </ConfirmAction>
      </div>
      <p
        data-testid="rewind-message"
        role="status"
        className={`empty:sr-only ${result?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {result?.message}
        {result?.fork && (
          <>
            {' '}
            —{' '}
            <Link
              href={`/runs/${encodeURIComponent(result.fork)}`}
              className="text-blue-700 hover:underline dark:text-blue-400"
            >
              open {result.fork}
            </Link>
          </>
        )}
      </p>
    </div>
  );
}
