'use client';
/**
 * Subscribe a URL to run events: the URL, the events, and how long a claim may be in doubt before it is told
 * of. The signing secret is shown once, on success, to copy into the receiver. A refused field says why beside
 * itself, and nothing is written.
 */
import { useState, useTransition } from 'react';
import { addWebhookAction, type WebhookForm } from '@/app/actions/webhooks';
import { buttonClass } from '@/app/components/ui';

const EMPTY: WebhookForm = { url: '', events: [], inDoubtSeconds: '' };
const input =
  'w-full rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm dark:border-zinc-600 dark:bg-zinc-950 aria-[invalid=true]:border-red-600';

export function WebhookAddForm({ events }: { events: readonly string[] }) {
  const [pending, start] = useTransition();
  const [form, setForm] = useState<WebhookForm>(EMPTY);
  const [result, setResult] = useState<
    | { ok: true; message: string; secret: string }
    | { ok: false; message: string; errors?: Record<string, string[]> }
    | null
  >(null);
  const error = (field: string) => (result && !result.ok ? result.errors?.[field]?.[0] : undefined);

  function submit(event: React.FormEvent) {
    event.preventDefault();
    start(async () => {
      const outcome = await addWebhookAction(form);
      if (outcome.ok) {
        setResult({ ok: true, message: outcome.message, secret: outcome.data!.secret });
        setForm(EMPTY);
      } else setResult(outcome);
    });
  }

  return (
    <details className="rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <summary data-testid="webhook-add-open" className="cursor-pointer text-sm font-medium">
        Add a webhook
      </summary>
      <form onSubmit={submit} aria-label="Add a webhook" className="mt-4 space-y-3">
        <div className="space-y-1">
          <label htmlFor="webhook-url" className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
            URL
          </label>
          <input
            id="webhook-url"
            data-testid="webhook-field-url"
            value={form.url}
            onChange={(e) => setForm((f) => ({ ...f, url: e.target.value }))}
            placeholder="https://ops.example.com/hooks/waybill"
            maxLength={2000}
            aria-invalid={error('url') !== undefined}
            className={input}
          />
          {error('url') && (
            <p data-testid="webhook-error-url" className="text-xs text-red-700 dark:text-red-400">
              {error('url')}
            </p>
          )}
        </div>
        <fieldset className="space-y-1">
          <legend className="text-xs font-medium text-zinc-700 dark:text-zinc-300">Events</legend>
          <div className="flex flex-wrap gap-x-4 gap-y-1">
            {events.map((name) => (
              <label key={name} className="flex items-center gap-1 font-mono text-xs">
                <input
                  type="checkbox"
                  data-testid={`webhook-event-${name}`}
                  checked={form.events.includes(name)}
                  onChange={(e) =>
                    setForm((f) => ({
                      ...f,
                      events: e.target.checked ? [...f.events, name] : f.events.filter((n) => n !== name),
                    }))
                  }
                />
                {name}
              </label>
            ))}
          </div>
          {error('events') && (
            <p data-testid="webhook-error-events" className="text-xs text-red-700 dark:text-red-400">
              {error('events')}
            </p>
          )}
        </fieldset>
        <div className="space-y-1">
          <label htmlFor="webhook-in-doubt" className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
            Claim in doubt after (seconds)
          </label>
          <input
            id="webhook-in-doubt"
            data-testid="webhook-field-inDoubtSeconds"
            value={form.inDoubtSeconds}
            onChange={(e) => setForm((f) => ({ ...f, inDoubtSeconds: e.target.value }))}
            inputMode="numeric"
            placeholder="300"
            aria-invalid={error('inDoubtSeconds') !== undefined}
            className={`${input} w-32`}
          />
          {error('inDoubtSeconds') && (
            <p data-testid="webhook-error-inDoubtSeconds" className="text-xs text-red-700 dark:text-red-400">
              {error('inDoubtSeconds')}
            </p>
          )}
        </div>
        <div className="flex flex-wrap items-center gap-3">
          <button type="submit" data-testid="webhook-add-submit" disabled={pending} className={buttonClass('primary')}>
            {pending ? 'Adding…' : 'Add webhook'}
          </button>
          {result && (
            <p
              data-testid="webhook-add-message"
              role={result.ok ? 'status' : 'alert'}
              className={`text-sm ${result.ok ? 'text-green-700 dark:text-green-400' : 'text-red-700 dark:text-red-400'}`}
            >
              {result.message}
            </p>
          )}
        </div>
        {result?.ok && (
          <p className="text-sm">
            Its signing secret, shown only now:{' '}
            <code
              data-testid="webhook-add-secret"
              className="break-all rounded bg-zinc-100 px-1 font-mono text-xs dark:bg-zinc-800"
            >
              {result.secret}
            </code>
          </p>
        )}
      </form>
    </details>
  );
}
