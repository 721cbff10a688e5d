'use client';
/** The webhooks page's two buttons: pause or resume a subscription, resend a delivery; and what they answered. */
import { useState, useTransition } from 'react';
import { resendDeliveryAction, setWebhookPausedAction } from '@/app/actions/webhooks';
import { buttonClass } from '@/app/components/ui';

function ActionButton(props: {
  testId: string;
  label: string;
  busy: string;
  title: string;
  run: () => Promise<{ ok: boolean; message: string }>;
}) {
  const [pending, start] = useTransition();
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  return (
    <div className="space-y-1">
      <button
        type="button"
        data-testid={props.testId}
        disabled={pending}
        className={buttonClass()}
        title={props.title}
        onClick={() =>
          start(async () => {
            const result = await props.run();
            setMessage({ ok: result.ok, text: result.message });
          })
        }
      >
        {pending ? props.busy : props.label}
      </button>
      {message && !message.ok && (
        <p role="alert" className="text-xs text-red-700 dark:text-red-400">
          {message.text}
        </p>
      )}
    </div>
  );
}

export function WebhookToggle({ id, paused }: { id: string; paused: boolean }) {
  return (
    <ActionButton
      testId={`webhook-${paused ? 'resume' : 'pause'}-${id}`}
      label={paused ? 'Resume' : 'Pause'}
      busy={paused ? 'Resuming…' : 'Pausing…'}
      title={paused ? 'Send its events again' : 'Write no new events for it; its pending deliveries wait'}
      run={() => setWebhookPausedAction({ id, paused: !paused })}
    />
  );
}

export function ResendButton({ id }: { id: string }) {
  return (
    <ActionButton
      testId={`delivery-resend-${id}`}
      label="Resend"
      busy="Resending…"
      title="Send it again now, under the same id"
      run={() => resendDeliveryAction({ id })}
    />
  );
}
