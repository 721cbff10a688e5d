/** The run's tags and metadata (optional): the runs list filters by them, the run page shows them. */
import { errorClass, fieldBorder, fieldClass, hintClass, labelClass } from './classes';

export function TagsFields({
  tags,
  metadata,
  onTags,
  onMetadata,
  errors,
}: {
  tags: string;
  metadata: string;
  onTags: (value: string) => void;
  onMetadata: (value: string) => void;
  errors: string[];
}) {
  return (
    <div className="grid gap-4 sm:grid-cols-2">
      <div>
        <label htmlFor="start-tags" className={labelClass}>
          Tags <span className="font-normal text-zinc-600 dark:text-zinc-400">(optional)</span>
        </label>
        <input
          id="start-tags"
          name="tags"
          type="text"
          data-testid="start-tags"
          value={tags}
          onChange={(event) => onTags(event.target.value)}
          placeholder="env/prod user:42"
          autoComplete="off"
          spellCheck={false}
          autoCapitalize="off"
          className={`${fieldClass} ${fieldBorder(errors.length > 0)} mt-1.5 h-10 font-mono`}
        />
        <p className={hintClass}>Separated by spaces; letters, digits and . _ : / @ -; at most 20.</p>
      </div>
      <div>
        <label htmlFor="start-metadata" className={labelClass}>
          Metadata <span className="font-normal text-zinc-600 dark:text-zinc-400">(optional)</span>
        </label>
        <textarea
          id="start-metadata"
          name="metadata"
          data-testid="start-metadata"
          value={metadata}
          onChange={(event) => onMetadata(event.target.value)}
          placeholder="customer=acme"
          rows={2}
          spellCheck={false}
          autoCapitalize="off"
          className={`${fieldClass} ${fieldBorder(errors.length > 0)} mt-1.5 font-mono`}
        />
        <p className={hintClass}>One key=value a line; at most 20 keys.</p>
      </div>
      {errors.length > 0 && (
        <p data-testid="field-error-tags" className={`${errorClass} sm:col-span-2`}>
          {errors.join('; ')}
        </p>
      )}
    </div>
  );
}
