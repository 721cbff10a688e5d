/**
 * A form's own check of a JSON field against WAYBILL_MAX_BODY_BYTES, made before it sends. Past Next.js's limit
 * for an action's body (next.config.js) the server answers 413 without reading it: no field error can come back,
 * the page shows "Something went wrong" and what was typed is lost. The rule and its words are the server's own
 * (lib/domain/json-input), so a text refused here reads as the action would have answered it.
 */
import { jsonProblemText, sizeProblem } from '@/lib/domain/json-input';

/** The field error for `text` past `maxBytes` (WAYBILL_MAX_BODY_BYTES), or null when it may be sent. */
export function tooLargeText(text: string, maxBytes: number): string | null {
  const large = sizeProblem(text, maxBytes);
  return large && jsonProblemText(large);
}
