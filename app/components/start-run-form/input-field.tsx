import { type ReactNode, useId } from 'react';
import { type SchemaField, shown } from '../schema-fields';
import { errorClass, fieldBorder, fieldClass, hintClass, labelClass } from './classes';
import type { InputError } from './errors';

/** One top-level input drawn from the schema; its value lives in the JSON text, so both views stay one. */
export function InputField({
  field,
  value,
  disabled,
  errors,
  onChange,
}: {
  field: SchemaField;
  value: unknown;
  disabled: boolean;
  errors: InputError[];
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
