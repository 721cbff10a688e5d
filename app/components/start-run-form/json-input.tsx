/**
 * The input as JSON, what is sent: its editor, whether it parses yet, Format and Reset to example, the errors
 * the server found in it (each by its path), and the workflow's JSON Schema to read.
 */
import { useMemo } from 'react';
import { buttonClass } from '../ui';
import { errorClass, fieldBorder, fieldClass, hintClass, labelClass } from './classes';
import type { InputError } from './errors';

export function JsonInput({
  id,
  input,
  onInput,
  example,
  workflow,
  withFields,
  errors,
  schema,
}: {
  id: string;
  input: string;
  onInput: (input: string) => void;
  example: string;
  workflow: string;
  /** Fields drawn from the schema are shown above: this is then all of the input, as JSON. */
  withFields: boolean;
  errors: InputError[];
  schema: Record<string, unknown> | null;
}) {
  const edited = input !== example;
  const jsonProblem = useMemo(() => {
    if (input.trim() === '') return null;
    try {
      JSON.parse(input);
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  }, [input]);

  const format = () => {
    try {
      onInput(JSON.stringify(JSON.parse(input), null, 2));
    } catch {
      // The indicator already says why; formatting text that is not JSON would lose nothing but do nothing.
    }
  };

  return (
    <div>
      <div className="flex flex-wrap items-end justify-between gap-2">
        <label htmlFor={id} className={labelClass}>
          {withFields ? 'All input as JSON' : 'Input'}{' '}
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
            onClick={() => onInput(example)}
            disabled={!edited}
            data-testid="start-reset-example"
            className={`${buttonClass()} px-2 py-1 text-xs`}
          >
            Reset to example
          </button>
        </div>
      </div>
      <textarea
        id={id}
        name="input"
        data-testid="start-input"
        value={input}
        rows={10}
        onChange={(event) => onInput(event.target.value)}
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        autoComplete="off"
        aria-invalid={errors.length > 0 || undefined}
        aria-describedby={`${id}-hint${errors.length > 0 ? ` ${id}-error` : ''}`}
        className={`${fieldClass} ${fieldBorder(errors.length > 0)} mt-1.5 resize-y font-mono text-[13px] leading-5`}
      />
      <p id={`${id}-hint`} className={hintClass}>
        Prefilled with {workflow}&apos;s example;{' '}
        {edited ? 'your edits are kept when you switch workflow.' : 'switching workflow swaps it.'}
      </p>
      {errors.length > 0 && (
        <div id={`${id}-error`} data-testid="field-error-input" className={errorClass}>
          <ul className="space-y-0.5">
            {errors.map(({ path, message }) => (
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
      {schema && (
        <details
          className="group mt-3 rounded-md border border-zinc-200 dark:border-zinc-800"
          data-testid="start-schema"
        >
          <summary className="cursor-pointer select-none rounded-md px-3 py-2 text-sm text-zinc-700 hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-zinc-300 dark:hover:bg-zinc-800/50">
            Input schema of {workflow} <span className="text-zinc-500 dark:text-zinc-400">(JSON Schema)</span>
          </summary>
          <pre className="max-h-80 overflow-auto border-t border-zinc-200 bg-zinc-50 px-3 py-2 font-mono text-xs leading-5 text-zinc-800 dark:border-zinc-800 dark:bg-zinc-950 dark:text-zinc-200">
            {JSON.stringify(schema, null, 2)}
          </pre>
        </details>
      )}
    </div>
  );
}
