/**
 * The runs list's filter bar: a plain GET form, so filters live in the URL (shareable, back button works)
 * and it works before any JavaScript has loaded. Submitting starts from the first page.
 */
import Link from 'next/link';
import {
  isFiltered,
  RUN_STATUSES,
  type RunsQueryParams,
  runHref,
  runsHref,
  SEARCH_MAX,
  WAIT_KINDS,
  WAITING_LABEL,
} from './runs-query';
import { buttonClass } from './ui';

export const fieldClass =
  'block h-9 w-full rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm text-zinc-900 shadow-sm placeholder:text-zinc-400 focus-visible:border-blue-600 focus-visible:outline-2 focus-visible:outline-offset-0 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100 dark:placeholder:text-zinc-500 dark:scheme-dark';

const labelClass = 'mb-1 block text-xs font-medium text-zinc-600 dark:text-zinc-400';

export function RunsFilters({ query, workflows }: { query: RunsQueryParams; workflows: string[] }) {
  const choices = query.workflow && !workflows.includes(query.workflow) ? [...workflows, query.workflow] : workflows;
  const filtered = isFiltered(query);
  return (
    <form
      method="get"
      action="/"
      role="search"
      aria-label="Filter runs"
      data-testid="runs-filters"
      className="grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-[11rem_12rem_12rem_minmax(0,1fr)_auto] lg:items-end"
    >
      <div>
        <label htmlFor="filter-status" className={labelClass}>
          Status
        </label>
        <select
          id="filter-status"
          name="status"
          data-testid="filter-status"
          defaultValue={query.status ?? ''}
          className={fieldClass}
        >
          <option value="">All statuses</option>
          {RUN_STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label htmlFor="filter-waiting" className={labelClass}>
          Waiting for
        </label>
        <select
          id="filter-waiting"
          name="waiting"
          data-testid="filter-waiting"
          defaultValue={query.waiting ?? ''}
          className={fieldClass}
        >
          <option value="">Anything or nothing</option>
          {WAIT_KINDS.map((kind) => (
            <option key={kind} value={kind}>
              {WAITING_LABEL[kind]}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label htmlFor="filter-workflow" className={labelClass}>
          Workflow
        </label>
        <select
          id="filter-workflow"
          name="workflow"
          data-testid="filter-workflow"
          defaultValue={query.workflow ?? ''}
          className={fieldClass}
        >
          <option value="">All workflows</option>
          {choices.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
      <div className="sm:col-span-2 lg:col-span-1">
        <label htmlFor="search" className={labelClass}>
          Run id contains
        </label>
        <input
          id="search"
          name="q"
          type="search"
          data-testid="search"
          defaultValue={query.q ?? ''}
          maxLength={SEARCH_MAX}
          placeholder="e.g. agent-batch-2026"
          autoComplete="off"
          spellCheck={false}
          className={`${fieldClass} font-mono`}
        />
      </div>
      <div className="sm:col-span-2 lg:col-span-2">
        <label htmlFor="filter-tags" className={labelClass}>
          Tags (all of them)
        </label>
        <input
          id="filter-tags"
          name="tag"
          type="text"
          data-testid="filter-tags"
          defaultValue={(query.tag ?? []).join(' ')}
          placeholder="e.g. env/prod user:42"
          autoComplete="off"
          spellCheck={false}
          className={`${fieldClass} font-mono`}
        />
      </div>
      <fieldset className="sm:col-span-2 lg:col-span-3" data-testid="filter-meta">
        <legend className={labelClass}>Metadata (key=value, all of them)</legend>
        <div className="flex flex-wrap gap-2">
          {/* One field per pair, and an empty one to add another: a value may hold any character but control ones. */}
          {[...(query.meta ?? []), ''].map((pair, i) => (
            <input
              key={pair === '' ? 'add' : `pair:${pair}`}
              name="meta"
              type="text"
              aria-label={pair ? `Metadata filter ${i + 1}` : 'Add a metadata filter'}
              data-testid={`filter-meta-${i}`}
              defaultValue={pair}
              placeholder="e.g. customer=acme"
              autoComplete="off"
              spellCheck={false}
              className={`${fieldClass} w-auto min-w-48 flex-1 font-mono`}
            />
          ))}
        </div>
      </fieldset>
      {query.parent && (
        // No field to type a parent in: the run page links here; the form keeps it, and the chip drops it.
        <p data-testid="filter-parent" className="text-sm text-zinc-600 sm:col-span-2 lg:col-span-5 dark:text-zinc-400">
          <input type="hidden" name="parent" value={query.parent} />
          Children of{' '}
          <Link prefetch={false} href={runHref(query.parent)} className="font-mono underline">
            {query.parent}
          </Link>{' '}
          <Link
            prefetch={false}
            href={runsHref({ ...query, parent: undefined, cursor: undefined })}
            data-testid="filter-parent-clear"
            className="underline"
          >
            (show all runs)
          </Link>
        </p>
      )}
      <div className="flex gap-2 sm:col-span-2 lg:col-span-1">
        <button type="submit" data-testid="filter-submit" className={`${buttonClass('primary')} flex-1 lg:flex-none`}>
          Apply filters
        </button>
        {filtered && (
          <Link prefetch={false} href="/" data-testid="filter-clear" className={`${buttonClass()} flex-1 lg:flex-none`}>
            Clear
          </Link>
        )}
      </div>
    </form>
  );
}
