'use client';
/**
 * The runs table with row selection and the bulk actions over the selected runs. A client component only for
 * the selection: rows (and their relative times) are computed on the server and refreshed by LiveRefresh,
 * and the selection survives those refreshes. Actions apply to the selected runs still on this page, or,
 * with "all matching" on, to every run the list's filter matches (counted first, then confirmed, then done
 * in batches on the server: lib/control/bulk.ts). "Rerun from step" takes a step number or a step's name,
 * resolved in each run; runs it does not apply to (running, past their last step, outside clients') are
 * skipped and listed with the reason. A viewer gets neither checkboxes nor actions: the server
 * would refuse them, and offering them misleads.
 */
import Link from 'next/link';
import { useEffect, useRef, useState, useTransition } from 'react';
import { actOnRuns, bulkByFilterAction, previewBulkAction } from '@/app/actions/runs';
import type { BulkAction, BulkFilter, BulkPreview } from '@/lib/control/bulk';
import type { RunFigures } from '@/lib/control/figures';
import type { RunAction, RunSummary } from '@/lib/store/types';
import { RerunControl } from './bulk-rerun';
import { ConfirmAction } from './confirm-action';
import { Badge, ProgressBar, buttonClass } from './ui';
import { count as grouped, counted as nounCount } from '@/lib/count';

export interface RunsTableRow extends RunSummary {
  /** "12s ago", computed on the server so the client renders what the server did. */
  updatedLabel: string;
  updatedTitle: string;
  /** What a queued run waits for (lib/control/queued.ts), or null. */
  queuedReason: string | null;
  /** Why it is stalled (lib/control/stalled.ts), or null. */
  stallMessage: string | null;
  /** Its progress, executed, skipped… (lib/control/figures.ts). */
  figures: RunFigures;
}

const ACTIONS: { action: RunAction; label: string; tone: 'default' | 'danger'; hint: string }[] = [
  { action: 'pause', label: 'Pause', tone: 'default', hint: 'Pause queued or running runs' },
  { action: 'resume', label: 'Resume', tone: 'default', hint: 'Queue paused runs again' },
  { action: 'retry', label: 'Retry', tone: 'default', hint: 'Queue failed or cancelled runs again' },
  { action: 'cancel', label: 'Cancel', tone: 'danger', hint: 'Cancel the selected runs' },
];

const ACTION_DONE: Record<RunAction, string> = {
  pause: 'paused',
  resume: 'resumed',
  cancel: 'cancelled',
  retry: 'queued again',
};

function filterText(filter: BulkFilter): string {
  const parts = [
    filter.status && `status ${filter.status}`,
    filter.waiting && `waiting for ${filter.waiting}`,
    filter.workflow && `workflow ${filter.workflow}`,
    filter.q && `search "${filter.q}"`,
  ].filter(Boolean);
  return parts.length ? `filter: ${parts.join(', ')}` : 'no filter: every run';
}

// Short class names from globals.css: fifty rows of utilities were most of the page's HTML.
const th = 'wb-th';
const td = 'wb-td';
const check = 'wb-check';

type Message = { ok: boolean; text: string; refused: string[] };

export function RunsTable({
  rows,
  operator,
  filter,
  filtered,
}: {
  rows: RunsTableRow[];
  operator: boolean;
  filter: BulkFilter;
  filtered: boolean;
}) {
  const [selected, setSelected] = useState<ReadonlySet<string>>(() => new Set());
  /** "All matching" on: the count the server gave for the filter, or null while it counts. */
  const [allMatching, setAllMatching] = useState<{ preview: BulkPreview | null } | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  const [pending, startTransition] = useTransition();
  const [running, setRunning] = useState<RunAction | null>(null);
  /** The step to rerun from, as typed: digits are a number, anything else a step's name. */
  const [rerunStep, setRerunStep] = useState('');
  const stepText = rerunStep.trim();
  const fromStep: number | string | null =
    stepText === '' ? null : /^\d{1,15}$/.test(stepText) ? Number(stepText) : stepText;

  // Only runs still shown count: a run that moved to another page is not acted on unseen.
  const chosen = rows.filter((row) => selected.has(row.id)).map((row) => row.id);
  const allChosen = rows.length > 0 && chosen.length === rows.length;
  const someChosen = chosen.length > 0 && !allChosen;

  const selectAll = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (selectAll.current) selectAll.current.indeterminate = someChosen;
  }, [someChosen]);

  const toggle = (id: string, on: boolean) =>
    setSelected((previous) => {
      const next = new Set(previous);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  const report = (result: Awaited<ReturnType<typeof actOnRuns>>) => {
    if (result.ok) {
      setMessage({ ok: true, text: result.message, refused: result.data?.refused ?? [] });
      const done = new Set(result.data?.done ?? []);
      setSelected((previous) => new Set([...previous].filter((id) => !done.has(id))));
    } else {
      const details = Object.values(result.errors ?? {}).flat();
      setMessage({ ok: false, text: result.message, refused: details });
    }
  };

  const act = (action: RunAction) => {
    if (chosen.length === 0) return;
    setRunning(action);
    startTransition(async () => {
      report(await actOnRuns({ action, ids: chosen }));
      setRunning(null);
    });
  };

  /** The step the last count was made for (a number; null: by status only). */
  const counted = useRef<number | null>(null);
  const count = (step: number | string | null) => {
    counted.current = typeof step === 'number' ? step : null;
    setAllMatching({ preview: null });
    startTransition(async () => {
      const result = await previewBulkAction({ filter, ...(typeof step === 'number' ? { fromStep: step } : {}) });
      if (result.ok && result.data) setAllMatching({ preview: result.data });
      else {
        setAllMatching(null);
        setMessage({ ok: false, text: result.message, refused: [] });
      }
    });
  };
  const toggleAllMatching = (on: boolean) => {
    if (!on) setAllMatching(null);
    else count(fromStep);
  };
  // A rerun's count depends on the step (runs whose last step is before it are skipped): counted again as it changes.
  const countFor = typeof fromStep === 'number' ? fromStep : null;
  useEffect(() => {
    if (!allMatching?.preview || counted.current === countFor) return;
    const timer = setTimeout(() => count(countFor), 300);
    return () => clearTimeout(timer);
  });

  const rerunReport = (result: Awaited<ReturnType<typeof bulkByFilterAction>>) => {
    if (result.ok) {
      const skipped = result.data?.skipped ?? [];
      setMessage({ ok: true, text: result.message, refused: skipped.slice(0, 50).map((s) => `${s.id}: ${s.reason}`) });
    } else if (!result.errors?.reason) {
      setMessage({ ok: false, text: result.message, refused: Object.values(result.errors ?? {}).flat() });
    }
    return result;
  };
  const rerunChosen = async (ids: string[], step: number | string, reason: string | undefined) => {
    const result = rerunReport(await bulkByFilterAction({ action: 'rerun', ids, fromStep: step, reason }));
    if (result.ok) setSelected(new Set());
    return result;
  };

  const bulkConfirmed = async (action: BulkAction, reason: string | undefined, step?: number | string) => {
    const result = await bulkByFilterAction({
      action,
      filter,
      reason,
      ...(step === undefined ? {} : { fromStep: step }),
    });
    if (result.ok) {
      const skipped = result.data?.skipped ?? [];
      setMessage({ ok: true, text: result.message, refused: skipped.slice(0, 50).map((s) => `${s.id}: ${s.reason}`) });
      setAllMatching(null);
    } else if (!result.errors?.reason) {
      setMessage({ ok: false, text: result.message, refused: Object.values(result.errors ?? {}).flat() });
    }
    return result;
  };
  const preview = allMatching?.preview ?? null;
  const scope = filtered ? 'matching this filter' : 'in the list (no filter: every run)';

  // Called with the runs chosen when the dialog opened (ConfirmAction keeps them): a refresh does not retarget it.
  const cancelChosen = async (ids: string[], reason: string | undefined) => {
    const result = await actOnRuns({ action: 'cancel', ids, reason });
    if (result.ok || !result.errors?.reason) report(result);
    return result;
  };

  // Why a bulk action cannot be done now, said on its button (title) and under the buttons: a disabled button
  // with no reason looked like one that did nothing.
  const disabledWhy = (action: RunAction): string | null => {
    if (pending) return 'another action is in progress';
    if (!allMatching) return chosen.length === 0 ? 'select runs first: tick them in the list' : null;
    if (!preview) return 'counting the runs…';
    if (preview.tooMany) return `more than ${grouped(preview.matched - 1)} runs ${scope}: narrow the filter`;
    if ((preview.applicable[action] ?? 0) === 0)
      return `none of the ${nounCount(preview.matched, 'run')} ${scope} can be ${ACTION_DONE[action]} now`;
    return null;
  };
  const reasons = ACTIONS.flatMap(({ action, label }) => {
    const why = disabledWhy(action);
    return why && allMatching && preview ? [`${label}: ${why}`] : [];
  });

  return (
    <div className="space-y-3">
      {operator && (
        <div className="flex flex-col gap-2 sm:flex-row sm:items-center sm:justify-between" data-testid="bulk-actions">
          <div role="group" aria-label="Actions on the selected runs" className="flex flex-wrap items-center gap-2">
            <span
              className="mr-1 w-full text-sm text-zinc-600 tabular-nums sm:w-auto dark:text-zinc-400"
              data-testid="selected-count"
            >
              {allMatching
                ? preview
                  ? `${preview.tooMany ? `more than ${(preview.matched - 1).toLocaleString('en-US')}` : preview.matched.toLocaleString('en-US')} run${preview.matched === 1 ? '' : 's'} ${scope}`
                  : 'Counting the runs…'
                : chosen.length === 0
                  ? 'Select runs to act on them'
                  : `${chosen.length} selected`}
            </span>
            <label className="mr-1 inline-flex items-center gap-1.5 text-xs text-zinc-700 dark:text-zinc-300">
              <input
                type="checkbox"
                data-testid="bulk-all-matching"
                className={check}
                checked={allMatching !== null}
                onChange={(event) => toggleAllMatching(event.target.checked)}
              />
              All runs {filtered ? 'matching this filter' : 'in the list'}
            </label>
            {allMatching
              ? ACTIONS.map(({ action, label, tone, hint }) => {
                  const n = preview?.applicable[action] ?? 0;
                  return (
                    <ConfirmAction
                      key={action}
                      testId={`bulk-${action}`}
                      label={label}
                      pendingLabel={`${label}…`}
                      tone={tone}
                      triggerClass={`${buttonClass(tone)} py-1 text-xs`}
                      triggerTitle={disabledWhy(action) ?? `${hint}: every run ${scope}`}
                      disabled={disabledWhy(action) !== null}
                      heading={`${label} ${n.toLocaleString('en-US')} of the ${preview?.matched.toLocaleString('en-US') ?? ''} runs ${scope}?`}
                      confirmLabel={`${label} ${n.toLocaleString('en-US')} run${n === 1 ? '' : 's'}`}
                      onConfirm={(reason) => bulkConfirmed(action, reason)}
                    >
                      <p data-testid="confirm-count">
                        {n.toLocaleString('en-US')} of the {preview?.matched.toLocaleString('en-US')} runs {scope} can
                        be {ACTION_DONE[action]} now; the others are skipped and listed. The server acts on the runs
                        that match when you confirm, in batches, with one audit line each.
                      </p>
                      <p className="mt-2 font-mono text-xs" data-testid="confirm-filter">
                        {filterText(filter)}
                      </p>
                    </ConfirmAction>
                  );
                })
              : ACTIONS.map(({ action, label, tone, hint }) =>
                  action === 'cancel' ? (
                    <ConfirmAction
                      key={action}
                      testId="bulk-cancel"
                      label={label}
                      pendingLabel="Cancelling…"
                      tone="danger"
                      triggerClass={`${buttonClass(tone)} py-1 text-xs`}
                      triggerTitle={disabledWhy(action) ?? hint}
                      disabled={disabledWhy(action) !== null}
                      heading={chosen.length === 1 ? `Cancel run ${chosen[0]}?` : `Cancel ${chosen.length} runs?`}
                      confirmLabel={chosen.length === 1 ? 'Cancel the run' : `Cancel ${chosen.length} runs`}
                      onConfirm={(reason) => cancelChosen(chosen, reason)}
                    >
                      <p>
                        Each stops after the step in hand and is not picked up again; runs already finished are left as
                        they are.
                      </p>
                      <p className="mt-2 break-all font-mono text-xs" data-testid="confirm-targets">
                        {chosen.slice(0, 10).join(', ')}
                        {chosen.length > 10 ? `, and ${chosen.length - 10} more` : ''}
                      </p>
                    </ConfirmAction>
                  ) : (
                    <button
                      key={action}
                      type="button"
                      data-testid={`bulk-${action}`}
                      title={disabledWhy(action) ?? hint}
                      disabled={disabledWhy(action) !== null}
                      onClick={() => act(action)}
                      className={`${buttonClass(tone)} py-1 text-xs`}
                    >
                      {running === action ? `${label}…` : label}
                    </button>
                  ),
                )}
            <RerunControl
              step={rerunStep}
              onStep={setRerunStep}
              fromStep={fromStep}
              targets={allMatching ? (preview?.applicable.rerun ?? 0) : chosen.length}
              matched={allMatching ? (preview?.matched ?? null) : null}
              scope={scope}
              disabled={
                fromStep === null || pending || (allMatching ? !preview || preview.tooMany : chosen.length === 0)
              }
              chosen={chosen}
              onConfirm={(reason) =>
                allMatching ? bulkConfirmed('rerun', reason, fromStep!) : rerunChosen(chosen, fromStep!, reason)
              }
            />
          </div>
          {reasons.length > 0 && (
            <p data-testid="bulk-disabled-reason" className="text-xs text-zinc-600 dark:text-zinc-400">
              {reasons.join('; ')}
            </p>
          )}
          <div
            role="status"
            data-testid="bulk-message"
            aria-live="polite"
            className={`min-h-5 text-sm ${message?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-700 dark:text-zinc-300'}`}
          >
            {message && (
              <>
                {message.text}
                {message.refused.length > 0 && (
                  <details className="mt-1 text-xs text-zinc-600 dark:text-zinc-400">
                    <summary className="cursor-pointer rounded focus-visible:outline-2 focus-visible:outline-blue-600">
                      Details
                    </summary>
                    <ul className="mt-1 list-disc space-y-0.5 pl-4">
                      {message.refused.map((line) => (
                        <li key={line} className="break-all">
                          {line}
                        </li>
                      ))}
                    </ul>
                  </details>
                )}
              </>
            )}
          </div>
        </div>
      )}

      <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
        <table data-testid="runs-table" className="w-full min-w-[60rem] border-collapse text-sm">
          <caption className="sr-only">Runs, most recent activity first</caption>
          <thead className="border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60">
            <tr>
              {operator && (
                <th scope="col" className="w-10 px-3 py-2">
                  <input
                    ref={selectAll}
                    type="checkbox"
                    data-testid="select-all"
                    aria-label="Select every run on this page"
                    checked={allChosen}
                    onChange={(event) =>
                      setSelected(event.target.checked ? new Set(rows.map((row) => row.id)) : new Set())
                    }
                    className={check}
                  />
                </th>
              )}
              <th scope="col" className={th}>
                Run
              </th>
              <th scope="col" className={th}>
                Status
              </th>
              <th scope="col" className={th}>
                Workflow
              </th>
              <th scope="col" className={th}>
                Progress
              </th>
              <th
                scope="col"
                className={`${th} text-right`}
                title="Steps executed / skipped on replay / awaited from another holder"
              >
                Exec / skip / await
              </th>
              <th scope="col" className={`${th} text-right`}>
                Orphaned
              </th>
              <th scope="col" className={th}>
                Worker
              </th>
              <th scope="col" className={`${th} text-right`}>
                Updated
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {rows.map((run) => {
              const isSelected = selected.has(run.id);
              return (
                <tr
                  key={run.id}
                  data-testid={`run-row-${run.id}`}
                  aria-selected={isSelected}
                  className={isSelected ? 'wb-row-selected' : 'wb-row'}
                >
                  {operator && (
                    <td className={td}>
                      <input
                        type="checkbox"
                        data-testid={`select-${run.id}`}
                        aria-label={`Select run ${run.id}`}
                        checked={isSelected}
                        onChange={(event) => toggle(run.id, event.target.checked)}
                        className={check}
                      />
                    </td>
                  )}
                  <td className={td}>
                    <Link
                      prefetch={false}
                      href={`/runs/${encodeURIComponent(run.id)}`}
                      title={run.id}
                      data-testid={`run-link-${run.id}`}
                      className="wb-run-link"
                    >
                      {run.id}
                    </Link>
                  </td>
                  <td className={td}>
                    <Badge value={run.status} testId={`run-status-${run.id}`} />
                    {run.stallMessage && (
                      <span
                        className="wb-badge wb-tone-orange ml-1"
                        data-testid={`run-stalled-${run.id}`}
                        title={run.stallMessage}
                      >
                        stalled
                      </span>
                    )}
                    {run.stallMessage && run.status !== 'queued' && (
                      <p
                        className="mt-1 max-w-[14rem] text-xs text-amber-800 dark:text-amber-300"
                        data-testid={`run-stall-${run.id}`}
                      >
                        {run.stallMessage}
                      </p>
                    )}
                    {run.queuedReason && (
                      <p
                        className={`mt-1 max-w-[14rem] text-xs ${run.stallMessage ? 'text-amber-800 dark:text-amber-300' : 'wb-dim'}`}
                        data-testid={`run-queued-reason-${run.id}`}
                      >
                        {run.queuedReason}
                      </p>
                    )}
                    {run.error && (
                      <p
                        className="mt-1 max-w-[14rem] truncate text-xs text-red-700 dark:text-red-400"
                        title={run.error}
                      >
                        {run.error}
                      </p>
                    )}
                  </td>
                  <td className={`${td} whitespace-nowrap wb-body`}>{run.workflow}</td>
                  <td className={`${td} w-56`}>
                    <ProgressBar figures={run.figures} label={`Progress of ${run.id}`} />
                  </td>
                  <td
                    className={`${td} whitespace-nowrap text-right tabular-nums wb-body`}
                    title={`executed ${run.figures.executed}, skipped ${run.figures.skipped}, awaited ${run.figures.awaited}`}
                  >
                    {run.figures.executed}
                    <span className="px-1 wb-dim">/</span>
                    {run.figures.skipped}
                    <span className="px-1 wb-dim">/</span>
                    {run.figures.awaited}
                  </td>
                  <td className={`${td} text-right tabular-nums`} data-testid={`run-orphaned-${run.id}`}>
                    {run.orphanedClaims > 0 ? (
                      <span
                        className="wb-badge wb-tone-orange font-semibold"
                        title="Claims whose lease passed: the side effect may or may not have happened"
                      >
                        {run.orphanedClaims}
                      </span>
                    ) : (
                      <span className="wb-dim">0</span>
                    )}
                  </td>
                  <td
                    className={`${td} max-w-[12rem] truncate font-mono text-xs wb-soft`}
                    title={run.owner ?? undefined}
                  >
                    {run.owner ?? <span className="wb-dim">—</span>}
                  </td>
                  <td className={`${td} whitespace-nowrap text-right text-xs tabular-nums wb-soft`}>
                    <time dateTime={run.updatedTitle} title={run.updatedTitle}>
                      {run.updatedLabel}
                    </time>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </div>
  );
}
