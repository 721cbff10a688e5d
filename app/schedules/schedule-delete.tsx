'use client';
/** Delete one schedule, asked about first: its runs stay, and a schedule its code declares comes back. */
import { deleteScheduleAction } from '@/app/actions/schedules';
import { ConfirmAction } from '@/app/components/confirm-action';

export function ScheduleDelete({ name, declared }: { name: string; declared: boolean }) {
  return (
    <ConfirmAction
      testId={`schedule-delete-${name}`}
      label="Delete"
      pendingLabel="Deleting…"
      tone="danger"
      heading={`Delete schedule ${name}?`}
      confirmLabel="Delete schedule"
      onConfirm={(reason) => deleteScheduleAction({ name, reason })}
    >
      No tick of it fires after this; the runs it started stay.
      {declared && ' Its workflow declares it in code, so it comes back when a worker serving it next starts.'}
    </ConfirmAction>
  );
}
