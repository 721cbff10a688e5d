/**
 * A run's tags and metadata (lib/domain/run-tags.ts says what they may be): set at its start (RunStore.createRun,
 * in the insert's own transaction), changed from inside the run (ctx.setTags, ctx.addTags, ctx.setMetadata), and
 * filtered by in the runs list (RunStore.listRuns's `tags` and `meta`).
 */

export interface RunTags {
  /** Sorted bytewise, as both backends order them. */
  tags: string[];
  /** Keys sorted bytewise. */
  metadata: Record<string, string>;
}

/** A change to a run's tags and metadata; each part left out is left as it is. */
export interface RunTagChange {
  /** The run's tags become exactly these. */
  tags?: string[];
  /** Added to the run's tags (after `tags`, when both are given). */
  addTags?: string[];
  /** Merged into the run's metadata: each key given takes its value, the others stay. */
  metadata?: Record<string, string>;
}

export interface RunTagStore {
  /**
   * Changes a run's tags and metadata in one transaction and answers them as they then are. Safe to repeat: the
   * same change twice leaves what once does. NotFoundError for a run with no row (an outside client's run);
   * InvalidInputError, nothing written, when the result would pass a per-run limit (lib/domain/run-tags.ts).
   */
  tagRun(id: string, change: RunTagChange): Promise<RunTags>;

  /** A run's tags and metadata: none for a run that has none, or no row. */
  getRunTags(id: string): Promise<RunTags>;

  /** getRunTags for each of a page's runs, read at once: every id given has its entry. */
  getRunTagsOf(ids: string[]): Promise<Map<string, RunTags>>;
}
