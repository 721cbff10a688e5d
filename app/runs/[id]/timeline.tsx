'use client';
/**
 * The run's history: step outcomes (skips and awaits folded into one event with a count) and operators'
 * actions, interleaved with the audit log's lines for the run (who did it, as what role, with their note).
 * Oldest first reads as a story; newest first is what one wants while watching, so it toggles.
 * Times are relative to the server's clock at render (`now`), so server and browser render the same text.
 *
 * A client component fed the events as data, not a server component: a hundred events as plain objects in
 * the RSC payload (25 KiB) are smaller than the same events as rendered element trees (the payload grew by
 * 45 KiB when we tried), and the HTML is rendered once either way. Repeated classes are short (globals.css).
 */
import { useState } from 'react';
import { OutcomeBadge } from '@/app/components/run-outcome';
import { relative } from '@/app/components/ui';
import type { AuditEntry, StepEvent } from '@/lib/store/types';
import { isoTime } from '@/app/components/time';

type Item = { kind: 'event'; at: number; event: StepEvent } | { kind: 'audit'; at: number; entry: AuditEntry };

/** Oldest first; an audit line is written just after the event its action recorded, so on a tie it follows. */
function merge(events: StepEvent[], audit: AuditEntry[]): Item[] {
  const items: Item[] = [
    ...events.map((event) => ({ kind: 'event' as const, at: event.at, event })),
    ...audit.map((entry) => ({ kind: 'audit' as const, at: entry.at, entry })),
  ];
  return items.sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === 'event' ? -1 : 1));
}

export function Timeline({ events, audit, now, truncated }: { events: StepEvent[]; audit: AuditEntry[]; now: number; truncated: boolean }) {
  const [newestFirst, setNewestFirst] = useState(false);
  const items = merge(events, audit);
  const ordered = newestFirst ? [...items].reverse() : items;
  if (items.length === 0) {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400">No events yet: the timeline fills as steps run.</p>;
  }
  return (
    <div>
      <div className="mb-3 flex flex-wrap items-center justify-between gap-2">
        <p className="text-xs text-zinc-600 dark:text-zinc-400">
          {truncated ? `The last ${events.length} events` : `${events.length} event${events.length === 1 ? '' : 's'}`}
          {audit.length > 0 && `, ${audit.length} operator action${audit.length === 1 ? '' : 's'}`}
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
        {ordered.map((item) => item.kind === 'event'
          ? <EventItem key={`e${item.event.id}`} event={item.event} now={now} />
          : <AuditItem key={`a${item.entry.id}`} entry={item.entry} now={now} />)}
      </ol>
    </div>
  );
}

/**
 * Seven elements at most: the timeline is most of the run page's markup, and a page's cost to render grows with
 * its elements. The step and the worker line are text in a styled box, not spans of their own.
 */
function EventItem({ event, now }: { event: StepEvent; now: number }) {
  const iso = isoTime(event.at);
  const by = [event.workerId, event.durationMs === null ? null : `${Math.round(event.durationMs)} ms`].filter((part) => part !== null).join(' · ');
  return (
    <li data-testid={`event-${event.outcome}`} className="wb-event">
      <div className="wb-event-head">
        <OutcomeBadge outcome={event.outcome} />
        {event.count > 1 && <span className="font-medium tabular-nums text-zinc-900 dark:text-zinc-100" data-testid="event-count">×{event.count}</span>}
        {event.step !== null && `step ${event.step}`}
        <time dateTime={iso} title={iso} className="wb-event-time">
          {relative(event.at, now)}
        </time>
      </div>
      {event.idemKey && <div className="wb-event-key">{event.idemKey}</div>}
      {by && <div className="wb-event-by">{by}</div>}
      {event.detail && <p className="wb-event-detail">{event.detail}</p>}
    </li>
  );
}

function AuditItem({ entry, now }: { entry: AuditEntry; now: number }) {
  const iso = isoTime(entry.at);
  return (
    <li data-testid="audit-entry" className="border-l-2 border-blue-300 py-2 pl-3 dark:border-blue-800">
      <div className="wb-event-head">
        <span className="rounded bg-blue-50 px-1.5 py-0.5 text-xs font-medium text-blue-800 ring-1 ring-inset ring-blue-200 dark:bg-blue-950 dark:text-blue-200 dark:ring-blue-900">
          {entry.action}
        </span>
        <span data-testid="audit-entry-who" className="break-all text-xs text-zinc-700 dark:text-zinc-300">{entry.actor}</span>
        <span className="text-xs text-zinc-500 dark:text-zinc-400">{entry.role}</span>
        <time dateTime={iso} title={iso} className="wb-event-time">
          {relative(entry.at, now)}
        </time>
      </div>
      {entry.target !== entry.runId && <div className="wb-event-key">{entry.target}</div>}
      {entry.detail && <p data-testid="audit-entry-detail" className="wb-event-detail">{entry.detail}</p>}
    </li>
  );
}
