/**
 * The runs list's URL: its query parameters, validated once, and the links built from them. A parameter that
 * does not validate (an unknown status, an over-long search) is dropped and reported, never an error page:
 * URLs are edited by hand and shared.
 */
import { z } from 'zod';
import { runIdLookup } from '@/lib/domain/run-id';
import { META_KEYS_PER_RUN, metaFilterSchema, TAGS_PER_RUN, tagSchema } from '@/lib/domain/run-tags';
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

/** `?tag=a&tag=b`, or the form's one field, `?tag=a b` (a tag has no spaces): each tag by the rule, or dropped. */
function tagsOf(raw: unknown): { tags: string[]; dropped: boolean } {
  const given = [raw]
    .flat()
    .filter((v): v is string => typeof v === 'string')
    .flatMap((v) => v.split(/[\s,]+/))
    .filter(Boolean);
  const tags = [...new Set(given.filter((tag) => tagSchema.safeParse(tag).success))].slice(0, TAGS_PER_RUN);
  return { tags, dropped: tags.length < new Set(given).size };
}

/** `?meta=key=value`, repeatable (the form has one field per pair, and an empty one to add): each by the rule. */
function metaOf(raw: unknown): { meta: string[]; dropped: boolean } {
  const given = [raw].flat().filter((v): v is string => typeof v === 'string' && v !== '');
  const meta = [...new Set(given.filter((pair) => metaFilterSchema.safeParse(pair).success))].slice(
    0,
    META_KEYS_PER_RUN,
  );
  return { meta, dropped: meta.length < new Set(given).size };
}

export interface RunsQueryParams {
  status?: RunsStatusFilter;
  /** Only runs parked on a wait of this kind: status `waiting` by definition. */
  waiting?: WaitKind;
  workflow?: string;
  q?: string;
  /** Only this run's children (ctx.startChild): the run page's "all N children" link. */
  parent?: string;
  /** Only runs with every one of these tags, and every one of these `key=value` metadata pairs. */
  tag?: string[];
  meta?: string[];
  cursor?: string;
}

export function parseRunsQuery(raw: Record<string, string | string[] | undefined>): {
  query: RunsQueryParams;
  ignored: string[];
} {
  const parsed = runsQuerySchema.safeParse(raw);
  const query: RunsQueryParams = parsed.success ? parsed.data : {};
  const ignored: string[] = [];
  const { tags, dropped: tagsDropped } = tagsOf(raw.tag);
  const { meta, dropped: metaDropped } = metaOf(raw.meta);
  if (tags.length) query.tag = tags;
  if (meta.length) query.meta = meta;
  if (tagsDropped) ignored.push('tag');
  if (metaDropped) ignored.push('meta');
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
  for (const tag of query.tag ?? []) params.append('tag', tag);
  for (const pair of query.meta ?? []) params.append('meta', pair);
  if (query.cursor) params.set('cursor', query.cursor);
  const text = params.toString();
  return text ? `/?${text}` : '/';
}

export const runHref = (id: string) => `/runs/${encodeURIComponent(id)}`;

/** Whether any filter narrows the list (the Clear button, the empty state, bulk's "all matching"). */
export function isFiltered(query: RunsQueryParams): boolean {
  return Boolean(
    query.status ||
      query.waiting ||
      query.workflow ||
      query.q ||
      query.parent ||
      query.tag?.length ||
      query.meta?.length,
  );
}
