/**
 * How the runs list reads a tag or metadata filter (RunStore.listRuns's `tags` and `meta`) on both backends,
 * from the tags' own indexes (run_tags_tag, run_metadata_key_value) rather than by a scan of runs:
 *
 * - narrow: the rarest of the filter's tags and key=value pairs is on at most NARROW_RUNS runs. The page is
 *   read from those runs alone (one index range, each run by its key, sorted by place), whatever the store's size.
 * - wide: each is on more runs than that. The list reads the top of runs_updated and progress_updated as it does
 *   unfiltered, checking each run's tags by its key. More than NARROW_RUNS of the store's N runs match, so a page
 *   of 50 is found within about 50 × N / NARROW_RUNS runs (2,500 at 100,000 runs, the same share at any size).
 *
 * Counting is capped at NARROW_RUNS + 1 entries of each index range, so the choice itself costs no more than
 * the narrow read. Wide parts that seldom meet (each on half the runs, together on none) would leave the wide read
 * going through every run; narrowestPart counts how many meet, from the first part's range, and reads a narrow
 * page from it when few do.
 */

export const NARROW_RUNS = 2_000;

export type TagFilterPart = { tag: string } | { key: string; value: string };

/** The filter's parts, each to be counted; null when the filter has none. */
export function tagFilterParts(filter: {
  tags?: string[];
  meta?: { key: string; value: string }[];
}): TagFilterPart[] | null {
  const parts: TagFilterPart[] = [...(filter.tags ?? []).map((tag) => ({ tag })), ...(filter.meta ?? [])];
  return parts.length ? parts : null;
}

/**
 * The filter less one of its parts (every repeat of it): what a run read from that part's own index range is still
 * to be checked for. Checking a run for the part it was found by again cost SQLite a parse of the filter's JSON per
 * run (json_each), most of a narrow page's read.
 */
export function filterBesides(
  filter: { tags?: string[]; meta?: { key: string; value: string }[] },
  part: TagFilterPart,
): { tags: string[]; meta: { key: string; value: string }[] } {
  return {
    tags: (filter.tags ?? []).filter((tag) => !('tag' in part) || tag !== part.tag),
    meta: (filter.meta ?? []).filter((m) => !('key' in part) || m.key !== part.key || m.value !== part.value),
  };
}

/** Whether the filter's parts are all wide and more than one: then the count of those that meet decides. */
export function meetingCounts(parts: TagFilterPart[], counts: number[]): boolean {
  return parts.length > 1 && counts.every((n) => n > NARROW_RUNS);
}

/**
 * The part to read the page from, given each part's capped count: the rarest, if narrow. When every part is wide
 * and there are more (meetingCounts), `meeting` is how many runs of the first part carry the whole filter (capped):
 * few of them (wide parts that seldom meet) and the page is read from that part, whose range is then read whole,
 * bounded by its own runs rather than by all of them. Null: the wide read.
 */
export function narrowestPart(parts: TagFilterPart[], counts: number[], meeting: number | null): TagFilterPart | null {
  let best: TagFilterPart | null = null;
  let fewest = NARROW_RUNS + 1;
  for (const [i, part] of parts.entries()) {
    if (counts[i]! < fewest) {
      best = part;
      fewest = counts[i]!;
    }
  }
  if (!best && meeting !== null && meeting <= NARROW_RUNS) return parts[0]!;
  return best;
}

/** A count a second old chooses the read as well as a fresh one. */
const KEPT_FOR_MS = 1000;
const KEPT_MAX = 256;

/**
 * The counts above, kept for a second per store and shared by the requests in it (a dashboard refreshing a filtered
 * list counted the same parts on every request: on PostgreSQL three statements for a tag and a pair). A count only
 * chooses how the page is read, never which runs are on it: the narrow read and the wide one both check every part
 * of the filter on every run they read. The one exception is a meeting count of 0, which empties the page without
 * a read; it is never kept, so an empty page is only ever decided on a count made now.
 */
export class KeptCounts {
  private readonly kept = new Map<string, { at: number; n: number }>();

  /**
   * The count of `part`'s runs made within the last second, if any; with `meeting` (the filter's parts), of those
   * of its runs that carry all of them.
   */
  get(part: TagFilterPart, meeting: TagFilterPart[] | null): number | undefined {
    const entry = this.kept.get(KeptCounts.key(part, meeting));
    return entry && Date.now() - entry.at < KEPT_FOR_MS ? entry.n : undefined;
  }

  /** Keeps that count, unless it is a meeting count of 0 (see above), and returns it. */
  keep(part: TagFilterPart, meeting: TagFilterPart[] | null, n: number): number {
    if (meeting && n === 0) return n;
    if (this.kept.size >= KEPT_MAX) this.kept.clear();
    this.kept.set(KeptCounts.key(part, meeting), { at: Date.now(), n });
    return n;
  }

  private static key(part: TagFilterPart, meeting: TagFilterPart[] | null): string {
    return JSON.stringify(meeting ? ['meeting', part, meeting] : ['alone', part]);
  }
}

const keptBy = new WeakMap<object, KeptCounts>();

/** The kept counts of one store, by its connection object. */
export function keptCounts(connection: object): KeptCounts {
  let kept = keptBy.get(connection);
  if (!kept) {
    kept = new KeptCounts();
    keptBy.set(connection, kept);
  }
  return kept;
}

/** Rows of run_tags and run_metadata, ordered by run, as each run's RunTags; every id given has its entry. */
export function runTagsOf(
  ids: string[],
  tags: { run_id: string; tag: string }[],
  metadata: { run_id: string; key: string; value: string }[],
): Map<string, { tags: string[]; metadata: Record<string, string> }> {
  const out = new Map(ids.map((id) => [id, { tags: [] as string[], metadata: {} as Record<string, string> }]));
  for (const row of tags) out.get(row.run_id)?.tags.push(row.tag);
  for (const row of metadata) {
    const entry = out.get(row.run_id);
    if (entry) entry.metadata[row.key] = row.value;
  }
  return out;
}
