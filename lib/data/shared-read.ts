import 'server-only';

/**
 * A page read shared by every request of this server process for a second: ten browsers refreshing every two
 * seconds cost one read, not ten, and what it shows is never more than a second behind. The runs page's cards,
 * waiting line, stall facts and workflow choices are read this way; its list of runs is read per request.
 */

const SHARED_FOR_MS = 1000;

/** `read` at most once per SHARED_FOR_MS; a failed read is not kept, so the next request tries again. */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  let kept: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (!kept || now - kept.at >= SHARED_FOR_MS) {
      const value = read();
      kept = { at: now, value };
      value.catch(() => {
        if (kept?.value === value) kept = null;
      });
    }
    return kept.value;
  };
}
