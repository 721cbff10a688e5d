/**
 * A stored JSON value, collapsed to a one-line preview and pretty-printed when opened. Text only: values come
 * from workers and outside clients, so nothing is ever interpreted as markup. No hooks, so it renders in
 * server and client components alike, and <details> keeps its open state across live refreshes.
 *
 * Results may be up to 1 MiB each: only the first `sendChars` characters of the pretty text are sent to the
 * browser at all, and only the first `showChars` are shown until the reader expands the rest.
 */

import { MAX_DEPTH, nestingDepth } from '@/lib/domain/json-input';

const PREVIEW_CHARS = 80;

/** What a JsonView shows, computed once where the value is (the server): small enough to pass as props. */
export interface JsonParts {
  preview: string;
  head: string;
  rest: string;
  /** Characters sent and in all, when the pretty text was cut. */
  cut: { sent: number; total: number } | null;
  /** Why the value is shown as stored rather than re-indented (it nests too deep to walk safely), or null. */
  note: string | null;
}

export function jsonParts(json: string, { showChars = 1_200, sendChars = 32_000 } = {}): JsonParts {
  const { pretty, compact, note } = format(json);
  const sent = pretty.slice(0, sendChars);
  return {
    note,
    preview: compact.length > PREVIEW_CHARS ? `${compact.slice(0, PREVIEW_CHARS)}…` : compact,
    head: sent.slice(0, showChars),
    rest: sent.slice(showChars),
    cut: pretty.length > sent.length ? { sent: sent.length, total: pretty.length } : null,
  };
}

export function JsonView({
  json,
  label = 'value',
  showChars = 1_200,
  sendChars = 32_000,
  testId = 'json-view',
}: {
  json: string | null;
  label?: string;
  showChars?: number;
  sendChars?: number;
  testId?: string;
}) {
  if (json === null) return <span className="text-zinc-500 dark:text-zinc-400">—</span>;
  return <JsonPartsView parts={jsonParts(json, { showChars, sendChars })} label={label} testId={testId} />;
}

export function JsonPartsView({
  parts,
  label,
  testId = 'json-view',
}: {
  parts: JsonParts;
  label: string;
  testId?: string;
}) {
  const { preview, head, rest, cut, note } = parts;
  return (
    <details data-testid={testId} className="min-w-0 max-w-full">
      <summary aria-label={`${label}: show JSON`} className="wb-json-summary">
        {preview}
      </summary>
      {/* wb-json-*: globals.css, short names for what every row of a results table repeats. */}
      <div className="wb-json-body">
        {note && (
          <p data-testid="json-note" className="mb-2 text-xs text-orange-800 dark:text-orange-300">
            {note}
          </p>
        )}
        <pre className="wb-json-pre">{head}</pre>
        {rest && (
          <details className="mt-1">
            <summary className="cursor-pointer rounded text-xs font-medium text-blue-700 hover:underline focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600 dark:text-blue-400">
              Show {rest.length.toLocaleString('en-US')} more characters
            </summary>
            <pre className="wb-json-pre">{rest}</pre>
          </details>
        )}
        {cut && (
          <p className="mt-2 text-xs text-zinc-600 dark:text-zinc-400">
            Cut at {cut.sent.toLocaleString('en-US')} of {cut.total.toLocaleString('en-US')} characters; the full value
            is in the store (<code>waybill inspect</code>).
          </p>
        )}
      </div>
    </details>
  );
}

/** Pretty and one-line forms; text that is not JSON (an outside client's) is shown as it is. */
function format(json: string): { pretty: string; compact: string; note: string | null } {
  // Re-indenting a very large value costs more than it helps: it is cut long before its end anyway.
  if (json.length > 256 * 1024) return { pretty: json, compact: json.slice(0, PREVIEW_CHARS + 1), note: null };
  // Re-indenting walks the value by recursion, which a value 50,000 levels deep (an outside client's row)
  // overflows, taking the whole page down with it. The stored text is shown as it is instead.
  const depth = nestingDepth(json);
  if (depth > MAX_DEPTH) {
    return {
      pretty: json,
      compact: json.slice(0, PREVIEW_CHARS + 1),
      note: `Nested ${depth.toLocaleString('en-US')} levels deep (more than ${MAX_DEPTH}): shown as stored, not re-indented.`,
    };
  }
  try {
    const value: unknown = JSON.parse(json);
    return {
      pretty: JSON.stringify(value, null, 2) ?? String(value),
      compact: JSON.stringify(value) ?? String(value),
      note: null,
    };
  } catch {
    return { pretty: json, compact: json.replace(/\s+/g, ' '), note: null };
  }
}
