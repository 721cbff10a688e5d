'use client';
/** Delete one subscription, asked about first: its deliveries, sent or pending, go with it. */
import { deleteWebhookAction } from '@/app/actions/webhooks';
import { ConfirmAction } from '@/app/components/confirm-action';

export function WebhookDelete({ id, url }: { id: string; url: string }) {
  return (
    <ConfirmAction
      testId={`webhook-delete-${id}`}
      label="Delete"
      pendingLabel="Deleting…"
      tone="danger"
      heading={`Delete webhook ${id}?`}
      confirmLabel="Delete webhook"
      onConfirm={(reason) => deleteWebhookAction({ id, reason })}
    >
      {url} is told of no event after this, and its deliveries, sent or pending, are deleted with it.
    </ConfirmAction>
  );
}
