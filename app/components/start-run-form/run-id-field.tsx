/** The optional run id: a retried script that names its run cannot start it twice. */
import { errorClass, fieldBorder, fieldClass, hintClass, labelClass } from './classes';

export function RunIdField({
  id,
  value,
  onChange,
  workflow,
  errors,
}: {
  id: string;
  value: string;
  onChange: (value: string) => void;
  workflow: string;
  errors: string[];
}) {
  return (
    <div>
      <label htmlFor={id} className={labelClass}>
        Run id <span className="font-normal text-zinc-600 dark:text-zinc-400">(optional)</span>
      </label>
      <input
        id={id}
        name="id"
        type="text"
        data-testid="start-id"
        value={value}
        onChange={(event) => onChange(event.target.value)}
        placeholder={`${workflow}-…`}
        autoComplete="off"
        spellCheck={false}
        autoCapitalize="off"
        aria-invalid={errors.length > 0 || undefined}
        aria-describedby={`${id}-hint${errors.length > 0 ? ` ${id}-error` : ''}`}
        className={`${fieldClass} ${fieldBorder(errors.length > 0)} mt-1.5 h-10 font-mono sm:max-w-md`}
      />
      <p id={`${id}-hint`} className={hintClass}>
        Letters, digits and <code className="font-mono">. _ : -</code>, starting with a letter or digit. Left empty, one
        is generated. Starting twice with the same id is refused, so a retried script cannot start a run twice.
      </p>
      {errors.length > 0 && (
        <p id={`${id}-error`} data-testid="field-error-id" className={errorClass}>
          {errors.join('; ')}
        </p>
      )}
    </div>
  );
}
