/**
 * The runs list's URL: its query parameters, validated once, and the links built from them. A parameter that
 * does not validate (an unknown status, an over-long search) is dropped and reported, never an error page:
 * URLs are edited by hand and shared.
 */
import { z } from 'zod';
import { runIdLookup } from '@/lib/domain/run-id';
import { WAIT_KINDS, type WaitKind } from '@/lib/store/contract/waits';
import type { ListedStatus } from '@/lib/store/shared/outside-runs';

/** Every listed status (lib/store/shared/outside-runs.ts), in the order the page shows them: the busy ones first. */
export const RUN_STATUSES = [
  'running',
  'waiting',
  'queued',
  'paused',
  'failed',
  'completed',
  'cancelled',
  'rejected',
  'idle',
] as const satisfies readonly ListedStatus[];
// A status the store lists but the page forgot fails the build here.
type Unshown = Exclude<ListedStatus, (typeof RUN_STATUSES)[number]>;
const _everyStatusShown: [Unshown] extends [never] ? true : Unshown = true;
export type RunsStatusFilter = (typeof RUN_STATUSES)[number];

/** What a waiting run waits for, as the filter offers it: `?waiting=approval` lists the runs a person must decide. */
export const WAITING_LABEL: Record<WaitKind, string> = {
  approval: 'waiting for approval',
  signal: 'waiting for a signal',
  sleep: 'sleeping',
  child: 'waiting for a child run',
  event: 'waiting for an event',
};
export { WAIT_KINDS };

export const SEARCH_MAX = 200;

/** `?a=1&a=2` arrives as an array; only the first value counts. */
const firstValue = (value: unknown) => (Array.isArray(value) ? value[0] : value);
const param = <T extends z.ZodType>(schema: T) => z.preprocess(firstValue, schema.optional()).catch(undefined);

const runsQuerySchema = z.object({
  status: param(z.enum(RUN_STATUSES)),
  waiting: param(z.enum(WAIT_KINDS)),
  workflow: param(z.string().trim().min(1).max(128)),
  q: param(z.string().trim().min(1).max(SEARCH_MAX)),
  parent: param(runIdLookup),
  cursor: param(z.string().min(1).max(1024)),
});

export interface RunsQueryParams {
  status?: RunsStatusFilter;
  /** Only runs parked on a wait of this kind: status `waiting` by definition. */
  waiting?: WaitKind;
  workflow?: string;
  q?: string;
  /** Only this run's children (ctx.startChild): the run page's "all N children" link. */
  parent?: string;
  cursor?: string;
}

export function parseRunsQuery(raw: Record<string, string | string[] | undefined>): {
  query: RunsQueryParams;
  ignored: string[];
} {
  const parsed = runsQuerySchema.safeParse(raw);
  const query: RunsQueryParams = parsed.success ? parsed.data : {};
  const ignored: string[] = [];
  for (const key of ['status', 'waiting', 'workflow', 'q', 'parent'] as const) {
    const given = firstValue(raw[key]);
    if (typeof given === 'string' && given.trim() !== '' && query[key] === undefined) ignored.push(key);
  }
  // `waiting` is a kind of the status `waiting`: beside another status it contradicts it, and gives way.
  if (query.waiting && query.status && query.status !== 'waiting') {
    delete query.waiting;
    ignored.push('waiting-status');
  }
  return { query, ignored };
}

/** A link to the runs list with these filters; a changed filter always starts from the first page. */
export function runsHref(query: RunsQueryParams): string {
  const params = new URLSearchParams();
  if (query.status) params.set('status', query.status);
  if (query.waiting) params.set('waiting', query.waiting);
  if (query.workflow) params.set('workflow', query.workflow);
  if (query.q) params.set('q', query.q);
  if (query.parent) params.set('parent', query.parent);
  if (query.cursor) params.set('cursor', query.cursor);
  const text = params.toString();
  return text ? `/?${text}` : '/';
}

export const runHref = (id: string) => `/runs/${encodeURIComponent(id)}`;
