/**
 * The step page's address as given: the run id (Next 16 hands pages and layouts the segment still
 * percent-encoded) and the step as typed, which may not be a step number at all.
 */
export interface StepAddress {
  runId: string;
  /** The segment as typed: "12", or "abc" when someone edited the URL. */
  given: string;
  /** The step number, or null when `given` is not one. */
  step: number | null;
}

export function stepAddress(params: { id: string; n: string }): StepAddress | null {
  let runId: string;
  let given: string;
  try {
    runId = decodeURIComponent(params.id);
    given = decodeURIComponent(params.n);
  } catch {
    return null;
  }
  if (!runId || runId.length > 512) return null;
  return { runId, given, step: /^\d{1,15}$/.test(given) ? Number(given) : null };
}
