'use client';
/** Pause or resume one schedule: the button, and what the action answered. */
import { useState, useTransition } from 'react';
import { setSchedulePausedAction } from '@/app/actions/schedules';
import { buttonClass } from '@/app/components/ui';

export function ScheduleToggle({ name, paused }: { name: string; paused: boolean }) {
  const [pending, start] = useTransition();
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  return (
    <div className="space-y-1">
      <button
        type="button"
        data-testid={`schedule-${paused ? 'resume' : 'pause'}-${name}`}
        disabled={pending}
        className={buttonClass()}
        title={paused ? 'Fire again, from the next tick after now' : 'Fire no tick until resumed'}
        onClick={() =>
          start(async () => {
            const result = await setSchedulePausedAction({ name, paused: !paused });
            setMessage({ ok: result.ok, text: result.message });
          })
        }
      >
        {pending ? (paused ? 'Resuming…' : 'Pausing…') : paused ? 'Resume' : 'Pause'}
      </button>
      {message && !message.ok && (
        <p role="alert" className="text-xs text-red-700 dark:text-red-400">
          {message.text}
        </p>
      )}
    </div>
  );
}
