/**
 * How deep a JSON text nests, found without parsing it. JSON.parse copes with a megabyte of `[`, but
 * JSON.stringify (storing a value, answering with it, showing it) recurses and overflows the stack well before
 * that. So every edge that takes JSON in (the HTTP API, server actions, the CLI) refuses text nested deeper
 * than MAX_DEPTH, and every read of stored JSON (an outside client may have written anything) checks it
 * before walking the value.
 */

export const MAX_DEPTH = 64;

/** The deepest nesting of [ and { outside strings; one pass, no recursion. */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
