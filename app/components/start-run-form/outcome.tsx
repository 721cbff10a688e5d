/** What the start said: refused, with the errors no field shows, or started while the run opens. */
import type { ActionResult } from '@/app/actions/result';

export function StartOutcome({ state, other }: { state: ActionResult<{ id: string }> | null; other: string[] }) {
  return (
    <>
      {state && !state.ok && (
        <div
          role="alert"
          data-testid="start-error"
          className="rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300"
        >
          <p className="font-medium">{state.message}</p>
          {other.length > 0 && (
            <ul className="mt-1 list-disc pl-5">
              {other.map((line) => (
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
    </>
  );
}
