/** The operator's bar over the runs list: what is selected, "all matching", the actions, and what they did. */
import type { BulkFilter } from '@/lib/control/bulk';
import { RerunControl } from '../bulk-rerun';
import { check } from './bulk-actions';
import { FilterButtons, SelectedButtons } from './bulk-buttons';
import { BulkMessage } from './bulk-message';
import type { BulkActions } from './use-bulk-actions';

export function BulkBar({
  bulk,
  chosen,
  filter,
  filtered,
}: {
  bulk: BulkActions;
  chosen: string[];
  filter: BulkFilter;
  filtered: boolean;
}) {
  const { allMatching, preview, scope, fromStep, pending } = bulk;
  return (
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
            checked={allMatching}
            onChange={(event) => bulk.toggleAllMatching(event.target.checked)}
          />
          All runs {filtered ? 'matching this filter' : 'in the list'}
        </label>
        {allMatching ? <FilterButtons bulk={bulk} filter={filter} /> : <SelectedButtons bulk={bulk} chosen={chosen} />}
        <RerunControl
          step={bulk.rerunStep}
          onStep={bulk.setRerunStep}
          fromStep={fromStep}
          targets={allMatching ? (preview?.applicable.rerun ?? 0) : chosen.length}
          matched={allMatching ? (preview?.matched ?? null) : null}
          scope={scope}
          disabled={fromStep === null || pending || (allMatching ? !preview || preview.tooMany : chosen.length === 0)}
          chosen={chosen}
          onConfirm={(reason) =>
            allMatching ? bulk.bulkConfirmed('rerun', reason, fromStep!) : bulk.rerunChosen(chosen, fromStep!, reason)
          }
        />
      </div>
      {bulk.reasons.length > 0 && (
        <p data-testid="bulk-disabled-reason" className="text-xs text-zinc-600 dark:text-zinc-400">
          {bulk.reasons.join('; ')}
        </p>
      )}
      <BulkMessage message={bulk.message} />
    </div>
  );
}
