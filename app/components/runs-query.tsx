/**
 * The runs list's URL: its query parameters, validated once, and the links built from them. A parameter that
 * does not validate (an unknown status, an over-long search) is dropped and reported, never an error page:
 * URLs are edited by hand and shared.
 */
import { z } from 'zod';
import type { ListedStatus } from '@/lib/store/outside-runs';

/** Every listed status (lib/store/outside-runs.ts), in the order the page shows them: the busy ones first. */
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

export const SEARCH_MAX = 200;

/** `?a=1&a=2` arrives as an array; only the first value counts. */
const firstValue = (value: unknown) => (Array.isArray(value) ? value[0] : value);
const param = <T extends z.ZodType>(schema: T) => z.preprocess(firstValue, schema.optional()).catch(undefined);

const runsQuerySchema = z.object({
  status: param(z.enum(RUN_STATUSES)),
  workflow: param(z.string().trim().min(1).max(128)),
  q: param(z.string().trim().min(1).max(SEARCH_MAX)),
  cursor: param(z.string().min(1).max(1024)),
});

export interface RunsQueryParams {
  status?: RunsStatusFilter;
  workflow?: string;
  q?: string;
  cursor?: string;
}

export function parseRunsQuery(raw: Record<string, string | string[] | undefined>): {
  query: RunsQueryParams;
  ignored: string[];
} {
  const parsed = runsQuerySchema.safeParse(raw);
  const query: RunsQueryParams = parsed.success ? parsed.data : {};
  const ignored: string[] = [];
  for (const key of ['status', 'workflow', 'q'] as const) {
    const given = firstValue(raw[key]);
    if (typeof given === 'string' && given.trim() !== '' && query[key] === undefined) ignored.push(key);
  }
  return { query, ignored };
}

/** A link to the runs list with these filters; a changed filter always starts from the first page. */
export function runsHref(query: RunsQueryParams): string {
  const params = new URLSearchParams();
  if (query.status) params.set('status', query.status);
  if (query.workflow) params.set('workflow', query.workflow);
  if (query.q) params.set('q', query.q);
  if (query.cursor) params.set('cursor', query.cursor);
  const text = params.toString();
  return text ? `/?${text}` : '/';
}

export const runHref = (id: string) => `/runs/${encodeURIComponent(id)}`;
