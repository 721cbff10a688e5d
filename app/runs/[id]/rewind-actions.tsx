'use client';
/**
 * Rerun or fork the run from a step: choose the step (and, optionally, an edited input and the fork's id),
 * then confirm in the shared dialog with an optional reason. The server refuses what the run does not allow
 * and says why, once, beside the fields and the buttons, scrolled into view and focused: the card sits low on
 * the run page, and a message below the fold was a refusal nobody saw. A fork opens the new run. Each dialog
 * says what the steps it would redo cost last time (last-cost.tsx) before the operator confirms, and the rerun's
 * the child runs it would let go. An input over WAYBILL_MAX_BODY_BYTES is refused here, in the action's words,
 * and not sent (app/components/json-limit.ts).
 */
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useEffect, useId, useRef, useState } from 'react';
import type { ActionResult } from '@/app/actions/result';
import { forkAction, rerunAction } from '@/app/actions/rewind';
import { ConfirmAction } from '@/app/components/confirm-action';
import { tooLargeText } from '@/app/components/json-limit';
import { LastCost } from './last-cost';

interface Shown {
  ok: boolean;
  message: string;
  /** Field errors the message does not already say (a refusal names its first one). */
  more: string[];
  /** Which fields the refusal is about, to mark them. */
  fields: string[];
  fork?: string;
}

/** The outcome as the line under the form shows it: each reason once. */
function shown(outcome: ActionResult<{ id: string }>): Shown {
  if (outcome.ok) return { ok: true, message: outcome.message, more: [], fields: [] };
  const errors = Object.entries(outcome.errors ?? {});
  const more = errors
    .flatMap(([field, messages]) => messages.map((m) => `${field}: ${m}`))
    .filter((line) => !outcome.message.includes(line));
  return { ok: false, message: outcome.message, more, fields: errors.map(([field]) => field.split('.')[0]!) };
}

/** The answer the action gives an input past the limit (jsonField, app/actions/result.ts), made before sending it. */
function tooLargeInput(input: string, maxInputBytes: number): ActionResult<never> | null {
  const large = tooLargeText(input, maxInputBytes);
  return large === null ? null : { ok: false, message: 'the input is too large', errors: { input: [large] } };
}

/** A refused reason stays in the dialog, under its field (confirm-action.tsx). */
const reasonRefused = (outcome: ActionResult<unknown>) => !outcome.ok && outcome.errors?.reason !== undefined;

export function RewindActions({
  runId,
  lastStep,
  rerunnable,
  maxInputBytes,
}: {
  runId: string;
  lastStep: number;
  rerunnable: boolean;
  /** WAYBILL_MAX_BODY_BYTES: an input past it is refused here, before a body the server would not read is sent. */
  maxInputBytes: number;
}) {
  const router = useRouter();
  const id = useId();
  const [step, setStep] = useState(String(Math.max(0, lastStep)));
  const [input, setInput] = useState('');
  const [forkId, setForkId] = useState('');
  const [result, setResult] = useState<Shown | null>(null);
  const message = useRef<HTMLDivElement>(null);
  // After the dialog closes (and gives focus back to its button): the answer in view, and read out.
  useEffect(() => {
    if (!result) return;
    message.current?.scrollIntoView({ block: 'nearest' });
    message.current?.focus({ preventScroll: true });
  }, [result]);
  // A number, or a step's name (resolved in the run by the server: the lowest step under that key).
  const given = step.trim();
  const fromStep: number | string | null = given === '' ? null : /^\d{1,15}$/.test(given) ? Number(given) : given;
  const field = 'rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm dark:border-zinc-600 dark:bg-zinc-950';
  const invalid = (name: string) =>
    result?.fields.includes(name) ? { 'aria-invalid': true, 'aria-describedby': `${id}-message` } : {};
  const newId = forkId.trim();
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
            {...invalid('fromStep')}
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
            {...invalid('input')}
          />
        </label>
        <label className="flex w-48 flex-col text-xs">
          Fork&apos;s run id (optional)
          <input
            data-testid="rewind-fork-id"
            type="text"
            maxLength={128}
            value={forkId}
            onChange={(e) => setForkId(e.target.value)}
            placeholder={`${runId.slice(0, 20)}-fork-…`}
            className={field}
            {...invalid('id')}
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
              const outcome =
                tooLargeInput(input, maxInputBytes) ??
                (await rerunAction({ runId, fromStep: fromStep!, input, reason }));
              if (!reasonRefused(outcome)) setResult(shown(outcome));
              return outcome;
            }}
          >
            <p>
              Every committed result from step {step} on moves to the step history (still readable on each step&apos;s
              page), and the run is queued again from there under the same idempotency keys. Steps before it stay
              committed.
            </p>
            <LastCost runId={runId} fromStep={fromStep!} rerun />
          </ConfirmAction>
        )}
        <ConfirmAction
          testId="action-fork"
          label="Fork from step"
          pendingLabel="Forking…"
          tone="default"
          disabled={fromStep === null}
          heading={`Fork ${runId} from step ${given}${newId ? ` as ${newId}` : ''}?`}
          confirmLabel="Fork"
          onConfirm={async (reason) => {
            const outcome =
              tooLargeInput(input, maxInputBytes) ??
              (await forkAction({ runId, fromStep: fromStep!, input, reason, id: newId || undefined }));
            if (reasonRefused(outcome)) return outcome;
            const fork = outcome.ok ? outcome.data?.id : undefined;
            setResult({ ...shown(outcome), fork });
            if (fork) router.push(`/runs/${encodeURIComponent(fork)}`);
            return outcome;
          }}
        >
          <p>
            A new run{newId ? ` named ${newId}` : ''}: steps before {step} are copied from this one as committed, the
            rest run anew under the new run&apos;s keys. This run is not changed. The new run&apos;s page opens.
          </p>
          <LastCost runId={runId} fromStep={fromStep!} />
        </ConfirmAction>
      </div>
      <div
        ref={message}
        id={`${id}-message`}
        data-testid="rewind-message"
        role={result?.ok === false ? 'alert' : 'status'}
        tabIndex={-1}
        className={`scroll-mb-4 rounded outline-none empty:sr-only ${result?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {result && (
          <p>
            {result.message}
            {result.fork && (
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
        )}
        {result?.more.map((line) => (
          <p key={line} data-testid="rewind-field-error">
            {line}
          </p>
        ))}
      </div>
    </div>
  );
}
