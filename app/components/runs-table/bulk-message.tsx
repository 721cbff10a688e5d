/** What the last bulk action said, with the runs it refused or skipped behind "Details". */
import type { Message } from './bulk-actions';

export function BulkMessage({ message }: { message: Message | null }) {
  return (
    <div
      role="status"
      data-testid="bulk-message"
      aria-live="polite"
      className={`min-h-5 text-sm ${message?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-700 dark:text-zinc-300'}`}
    >
      {message && (
        <>
          {message.text}
          {message.refused.length > 0 && (
            <details className="mt-1 text-xs text-zinc-600 dark:text-zinc-400">
              <summary className="cursor-pointer rounded focus-visible:outline-2 focus-visible:outline-blue-600">
                Details
              </summary>
              <ul className="mt-1 list-disc space-y-0.5 pl-4">
                {message.refused.map((line) => (
                  <li key={line} className="break-all">
                    {line}
                  </li>
                ))}
              </ul>
            </details>
          )}
        </>
      )}
    </div>
  );
}
