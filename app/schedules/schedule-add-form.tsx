'use client';
/**
 * Add a schedule at run time: its name, workflow, cron expression, time zone, input and policies. A refused
 * field says why beside itself (lib/control/schedules decides: an unreadable cron, an unknown zone, an input
 * the workflow's schema refuses), and nothing is written. An input over WAYBILL_MAX_BODY_BYTES is refused here,
 * before it is sent (app/components/json-limit.ts).
 */
import { useState, useTransition } from 'react';
import { addScheduleAction, type ScheduleForm } from '@/app/actions/schedules';
import { tooLargeText } from '@/app/components/json-limit';
import { buttonClass } from '@/app/components/ui';

const EMPTY: ScheduleForm = {
  name: '',
  workflow: '',
  cron: '',
  timeZone: 'UTC',
  input: '',
  overlap: 'skip',
  catchUp: 'latest',
  catchUpCap: '10',
};

const input =
  'w-full rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm dark:border-zinc-600 dark:bg-zinc-950 aria-[invalid=true]:border-red-600';

export function ScheduleAddForm({
  workflows,
  maxInputBytes,
}: {
  workflows: string[];
  /** WAYBILL_MAX_BODY_BYTES: an input past it is refused here, before a body the server would not read is sent. */
  maxInputBytes: number;
}) {
  const [pending, start] = useTransition();
  const [form, setForm] = useState<ScheduleForm>(EMPTY);
  const [result, setResult] = useState<{ ok: boolean; message: string; errors?: Record<string, string[]> } | null>(
    null,
  );
  // The input refused here, in place of the last answer's errors; cleared by the next send.
  const [refused, setRefused] = useState<string | null>(null);
  const set = (field: keyof ScheduleForm) => (event: { target: { value: string } }) =>
    setForm((f) => ({ ...f, [field]: event.target.value }));
  const error = (field: keyof ScheduleForm) =>
    refused === null ? result?.errors?.[field]?.[0] : field === 'input' ? refused : undefined;
  const field = (name: keyof ScheduleForm, label: string, control: React.ReactNode, hint?: string) => (
    <div className="space-y-1">
      <label htmlFor={`schedule-${name}`} className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
        {label}
      </label>
      {control}
      {error(name) ? (
        <p data-testid={`schedule-error-${name}`} className="text-xs text-red-700 dark:text-red-400">
          {error(name)}
        </p>
      ) : (
        hint && <p className="text-xs text-zinc-500">{hint}</p>
      )}
    </div>
  );
  const text = (name: keyof ScheduleForm, extra: Record<string, string> = {}) => (
    <input
      id={`schedule-${name}`}
      data-testid={`schedule-field-${name}`}
      value={form[name]}
      onChange={set(name)}
      aria-invalid={error(name) !== undefined}
      className={input}
      {...extra}
    />
  );

  function submit(event: React.FormEvent) {
    event.preventDefault();
    const large = tooLargeText(form.input, maxInputBytes);
    setRefused(large);
    if (large !== null) {
      setResult(null);
      return;
    }
    start(async () => {
      const outcome = await addScheduleAction(form);
      setResult(outcome.ok ? { ok: true, message: outcome.message } : outcome);
      if (outcome.ok) setForm(EMPTY);
    });
  }

  return (
    <details className="rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
      <summary data-testid="schedule-add-open" className="cursor-pointer text-sm font-medium">
        Add a schedule
      </summary>
      <form onSubmit={submit} aria-label="Add a schedule" className="mt-4 grid gap-3 sm:grid-cols-2">
        {field('name', 'Name', text('name', { placeholder: 'nightly-report', maxLength: '200' }))}
        {field(
          'workflow',
          'Workflow',
          <select
            id="schedule-workflow"
            data-testid="schedule-field-workflow"
            value={form.workflow}
            onChange={set('workflow')}
            aria-invalid={error('workflow') !== undefined}
            className={input}
          >
            <option value="">choose a workflow</option>
            {workflows.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>,
        )}
        {field(
          'cron',
          'Cron',
          text('cron', { placeholder: '0 0 2 * * *', maxLength: '200' }),
          'five fields, or six with seconds first',
        )}
        {field('timeZone', 'Time zone', text('timeZone', { placeholder: 'Europe/Berlin', maxLength: '100' }))}
        {field(
          'overlap',
          'Overlap',
          <select
            id="schedule-overlap"
            data-testid="schedule-field-overlap"
            value={form.overlap}
            onChange={set('overlap')}
            className={input}
          >
            <option value="skip">skip a tick while the last run goes on</option>
            <option value="queue">queue it until the last run ends</option>
            <option value="cancel">cancel the last run</option>
          </select>,
        )}
        {field(
          'catchUp',
          'Catch-up after downtime',
          <select
            id="schedule-catchUp"
            data-testid="schedule-field-catchUp"
            value={form.catchUp}
            onChange={set('catchUp')}
            className={input}
          >
            <option value="latest">the latest missed tick</option>
            <option value="none">none</option>
            <option value="all">all, up to the cap</option>
          </select>,
        )}
        {form.catchUp === 'all' && field('catchUpCap', 'Catch-up cap', text('catchUpCap', { inputMode: 'numeric' }))}
        <div className="sm:col-span-2">
          {field(
            'input',
            'Input (JSON)',
            <textarea
              id="schedule-input"
              data-testid="schedule-field-input"
              value={form.input}
              onChange={set('input')}
              rows={3}
              placeholder="{}"
              aria-invalid={error('input') !== undefined}
              className={`${input} font-mono`}
            />,
            "each tick's run gets it, checked against the workflow's schema",
          )}
        </div>
        <div className="flex items-center gap-3 sm:col-span-2">
          <button type="submit" data-testid="schedule-add-submit" disabled={pending} className={buttonClass('primary')}>
            {pending ? 'Adding…' : 'Add schedule'}
          </button>
          {result && (
            <p
              data-testid="schedule-add-message"
              role={result.ok ? 'status' : 'alert'}
              className={`text-sm ${result.ok ? 'text-green-700 dark:text-green-400' : 'text-red-700 dark:text-red-400'}`}
            >
              {result.message}
            </p>
          )}
        </div>
      </form>
    </details>
  );
}
