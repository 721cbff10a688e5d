/**
 * The bulk actions' state: on the selected runs still on this page, or, with "all matching" on, on every run the
 * list's filter matches (counted first, then confirmed, then done in batches on the server: lib/control/bulk.ts).
 * What each did is said in one message; why one cannot be done now is said on its button.
 */
import { useEffect, useRef, useState, useTransition } from 'react';
import { actOnRuns, bulkByFilterAction, previewBulkAction } from '@/app/actions/runs';
import type { BulkAction, BulkFilter, BulkPreview } from '@/lib/control/bulk';
import { count as grouped, counted as nounCount } from '@/lib/count';
import type { RunAction } from '@/lib/store/contract';
import { ACTION_DONE, ACTIONS, type Message } from './bulk-actions';
import type { Selection } from './use-selection';

export function useBulkActions(selection: Selection, filter: BulkFilter, filtered: boolean) {
  const { chosen } = selection;
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

  const report = (result: Awaited<ReturnType<typeof actOnRuns>>) => {
    if (result.ok) {
      setMessage({ ok: true, text: result.message, refused: result.data?.refused ?? [] });
      selection.drop(new Set(result.data?.done ?? []));
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
    if (result.ok) selection.clear();
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

  return {
    allMatching: allMatching !== null,
    preview,
    scope,
    message,
    pending,
    running,
    rerunStep,
    setRerunStep,
    fromStep,
    toggleAllMatching,
    act,
    cancelChosen,
    rerunChosen,
    bulkConfirmed,
    disabledWhy,
    reasons,
  };
}

export type BulkActions = ReturnType<typeof useBulkActions>;
