/** The bulk actions the runs list offers, what each says when done, and the filter as the confirmation says it. */
import type { BulkFilter } from '@/lib/control/bulk';
import type { RunAction } from '@/lib/store/contract';

export const ACTIONS: { action: RunAction; label: string; tone: 'default' | 'danger'; hint: string }[] = [
  { action: 'pause', label: 'Pause', tone: 'default', hint: 'Pause queued or running runs' },
  { action: 'resume', label: 'Resume', tone: 'default', hint: 'Queue paused runs again' },
  { action: 'retry', label: 'Retry', tone: 'default', hint: 'Queue failed or cancelled runs again' },
  { action: 'cancel', label: 'Cancel', tone: 'danger', hint: 'Cancel the selected runs' },
];

export const ACTION_DONE: Record<RunAction, string> = {
  pause: 'paused',
  resume: 'resumed',
  cancel: 'cancelled',
  retry: 'queued again',
};

export function filterText(filter: BulkFilter): string {
  const parts = [
    filter.status && `status ${filter.status}`,
    filter.waiting && `waiting for ${filter.waiting}`,
    filter.workflow && `workflow ${filter.workflow}`,
    filter.q && `search "${filter.q}"`,
    filter.parent && `children of ${filter.parent}`,
    filter.tag?.length && `tags ${filter.tag.join(', ')}`,
    filter.meta?.length && `metadata ${filter.meta.join(', ')}`,
  ].filter(Boolean);
  return parts.length ? `filter: ${parts.join(', ')}` : 'no filter: every run';
}

/** What the last action said: its summary, and the runs it refused or skipped with why. */
export type Message = { ok: boolean; text: string; refused: string[] };

// Short class names from globals.css: fifty rows of utilities were most of the page's HTML.
export const th = 'wb-th';
export const td = 'wb-td';
export const check = 'wb-check';
