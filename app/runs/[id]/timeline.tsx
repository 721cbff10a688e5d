'use client';
/**
 * The run's history: step outcomes (skips and awaits folded into one event with a count) and operators'
 * actions. Oldest first reads as a story; newest first is what one wants while watching, so it toggles.
 * Times are relative to the server's clock at render (`now`), so server and browser render the same text.
 */
import { useState } from 'react';
import { OutcomeBadge } from '@/app/components/run-outcome';
import { relative } from '@/app/components/ui';
import type { StepEvent } from '@/lib/store/types';

export function Timeline({ events, now, truncated }: { events: StepEvent[]; now: number; truncated: boolean }) {
  const [newestFirst, setNewestFirst] = useState(false);
  const ordered = newestFirst ? [...events].reverse() : events;
  if (events.length === 0) {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400">No events yet: the timeline fills as steps run.</p>;
  }
  return (
    <div>
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <p className="text-xs text-zinc-600 dark:text-zinc-400">
          {truncated ? `The last ${events.length} events` : `${events.length} event${events.length === 1 ? '' : 's'}`}
        </p>
        <div role="group" aria-label="Order of events" className="inline-flex rounded-md border border-zinc-300 p-0.5 dark:border-zinc-700">
          {([false, true] as const).map((newest) => (
            <button key={String(newest)} type="button" data-testid={newest ? 'timeline-newest' : 'timeline-oldest'}
              aria-pressed={newestFirst === newest} onClick={() => setNewestFirst(newest)}
              className="rounded px-2.5 py-1 text-xs font-medium text-zinc-700 hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 aria-pressed:bg-zinc-900 aria-pressed:text-white dark:text-zinc-300 dark:hover:bg-zinc-800 dark:aria-pressed:bg-zinc-100 dark:aria-pressed:text-zinc-900">
              {newest ? 'Newest first' : 'Oldest first'}
            </button>
          ))}
        </div>
      </div>
      {/* A scrolling region must be reachable by keyboard to be scrolled. */}
      <ol tabIndex={0} aria-label="Run events" className="max-h-[32rem] space-y-px overflow-y-auto rounded-md focus-visible:outline-2 focus-visible:outline-blue-600">
        {ordered.map((event) => <EventItem key={event.id} event={event} now={now} />)}
      </ol>
    </div>
  );
}

function EventItem({ event, now }: { event: StepEvent; now: number }) {
  const iso = new Date(event.at * 1000).toISOString();
  return (
    <li data-testid={`event-${event.outcome}`} className="border-l-2 border-zinc-200 py-2 pl-3 dark:border-zinc-700">
      <div className="flex flex-wrap items-center gap-x-2 gap-y-1">
        <OutcomeBadge outcome={event.outcome} />
        {event.count > 1 && <span className="text-xs font-medium tabular-nums" data-testid="event-count">×{event.count}</span>}
        {event.step !== null && <span className="text-xs text-zinc-600 dark:text-zinc-400">step {event.step}</span>}
        <time dateTime={iso} title={iso} className="ml-auto text-xs tabular-nums text-zinc-500 dark:text-zinc-400">
          {relative(event.at, now)}
        </time>
      </div>
      {event.idemKey && <div className="mt-1 break-all font-mono text-xs text-zinc-700 dark:text-zinc-300">{event.idemKey}</div>}
      {(event.workerId || event.durationMs !== null) && (
        <div className="mt-0.5 text-xs text-zinc-500 dark:text-zinc-400">
          {event.workerId && <span className="break-all">{event.workerId}</span>}
          {event.workerId && event.durationMs !== null && ' · '}
          {event.durationMs !== null && <span className="tabular-nums">{Math.round(event.durationMs)} ms</span>}
        </div>
      )}
      {event.detail && <p className="mt-1 whitespace-pre-wrap break-words text-xs text-zinc-800 dark:text-zinc-200">{event.detail}</p>}
    </li>
  );
}
