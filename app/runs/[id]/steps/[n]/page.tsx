/**
 * One step of one run, a permalink: its key, every attempt (times, durations, workers, errors), the result
 * pretty-printed with a copy button, and every earlier result a rerun replaced, with what replaced it. The
 * same view as `waybill step --json` and GET /api/v1/runs/:id/steps/:n (lib/control/steps).
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import { CopyButton } from '@/app/components/copy-button';
import { LiveRefresh } from '@/app/components/live-refresh';
import { Badge, Card, relative } from '@/app/components/ui';
import { requirePage } from '@/lib/auth/server';
import { steps, usage } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { utcText } from '@/lib/data/rates';
import { NotFoundError } from '@/lib/errors';
import { stepAddress } from './address';
import { StepCallsCard } from './step-calls';
import { TranscriptCard } from './transcript';

export const dynamic = 'force-dynamic';

type Props = { params: Promise<{ id: string; n: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const p = await params;
  return { title: `Step ${p.n} of ${p.id}` };
}

const MAX_SHOWN = 200_000;

export default async function StepPage({ params }: Props) {
  const address = stepAddress(await params);
  const who = await requirePage(
    address ? `/runs/${encodeURIComponent(address.runId)}/steps/${encodeURIComponent(address.given)}` : '/',
  );
  // not-found.tsx says which: no such run, no such step, or no step number at all.
  if (!address || address.step === null) notFound();
  const view = await steps
    .read(controlDeps(), callerOf(who, 'dashboard'), { runId: address.runId, step: address.step })
    .catch((error: unknown) => (error instanceof NotFoundError ? null : Promise.reject(error)));
  if (!view) notFound();
  const at = { runId: view.runId, step: view.step };
  const [transcript, calls] = await Promise.all([
    steps.transcript(controlDeps(), callerOf(who, 'dashboard'), at),
    usage.ofStep(controlDeps(), callerOf(who, 'dashboard'), at),
  ]);
  const now = Date.now() / 1000;
  const runHref = `/runs/${encodeURIComponent(view.runId)}`;
  const pretty = (value: unknown) => {
    const text = JSON.stringify(value, null, 2) ?? 'null';
    return text.length > MAX_SHOWN
      ? `${text.slice(0, MAX_SHOWN)}\n… (${(text.length - MAX_SHOWN).toLocaleString('en-US')} more characters: use waybill step --json)`
      : text;
  };
  const term = 'text-zinc-500 dark:text-zinc-400';
  return (
    <div className="space-y-6">
      <header className="space-y-2">
        <nav aria-label="Breadcrumb" className="text-sm text-zinc-600 dark:text-zinc-400">
          <Link prefetch={false} href="/" className="hover:text-zinc-900 dark:hover:text-zinc-100">
            Runs
          </Link>
          <span aria-hidden> / </span>
          <Link
            prefetch={false}
            href={runHref}
            data-testid="step-run-link"
            className="break-all hover:text-zinc-900 dark:hover:text-zinc-100"
          >
            {view.runId}
          </Link>
          <span aria-hidden> / </span>
          <span>step {view.step}</span>
        </nav>
        <div className="flex flex-wrap items-center gap-3">
          <h1 className="text-xl font-semibold tracking-tight">Step {view.step}</h1>
          <Badge value={view.status.replace('_', ' ')} testId="step-status" />
          <LiveRefresh />
        </div>
        <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1 text-sm">
          <dt className={term}>Key</dt>
          <dd data-testid="step-key" className="break-all font-mono">
            {view.key ?? '—'}
          </dd>
          <dt className={term}>Run</dt>
          <dd>
            {view.workflow ?? 'outside client'}
            {view.runStatus ? `, ${view.runStatus}` : ''}
          </dd>
          {view.committed && (
            <>
              <dt className={term}>Committed</dt>
              <dd>
                {utcText(view.committed.committedAt)} by {view.committed.workerId ?? '—'}
                {view.committed.source !== 'executed' &&
                  ` (${view.committed.source}${view.committed.forkedFrom ? ` from ${view.committed.forkedFrom}` : ''})`}
              </dd>
            </>
          )}
        </dl>
      </header>

      <Card title={`Attempts (${view.attempts.length})`} testId="step-attempts">
        {view.attempts.length === 0 ? (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">No attempt recorded yet.</p>
        ) : (
          <table className="w-full text-left text-sm">
            <thead className="text-xs text-zinc-500 dark:text-zinc-400">
              <tr>
                <th className="py-1 pr-3">#</th>
                <th className="pr-3">Attempt</th>
                <th className="pr-3">Outcome</th>
                <th className="pr-3">Started</th>
                <th className="pr-3">Duration</th>
                <th className="pr-3">Worker</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {view.attempts.map((a) => (
                <tr key={a.n} data-testid="step-attempt">
                  <td className="py-1 pr-3 tabular-nums">
                    {a.n}
                    {a.rerun > 0 && <span className={`ml-1 text-xs ${term}`}>(rerun {a.rerun})</span>}
                  </td>
                  <td className="pr-3 tabular-nums" data-testid="attempt-number">
                    {a.attempt === null ? '—' : a.maxAttempts === null ? a.attempt : `${a.attempt} of ${a.maxAttempts}`}
                  </td>
                  <td className="pr-3" data-testid="attempt-outcome">
                    {a.outcome.replace('_', ' ')}
                  </td>
                  <td className="pr-3">
                    <span title={utcText(a.startedAt ?? a.endedAt) ?? ''}>
                      {relative(a.startedAt ?? a.endedAt, now)}
                    </span>
                  </td>
                  <td className="pr-3 tabular-nums">
                    {a.durationMs === null ? '—' : `${Math.round(a.durationMs)} ms`}
                  </td>
                  <td className="break-all pr-3 text-xs">{a.workerId ?? '—'}</td>
                  <td
                    data-testid="attempt-error"
                    className="whitespace-pre-wrap break-words font-mono text-xs text-red-800 dark:text-red-300"
                  >
                    {a.error ?? ''}
                    {a.outcome === 'failed' && a.retryAt !== null && (
                      <span className={`block ${term}`} data-testid="attempt-retry">
                        next attempt due {utcText(a.retryAt)}
                      </span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Card>

      <StepCallsCard usage={calls} />

      <TranscriptCard transcript={transcript} running={view.status === 'in_flight'} />

      <Card
        title="Result"
        testId="step-result"
        actions={
          view.committed ? (
            <CopyButton
              text={JSON.stringify(view.result, null, 2) ?? 'null'}
              label="Copy result"
              testId="copy-result"
            />
          ) : undefined
        }
      >
        {view.committed ? (
          <>
            {view.resultTruncated && (
              <p className="mb-2 text-xs text-orange-800 dark:text-orange-300">{view.resultTruncated}</p>
            )}
            <pre
              data-testid="step-result-json"
              className="max-h-[32rem] overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950"
            >
              {pretty(view.result)}
            </pre>
          </>
        ) : (
          <p className="text-sm text-zinc-600 dark:text-zinc-400">
            Not committed{view.status === 'in_flight' ? ': a worker holds the step now' : ''}.
          </p>
        )}
        <h3 className={`mt-4 text-xs font-medium ${term}`}>Input</h3>
        {view.committed && view.committed.input !== null ? (
          <pre
            data-testid="step-input-json"
            className="mt-1 max-h-64 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950"
          >
            {pretty(view.committed.input)}
          </pre>
        ) : (
          <p className={`mt-1 text-xs ${term}`}>
            Not recorded for this step (ctx.step(name, fn, {'{ input }'}) records one); the run&apos;s input is on the{' '}
            <Link href={runHref} className="text-blue-700 hover:underline dark:text-blue-400">
              run page
            </Link>
            .
          </p>
        )}
        {view.priorProgress && (
          <>
            <h3 className={`mt-4 text-xs font-medium ${term}`}>
              Saved state when reached (progress at step {view.priorProgress.step}: a rerun from here puts it back)
            </h3>
            <pre
              data-testid="step-prior-state"
              className="mt-1 max-h-48 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950"
            >
              {pretty(view.priorProgress.state)}
            </pre>
          </>
        )}
      </Card>

      {view.history.length > 0 && (
        <Card title={`Earlier results (${view.history.length})`} testId="step-history">
          <ol className="space-y-4">
            {view.history.map((h) => (
              <li key={`${h.rerun}-${h.committedAt}`} data-testid="step-history-entry" className="space-y-1">
                <p className="text-sm">
                  Committed {utcText(h.committedAt)} by {h.workerId ?? '—'};{' '}
                  <span data-testid="superseded">
                    superseded by rerun {h.rerun} at {utcText(h.supersededAt)}, by {h.supersededBy}
                  </span>
                  {h.reason && <> — “{h.reason}”</>}
                  {h.replacedBy && (
                    <span className={term}>
                      {h.replacedBy.current
                        ? '; replaced by the result above'
                        : `; replaced by rerun ${h.replacedBy.rerun}'s result`}
                    </span>
                  )}
                </p>
                <pre className="max-h-64 overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950">
                  {pretty(h.result)}
                </pre>
              </li>
            ))}
          </ol>
        </Card>
      )}
    </div>
  );
}
