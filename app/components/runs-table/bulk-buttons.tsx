/**
 * The action buttons, two ways: on every run the filter matches (each confirmed with the count the server gave),
 * or on the selected runs (cancel confirmed, the others at once).
 */
import type { BulkFilter } from '@/lib/control/bulk';
import { ConfirmAction } from '../confirm-action';
import { buttonClass } from '../ui';
import { ACTION_DONE, ACTIONS, filterText } from './bulk-actions';
import type { BulkActions } from './use-bulk-actions';

export function FilterButtons({ bulk, filter }: { bulk: BulkActions; filter: BulkFilter }) {
  const { preview, scope, disabledWhy } = bulk;
  return ACTIONS.map(({ action, label, tone, hint }) => {
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
        onConfirm={(reason) => bulk.bulkConfirmed(action, reason)}
      >
        <p data-testid="confirm-count">
          {n.toLocaleString('en-US')} of the {preview?.matched.toLocaleString('en-US')} runs {scope} can be{' '}
          {ACTION_DONE[action]} now; the others are skipped and listed. The server acts on the runs that match when you
          confirm, in batches, with one audit line each.
        </p>
        <p className="mt-2 font-mono text-xs" data-testid="confirm-filter">
          {filterText(filter)}
        </p>
      </ConfirmAction>
    );
  });
}

export function SelectedButtons({ bulk, chosen }: { bulk: BulkActions; chosen: string[] }) {
  const { disabledWhy } = bulk;
  return ACTIONS.map(({ action, label, tone, hint }) =>
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
        onConfirm={(reason) => bulk.cancelChosen(chosen, reason)}
      >
        <p>Each stops after the step in hand and is not picked up again; runs already finished are left as they are.</p>
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
        onClick={() => bulk.act(action)}
        className={`${buttonClass(tone)} py-1 text-xs`}
      >
        {bulk.running === action ? `${label}…` : label}
      </button>
    ),
  );
}
