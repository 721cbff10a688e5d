/**
 * How the runs list reads a tag or metadata filter (RunStore.listRuns's `tags` and `meta`) on both backends,
 * from the tags' own indexes (run_tags_tag, run_metadata_key_value) rather than by a scan of runs:
 *
 * - narrow: the rarest of the filter's tags and key=value pairs is on at most NARROW_RUNS runs. The page is
 *   read from those runs alone (one index range, each run by its key, sorted by place), whatever the store's size.
 * - wide: each is on more runs than that. The list reads the top of runs_updated and progress_updated as it does
 *   unfiltered, checking each run's tags by its key; at least one run in every few thousand matches, so a
 *   page is found within the first few thousand runs, never the whole table.
 *
 * Counting is capped at NARROW_RUNS + 1 entries of each index range, so the choice itself costs no more than
 * the narrow read. (Two wide tags that seldom meet are the case neither bounds: then a page reads as far as it
 * takes, like a search that matches nothing.)
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

/** The part to read the page from, given each part's capped count: the rarest, if narrow; null when all are wide. */
export function narrowestPart(parts: TagFilterPart[], counts: number[]): TagFilterPart | null {
  let best: TagFilterPart | null = null;
  let fewest = NARROW_RUNS + 1;
  for (const [i, part] of parts.entries()) {
    if (counts[i]! < fewest) {
      best = part;
      fewest = counts[i]!;
    }
  }
  return best;
}
