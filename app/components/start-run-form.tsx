'use client';
/**
 * The start-a-run form. Every field is controlled, and the action is dispatched from onSubmit rather than
 * by the form's action prop: that path makes React reset the form after the action, and a rejected input
 * must stay on screen next to its errors (the action prop remains for a submit before hydration). The server validates (JSON, the workflow's
 * schema, the id); the client only helps: it swaps the example when the workflow changes and the input was
 * not edited, and says early when the text is not JSON.
 *
 * The input has two views of one value: fields drawn from the workflow's published JSON Schema (schema-fields.ts)
 * and the raw JSON below them, which is what is sent. A field edits its key in the JSON; the JSON is the
 * fallback for what no field can draw (nested objects, arrays) and is always there.
 *
 * Over ~300 lines: one controlled form whose two views of the input must stay in step; the schema-drawn fields
 * are schema-fields.ts.
 */
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import {
  startTransition,
  useActionState,
  useEffect,
  useId,
  useMemo,
  useState,
  type FormEvent,
  type ReactNode,
} from 'react';
import { startRunAction } from '@/app/actions/runs';
import type { ActionResult } from '@/app/actions/result';
import { objectOf, schemaFields, shown, withField, type SchemaField } from './schema-fields';
import { buttonClass } from './ui';

export interface StartChoice {
  name: string;
  example: string;
  /** The input's JSON Schema; null when it has none. */
  schema: Record<string, unknown> | null;
  description: string | null;
  version: string | null;
  totalSteps: number | null;
  /** Live workers serving it; none: a run waits for one. */
  servedBy: string[];
  builtin: boolean;
}

const fieldClass =
  'block w-full rounded-md border bg-white px-3 py-2 text-sm text-zinc-900 shadow-sm placeholder:text-zinc-400 focus-visible:outline-2 focus-visible:outline-offset-0 focus-visible:outline-blue-600 dark:bg-zinc-900 dark:text-zinc-100 dark:placeholder:text-zinc-500 dark:scheme-dark';
const fieldBorder = (invalid: boolean) =>
  invalid ? 'border-red-500 dark:border-red-500' : 'border-zinc-300 dark:border-zinc-700';
const labelClass = 'block text-sm font-medium text-zinc-800 dark:text-zinc-200';
const hintClass = 'mt-1 text-xs text-zinc-600 dark:text-zinc-400';
const errorClass = 'mt-1.5 text-sm text-red-700 dark:text-red-400';

/** Which field an error key belongs to: `input` and `input.<path>` to the editor, the rest by name. */
function splitErrors(errors: Record<string, string[]>) {
  const input: { path: string; message: string }[] = [];
  const byField: Record<'workflow' | 'id', string[]> = { workflow: [], id: [] };
  const other: string[] = [];
  for (const [key, messages] of Object.entries(errors)) {
    for (const message of messages) {
      if (key === 'input' || key.startsWith('input.')) input.push({ path: key.slice('input.'.length), message });
      else if (key === 'workflow' || key === 'id') byField[key].push(message);
      else other.push(key ? `${key}: ${message}` : message);
    }
  }
  return { input, workflow: byField.workflow, id: byField.id, other };
}

export function StartRunForm({ choices, initialWorkflow }: { choices: StartChoice[]; initialWorkflow: string }) {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<ActionResult<{ id: string }> | null, FormData>(
    startRunAction,
    null,
  );
  const exampleOf = (name: string) => choices.find((choice) => choice.name === name)?.example ?? '{}';

  const [workflow, setWorkflow] = useState(initialWorkflow);
  const [input, setInput] = useState(() => exampleOf(initialWorkflow));
  const [runId, setRunId] = useState('');
  const choice = choices.find((c) => c.name === workflow);
  const edited = input !== exampleOf(workflow);

  const jsonProblem = useMemo(() => {
    if (input.trim() === '') return null;
    try {
      JSON.parse(input);
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  }, [input]);

  useEffect(() => {
    if (state?.ok && state.data) router.push(`/runs/${encodeURIComponent(state.data.id)}`);
  }, [state, router]);

  const errors = splitErrors(state && !state.ok ? (state.errors ?? {}) : {});
  const ids = { workflow: useId(), input: useId(), id: useId() };
  const fields = useMemo(() => schemaFields(choice?.schema ?? null), [choice]);
  const current = useMemo(() => objectOf(input), [input]);
  // An error shows under the field it names (`input.count`, `input.items.1` → items), and every one is also
  // listed by the JSON, which is what was sent and where a field with no input of its own is edited.
  const fieldOf = (path: string) => path.split('.')[0] ?? '';
  const inputErrors = errors.input;
  const errorsOf = (name: string) => errors.input.filter((e) => fieldOf(e.path) === name);
  const setField = (name: string, value: unknown) => setInput(withField(input, name, value));

  const changeWorkflow = (name: string) => {
    // An input the user has not touched follows the workflow; an edited one is theirs and stays.
    if (!edited || input.trim() === '') setInput(exampleOf(name));
    setWorkflow(name);
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    startTransition(() => formAction(data));
  };

  const format = () => {
    try {
      setInput(JSON.stringify(JSON.parse(input), null, 2));
    } catch {
      // The indicator already says why; formatting text that is not JSON would lose nothing but do nothing.
    }
  };

  return (
    <form
      action={formAction}
      onSubmit={submit}
      noValidate
      data-testid="start-form"
      className="space-y-6 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm sm:p-6 dark:border-zinc-800 dark:bg-zinc-900"
    >
      {state && !state.ok && (
        <div
          role="alert"
          data-testid="start-error"
          className="rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300"
        >
          <p className="font-medium">{state.message}</p>
          {errors.other.length > 0 && (
            <ul className="mt-1 list-disc pl-5">
              {errors.other.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      {state?.ok && (
        <p
          role="status"
          data-testid="start-success"
          className="rounded-md border border-emerald-200 bg-emerald-50 px-3 py-2 text-sm text-emerald-800 dark:border-emerald-900 dark:bg-emerald-950 dark:text-emerald-300"
        >
          {state.message}: opening the run…
        </p>
      )}

      <div>
        <label htmlFor={ids.workflow} className={labelClass}>
          Workflow
        </label>
        <select
          id={ids.workflow}
          name="workflow"
          data-testid="start-workflow"
          value={workflow}
          onChange={(event) => changeWorkflow(event.target.value)}
          aria-invalid={errors.workflow.length > 0 || undefined}
          aria-describedby={errors.workflow.length > 0 ? `${ids.workflow}-error` : undefined}
          className={`${fieldClass} ${fieldBorder(errors.workflow.length > 0)} mt-1.5 h-10 sm:max-w-xs`}
        >
          {choices.map((c) => (
            <option key={c.name} value={c.name}>
              {c.name}
              {c.servedBy.length === 0 ? ' (no live worker)' : ''}
            </option>
          ))}
        </select>
        {errors.workflow.length > 0 && (
          <p id={`${ids.workflow}-error`} data-testid="field-error-workflow" className={errorClass}>
            {errors.workflow.join('; ')}
          </p>
        )}
        {choice && <WorkflowFacts choice={choice} />}
      </div>

      {fields && fields.length > 0 && (
        <fieldset className="space-y-4" data-testid="start-fields">
          <legend className={labelClass}>Input fields</legend>
          {current === null && (
            <p className={hintClass}>The JSON below is not an object yet: fix it there, and the fields follow.</p>
          )}
          {fields.map((field) => (
            <InputField
              key={`${workflow}:${field.name}`}
              field={field}
              value={current?.[field.name]}
              disabled={current === null}
              errors={errorsOf(field.name)}
              onChange={(value) => setField(field.name, value)}
            />
          ))}
        </fieldset>
      )}

      <div>
        <div className="flex flex-wrap items-end justify-between gap-2">
          <label htmlFor={ids.input} className={labelClass}>
            {fields && fields.length > 0 ? 'All input as JSON' : 'Input'}{' '}
            <span className="font-normal text-zinc-600 dark:text-zinc-400">(JSON: what is sent)</span>
          </label>
          <div className="flex items-center gap-2">
            <span
              data-testid="start-json-status"
              aria-live="polite"
              className={`text-xs ${jsonProblem ? 'text-amber-700 dark:text-amber-400' : 'text-zinc-500 dark:text-zinc-400'}`}
            >
              {jsonProblem ? 'not valid JSON yet' : input.trim() === '' ? 'empty: {} is sent' : 'valid JSON'}
            </span>
            <button
              type="button"
              onClick={format}
              disabled={jsonProblem !== null || input.trim() === ''}
              className={`${buttonClass()} px-2 py-1 text-xs`}
            >
              Format
            </button>
            <button
              type="button"
              onClick={() => setInput(exampleOf(workflow))}
              disabled={!edited}
              data-testid="start-reset-example"
              className={`${buttonClass()} px-2 py-1 text-xs`}
            >
              Reset to example
            </button>
          </div>
        </div>
        <textarea
          id={ids.input}
          name="input"
          data-testid="start-input"
          value={input}
          rows={10}
          onChange={(event) => setInput(event.target.value)}
          spellCheck={false}
          autoCapitalize="off"
          autoCorrect="off"
          autoComplete="off"
          aria-invalid={inputErrors.length > 0 || undefined}
          aria-describedby={`${ids.input}-hint${inputErrors.length > 0 ? ` ${ids.input}-error` : ''}`}
          className={`${fieldClass} ${fieldBorder(inputErrors.length > 0)} mt-1.5 resize-y font-mono text-[13px] leading-5`}
        />
        <p id={`${ids.input}-hint`} className={hintClass}>
          Prefilled with {workflow}&apos;s example;{' '}
          {edited ? 'your edits are kept when you switch workflow.' : 'switching workflow swaps it.'}
        </p>
        {inputErrors.length > 0 && (
          <div id={`${ids.input}-error`} data-testid="field-error-input" className={errorClass}>
            <ul className="space-y-0.5">
              {inputErrors.map(({ path, message }) => (
                <li key={`${path}:${message}`}>
                  {path && (
                    <>
                      <code className="rounded bg-red-50 px-1 font-mono text-xs dark:bg-red-950">{path}</code>:{' '}
                    </>
                  )}
                  {message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {choice?.schema && (
          <details
            className="group mt-3 rounded-md border border-zinc-200 dark:border-zinc-800"
            data-testid="start-schema"
          >
            <summary className="cursor-pointer select-none rounded-md px-3 py-2 text-sm text-zinc-700 hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-zinc-300 dark:hover:bg-zinc-800/50">
              Input schema of {workflow} <span className="text-zinc-500 dark:text-zinc-400">(JSON Schema)</span>
            </summary>
            <pre className="max-h-80 overflow-auto border-t border-zinc-200 bg-zinc-50 px-3 py-2 font-mono text-xs leading-5 text-zinc-800 dark:border-zinc-800 dark:bg-zinc-950 dark:text-zinc-200">
              {JSON.stringify(choice.schema, null, 2)}
            </pre>
          </details>
        )}
      </div>

      <div>
        <label htmlFor={ids.id} className={labelClass}>
          Run id <span className="font-normal text-zinc-600 dark:text-zinc-400">(optional)</span>
        </label>
        <input
          id={ids.id}
          name="id"
          type="text"
          data-testid="start-id"
          value={runId}
          onChange={(event) => setRunId(event.target.value)}
          placeholder={`${workflow}-…`}
          autoComplete="off"
          spellCheck={false}
          autoCapitalize="off"
          aria-invalid={errors.id.length > 0 || undefined}
          aria-describedby={`${ids.id}-hint${errors.id.length > 0 ? ` ${ids.id}-error` : ''}`}
          className={`${fieldClass} ${fieldBorder(errors.id.length > 0)} mt-1.5 h-10 font-mono sm:max-w-md`}
        />
        <p id={`${ids.id}-hint`} className={hintClass}>
          Letters, digits and <code className="font-mono">. _ : -</code>, starting with a letter or digit. Left empty,
          one is generated. Starting twice with the same id is refused, so a retried script cannot start a run twice.
        </p>
        {errors.id.length > 0 && (
          <p id={`${ids.id}-error`} data-testid="field-error-id" className={errorClass}>
            {errors.id.join('; ')}
          </p>
        )}
      </div>

      <div className="flex flex-col-reverse gap-2 border-t border-zinc-200 pt-4 sm:flex-row sm:justify-end dark:border-zinc-800">
        <Link href="/" className={buttonClass()}>
          Cancel
        </Link>
        <button
          type="submit"
          data-testid="start-submit"
          disabled={pending || Boolean(state?.ok)}
          className={buttonClass('primary')}
        >
          {pending ? 'Starting…' : 'Start run'}
        </button>
      </div>
    </form>
  );
}

/** What the form knows of the workflow beyond its schema: its words, version, steps, and who serves it. */
function WorkflowFacts({ choice }: { choice: StartChoice }) {
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

/** One top-level input drawn from the schema; its value lives in the JSON text, so both views stay one. */
function InputField({
  field,
  value,
  disabled,
  errors,
  onChange,
}: {
  field: SchemaField;
  value: unknown;
  disabled: boolean;
  errors: { path: string; message: string }[];
  onChange: (value: unknown) => void;
}) {
  const id = useId();
  const invalid = errors.length > 0;
  const bounds = [
    field.minimum !== undefined && `min ${field.minimum}`,
    field.maximum !== undefined && `max ${field.maximum}`,
    field.minLength !== undefined && `at least ${field.minLength} characters`,
    field.maxLength !== undefined && `at most ${field.maxLength} characters`,
  ]
    .filter(Boolean)
    .join(', ');
  const hint = [
    field.description,
    bounds || null,
    field.hasDefault ? `default ${shown(field.defaultValue)}` : null,
    field.kind === 'json' ? 'edit it in the JSON below' : null,
  ]
    .filter(Boolean)
    .join(' · ');
  const describedBy = `${id}-hint${invalid ? ` ${id}-error` : ''}`;
  const common = {
    id,
    disabled,
    'data-testid': `start-field-${field.name}`,
    'aria-invalid': invalid || undefined,
    'aria-describedby': describedBy,
    'aria-required': field.required || undefined,
  };
  const placeholder = field.hasDefault ? `default ${shown(field.defaultValue)}` : undefined;

  let control: ReactNode;
  if (field.kind === 'boolean') {
    const checked = typeof value === 'boolean' ? value : field.defaultValue === true;
    control = (
      <input
        type="checkbox"
        {...common}
        checked={checked}
        onChange={(e) => onChange(e.target.checked)}
        className="h-4 w-4 rounded border-zinc-300 dark:border-zinc-700"
      />
    );
  } else if (field.kind === 'enum') {
    const options = field.options ?? [];
    const index = options.indexOf(value);
    control = (
      <select
        {...common}
        value={index < 0 ? '' : String(index)}
        onChange={(e) => onChange(e.target.value === '' ? undefined : options[Number(e.target.value)])}
        className={`${fieldClass} ${fieldBorder(invalid)} h-10 sm:max-w-xs`}
      >
        {!field.required || index < 0 ? (
          <option value="">{field.hasDefault ? `(default: ${shown(field.defaultValue)})` : '(not set)'}</option>
        ) : null}
        {options.map((o, i) => (
          <option key={shown(o)} value={String(i)}>
            {shown(o)}
          </option>
        ))}
      </select>
    );
  } else if (field.kind === 'number' || field.kind === 'integer') {
    control = (
      <input
        type="number"
        {...common}
        value={typeof value === 'number' ? value : value === undefined ? '' : String(value)}
        step={field.kind === 'integer' ? 1 : 'any'}
        min={field.minimum}
        max={field.maximum}
        placeholder={placeholder}
        onChange={(e) =>
          onChange(
            e.target.value === ''
              ? undefined
              : Number.isNaN(e.target.valueAsNumber)
                ? e.target.value
                : e.target.valueAsNumber,
          )
        }
        className={`${fieldClass} ${fieldBorder(invalid)} h-10 font-mono sm:max-w-xs`}
      />
    );
  } else if (field.kind === 'string') {
    control = (
      <input
        type="text"
        {...common}
        value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)}
        placeholder={placeholder}
        autoComplete="off"
        spellCheck={false}
        onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
        className={`${fieldClass} ${fieldBorder(invalid)} h-10 sm:max-w-md`}
      />
    );
  } else {
    control = (
      <code
        data-testid={`start-field-${field.name}`}
        className="block truncate rounded bg-zinc-50 px-2 py-1 font-mono text-xs text-zinc-700 dark:bg-zinc-950 dark:text-zinc-300"
      >
        {value === undefined ? '(not set)' : JSON.stringify(value)}
      </code>
    );
  }

  return (
    <div className={field.kind === 'boolean' ? 'flex flex-wrap items-center gap-x-2' : undefined}>
      {field.kind === 'boolean' && control}
      <label htmlFor={id} className={labelClass}>
        <code className="font-mono">{field.name}</code>{' '}
        <span className="font-normal text-zinc-600 dark:text-zinc-400">
          {field.required ? '(required)' : '(optional)'}
        </span>
      </label>
      {field.kind !== 'boolean' && <div className="mt-1.5">{control}</div>}
      {hint && (
        <p id={`${id}-hint`} className={`${hintClass} w-full`}>
          {hint}
        </p>
      )}
      {invalid && (
        <p id={`${id}-error`} data-testid={`field-error-input.${field.name}`} className={errorClass}>
          {errors.map((e) => `${e.path === field.name ? '' : `${e.path}: `}${e.message}`).join('; ')}
        </p>
      )}
    </div>
  );
}
