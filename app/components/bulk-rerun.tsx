'use client';
/**
 * The runs list's "Rerun from step" (runs-table.tsx holds the selection and the "all matching" count).
 */
import type { ActionResult } from '@/app/actions/result';
import { ConfirmAction } from './confirm-action';
import { buttonClass } from './ui';

/**
 * "Rerun from step": the step (a number or a step's name) and the confirmation, which says how many runs it
 * applies to and that the others are skipped with their reason. The count of "all matching" is the server's,
 * by status and (for a number) by each run's last step; a name is resolved in each run when it is done.
 */
export function RerunControl({
  step,
  onStep,
  fromStep,
  targets,
  matched,
  scope,
  disabled,
  chosen,
  onConfirm,
}: {
  step: string;
  onStep: (step: string) => void;
  fromStep: number | string | null;
  targets: number;
  /** All matching: how many the filter matched; null for the page's selection. */
  matched: number | null;
  scope: string;
  disabled: boolean;
  chosen: string[];
  onConfirm: (reason: string | undefined) => Promise<ActionResult<unknown>>;
}) {
  const which = typeof fromStep === 'number' ? `step ${fromStep}` : `step “${fromStep ?? ''}”`;
  const runs = (n: number) => `${n.toLocaleString('en-US')} run${n === 1 ? '' : 's'}`;
  return (
    <span className="inline-flex items-center gap-1">
      <input
        data-testid="bulk-rerun-step"
        aria-label="Step to rerun from: a number or a step name"
        placeholder="step # or name"
        value={step}
        onChange={(event) => onStep(event.target.value)}
        maxLength={512}
        className="w-28 rounded-md border border-zinc-300 bg-white px-2 py-1 text-xs dark:border-zinc-600 dark:bg-zinc-950"
      />
      <ConfirmAction
        testId="bulk-rerun"
        label="Rerun from step"
        pendingLabel="Rerunning…"
        tone="default"
        triggerClass={`${buttonClass('default')} py-1 text-xs`}
        triggerTitle={`Rerun from a step: every committed result from it on moves to history, and the run is queued again (${matched === null ? 'the selected runs' : `every run ${scope}`})`}
        disabled={disabled || targets === 0}
        heading={
          matched === null
            ? `Rerun ${runs(targets)} from ${which}?`
            : `Rerun ${targets.toLocaleString('en-US')} of the ${matched.toLocaleString('en-US')} runs ${scope} from ${which}?`
        }
        confirmLabel={`Rerun ${runs(targets)}`}
        onConfirm={onConfirm}
      >
        <p data-testid="confirm-count">
          {matched === null
            ? `${runs(targets)} selected.`
            : `${targets.toLocaleString('en-US')} of the ${matched.toLocaleString('en-US')} runs ${scope} are completed, failed, cancelled or paused${typeof fromStep === 'number' ? ` and have a step ${fromStep}` : ''}.`}{' '}
          In each, every committed result from {which} on moves to the step history (still readable), its saved state
          goes back to what it was at that step, and the run is queued again. Runs it does not apply to (running, past
          their last step, without that step, outside clients&apos;) are skipped and listed, with one audit line per run
          rerun.
        </p>
        {matched === null && (
          <p className="mt-2 break-all font-mono text-xs" data-testid="confirm-targets">
            {chosen.slice(0, 10).join(', ')}
            {chosen.length > 10 ? `, and ${chosen.length - 10} more` : ''}
          </p>
        )}
      </ConfirmAction>
    </span>
  );
}
