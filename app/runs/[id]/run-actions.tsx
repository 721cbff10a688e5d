'use client';
/**
 * The run's operator actions: one button per action its status allows (the server decides which), each
 * calling actOnRuns for this run alone. Cancel cannot be undone, so it asks first and takes a reason for the
 * audit log. The message stays in a live region so screen readers hear it.
 */
import { useState, useTransition } from 'react';
import { actOnRuns } from '@/app/actions/runs';
import { ConfirmAction } from '@/app/components/confirm-action';
import { buttonClass } from '@/app/components/ui';
import type { RunAction } from '@/lib/store/contract';

const LABEL: Record<RunAction, string> = { pause: 'Pause', resume: 'Resume', cancel: 'Cancel run', retry: 'Retry' };
const TONE: Record<RunAction, 'primary' | 'default' | 'danger'> = {
  pause: 'default',
  resume: 'primary',
  cancel: 'danger',
  retry: 'primary',
};

export function RunActions({ runId, actions }: { runId: string; actions: RunAction[] }) {
  const [pending, startTransition] = useTransition();
  const [running, setRunning] = useState<RunAction | null>(null);
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);

  function act(action: RunAction) {
    setRunning(action);
    startTransition(async () => {
      const outcome = await actOnRuns({ action, ids: [runId] });
      setResult({ ok: outcome.ok, message: outcome.message });
      setRunning(null);
    });
  }

  return (
    <div className="flex flex-col items-start gap-2 sm:items-end">
      {actions.length > 0 && (
        <div className="flex flex-wrap gap-2" role="group" aria-label="Run actions">
          {actions.map((action) =>
            action === 'cancel' ? (
              <ConfirmAction
                key={action}
                testId="action-cancel"
                label={LABEL.cancel}
                pendingLabel="Cancelling…"
                tone="danger"
                disabled={pending}
                heading={`Cancel run ${runId}?`}
                confirmLabel="Cancel the run"
                onConfirm={async (reason) => {
                  const outcome = await actOnRuns({ action: 'cancel', ids: [runId], reason });
                  setResult({ ok: outcome.ok, message: outcome.message });
                  return outcome;
                }}
              >
                <p>
                  The run stops after the step in hand and is not picked up again. Its committed steps stay; retry
                  queues it again from where it stopped.
                </p>
              </ConfirmAction>
            ) : (
              <button
                key={action}
                type="button"
                data-testid={`action-${action}`}
                disabled={pending}
                onClick={() => act(action)}
                className={buttonClass(TONE[action])}
              >
                {running === action ? `${LABEL[action]}…` : LABEL[action]}
              </button>
            ),
          )}
        </div>
      )}
      <p
        data-testid="action-message"
        role="status"
        className={`text-sm empty:sr-only ${result?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {result?.message}
      </p>
    </div>
  );
}
