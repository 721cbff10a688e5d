/** The workflow to start, and what the form knows of it: its words, version, steps, and who serves it. */
import type { StartChoice } from './choice';
import { errorClass, fieldBorder, fieldClass, hintClass, labelClass } from './classes';

export function WorkflowSelect({
  id,
  choices,
  value,
  onChange,
  errors,
}: {
  id: string;
  choices: StartChoice[];
  value: string;
  onChange: (name: string) => void;
  errors: string[];
}) {
  const choice = choices.find((c) => c.name === value);
  return (
    <div>
      <label htmlFor={id} className={labelClass}>
        Workflow
      </label>
      <select
        id={id}
        name="workflow"
        data-testid="start-workflow"
        value={value}
        onChange={(event) => onChange(event.target.value)}
        aria-invalid={errors.length > 0 || undefined}
        aria-describedby={errors.length > 0 ? `${id}-error` : undefined}
        className={`${fieldClass} ${fieldBorder(errors.length > 0)} mt-1.5 h-10 sm:max-w-xs`}
      >
        {choices.map((c) => (
          <option key={c.name} value={c.name}>
            {c.name}
            {c.servedBy.length === 0 ? ' (no live worker)' : ''}
          </option>
        ))}
      </select>
      {errors.length > 0 && (
        <p id={`${id}-error`} data-testid="field-error-workflow" className={errorClass}>
          {errors.join('; ')}
        </p>
      )}
      {choice && <WorkflowFacts choice={choice} />}
    </div>
  );
}
/** What the form knows of the workflow beyond its schema: its words, version, steps, and who serves it. */
export function WorkflowFacts({ choice }: { choice: StartChoice }) {
  return (
    <div className="mt-2 space-y-1 text-sm" data-testid="start-workflow-facts">
      {choice.description && (
        <p className="text-zinc-700 dark:text-zinc-300" data-testid="start-description">
          {choice.description}
        </p>
      )}
      <p className={hintClass}>
        {choice.builtin ? 'built-in demo' : 'published by a worker'}
        {choice.version && (
          <>
            {' '}
            · version <code className="font-mono">{choice.version}</code>
          </>
        )}
        {choice.totalSteps !== null && <> · {choice.totalSteps} steps</>}
        {choice.servedBy.length > 0 && (
          <>
            {' '}
            · served by {choice.servedBy.length} live worker{choice.servedBy.length === 1 ? '' : 's'}
          </>
        )}
      </p>
      {choice.servedBy.length === 0 && (
        <p
          data-testid="start-no-worker"
          className="rounded-md border border-amber-200 bg-amber-50 px-3 py-2 text-amber-900 dark:border-amber-900 dark:bg-amber-950 dark:text-amber-200"
        >
          No live worker serves {choice.name}: a run started now waits until one does (
          <code className="font-mono">npx waybill worker{choice.builtin ? '' : ' --workflows <your module>'}</code>).
        </p>
      )}
    </div>
  );
}
