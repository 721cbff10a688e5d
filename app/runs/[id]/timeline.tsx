'use client';
/**
 * The run's history, newest first: what happened last is what one looks for, and it is at the top where it
 * cannot be out of sight. The page scrolls, not a box inside it, so nothing hides below a fold of its own.
 * Step outcomes (skips and awaits folded into one event with a count) and operators' actions, each action
 * once (see timeline-items.ts), with a filter by kind. Times are relative to the server's clock at render
 * (`now`), so server and browser render the same text.
 *
 * A client component fed the events as data, not a server component: a hundred events as plain objects in
 * the RSC payload (25 KiB) are smaller than the same events as rendered element trees (the payload grew by
 * 45 KiB when we tried), and the HTML is rendered once either way. Repeated classes are short (globals.css).
 */
import { useState } from 'react';
import { OutcomeBadge } from '@/app/components/run-outcome';
import { isoTime } from '@/app/components/time';
import { relative } from '@/app/components/ui';
import type { AuditEntry, StepEvent } from '@/lib/store/contract';
import { countByKind, TIMELINE_KINDS, type TimelineItem, type TimelineKind, timelineItems } from './timeline-items';

export function Timeline({
  events,
  audit,
  now,
  truncated,
}: {
  events: StepEvent[];
  audit: AuditEntry[];
  now: number;
  truncated: boolean;
}) {
  const [kind, setKind] = useState<TimelineKind | null>(null);
  const items = timelineItems(events, audit);
  if (items.length === 0) {
    return <p className="text-sm text-zinc-600 dark:text-zinc-400">No events yet: the timeline fills as steps run.</p>;
  }
  const counts = countByKind(items);
  const shown = kind ? items.filter((item) => item.kind === kind) : items;
  return (
    <div>
      <div className="mb-3 space-y-2">
        <p className="text-xs text-zinc-600 dark:text-zinc-400" data-testid="timeline-summary">
          Newest first ·{' '}
          {truncated ? `the last ${events.length} events` : `${events.length} event${events.length === 1 ? '' : 's'}`}
          {audit.length > 0 && `, ${audit.length} operator action${audit.length === 1 ? '' : 's'}`}
        </p>
        <div role="group" aria-label="Show events of one kind" className="flex flex-wrap gap-1">
          <FilterButton
            testId="timeline-filter-all"
            pressed={kind === null}
            onClick={() => setKind(null)}
            label="All"
            count={items.length}
          />
          {TIMELINE_KINDS.map(({ kind: k, label }) => (
            <FilterButton
              key={k}
              testId={`timeline-filter-${k}`}
              pressed={kind === k}
              onClick={() => setKind(kind === k ? null : k)}
              label={label}
              count={counts[k]}
            />
          ))}
        </div>
      </div>
      {shown.length === 0 ? (
        <p data-testid="timeline-none" className="text-sm text-zinc-600 dark:text-zinc-400">
          None of this kind among these events.
        </p>
      ) : (
        <ol aria-label="Run events, newest first" data-testid="timeline-items" className="space-y-px">
          {shown.map((item) => (
            <Item key={itemKey(item)} item={item} now={now} />
          ))}
        </ol>
      )}
    </div>
  );
}

function FilterButton({
  testId,
  pressed,
  onClick,
  label,
  count,
}: {
  testId: string;
  pressed: boolean;
  onClick: () => void;
  label: string;
  count: number;
}) {
  return (
    <button
      type="button"
      data-testid={testId}
      aria-pressed={pressed}
      onClick={onClick}
      className="rounded-md border border-zinc-300 px-2 py-0.5 text-xs font-medium text-zinc-700 hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 aria-pressed:border-zinc-900 aria-pressed:bg-zinc-900 aria-pressed:text-white dark:border-zinc-700 dark:text-zinc-300 dark:hover:bg-zinc-800 dark:aria-pressed:border-zinc-100 dark:aria-pressed:bg-zinc-100 dark:aria-pressed:text-zinc-900"
    >
      {label} <span className="tabular-nums opacity-70">{count}</span>
    </button>
  );
}

function itemKey(item: TimelineItem): string {
  return item.type === 'action' ? `a${item.entry.id}` : `e${item.event.id}`;
}

function Item({ item, now }: { item: TimelineItem; now: number }) {
  return item.type === 'action' ? (
    <ActionItem entry={item.entry} event={item.event} transition={item.transition} now={now} />
  ) : (
    <EventItem event={item.event} now={now} />
  );
}

/**
 * Seven elements at most: the timeline is most of the run page's markup, and a page's cost to render grows with
 * its elements. The step and the worker line are text in a styled box, not spans of their own.
 */
function EventItem({ event, now }: { event: StepEvent; now: number }) {
  const iso = isoTime(event.at);
  const by = [event.workerId, event.durationMs === null ? null : `${Math.round(event.durationMs)} ms`]
    .filter((part) => part !== null)
    .join(' · ');
  return (
    <li data-testid={`event-${event.outcome}`} className="wb-event">
      <div className="wb-event-head">
        <OutcomeBadge outcome={event.outcome} />
        {event.count > 1 && (
          <span className="font-medium tabular-nums text-zinc-900 dark:text-zinc-100" data-testid="event-count">
            ×{event.count}
          </span>
        )}
        {/* A step's own event links to its page (its attempts); folded skips and awaits stand for many steps. */}
        {event.step !== null &&
          (event.count === 1 ? (
            <a
              href={`/runs/${encodeURIComponent(event.runId)}/steps/${event.step}`}
              data-testid="event-step-link"
              className="text-blue-700 hover:underline dark:text-blue-400"
            >
              step {event.step}
            </a>
          ) : (
            `step ${event.step}`
          ))}
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

/** An operator's action: the audit line (who, role, reason) with what its event recorded (transition, step). */
function ActionItem({
  entry,
  event,
  transition,
  now,
}: {
  entry: AuditEntry;
  event: StepEvent | null;
  transition: string | null;
  now: number;
}) {
  const iso = isoTime(entry.at);
  return (
    <li
      data-testid="audit-entry"
      data-action={entry.action}
      className="border-l-2 border-blue-300 py-2 pl-3 dark:border-blue-800"
    >
      <div className="wb-event-head">
        <span className="rounded bg-blue-50 px-1.5 py-0.5 text-xs font-medium text-blue-800 ring-1 ring-inset ring-blue-200 dark:bg-blue-950 dark:text-blue-200 dark:ring-blue-900">
          {entry.action}
        </span>
        <span data-testid="audit-entry-who" className="break-all text-xs text-zinc-700 dark:text-zinc-300">
          {entry.actor}
        </span>
        {transition && (
          <span data-testid="audit-entry-transition" className="text-xs text-zinc-500 dark:text-zinc-400">
            {transition}
          </span>
        )}
        {event?.step !== null && event?.step !== undefined && (
          <span className="text-xs text-zinc-500 dark:text-zinc-400">step {event.step}</span>
        )}
        <time dateTime={iso} title={iso} className="wb-event-time">
          {relative(entry.at, now)}
        </time>
      </div>
      {entry.target !== entry.runId && <div className="wb-event-key">{entry.target}</div>}
      {entry.detail && (
        <p data-testid="audit-entry-detail" className="wb-event-detail">
          {entry.detail}
        </p>
      )}
    </li>
  );
}

/** A time no Date can hold (an outside client's row) is shown as such rather than throwing. */
