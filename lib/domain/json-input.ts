/**
 * Operator JSON input: the one rule every edge that takes JSON from a person or a program applies (the HTTP
 * API's bodies, the dashboard's forms, the CLI's --input and --result), in one order: size, nesting, parse.
 *
 * Nesting is checked before parsing and without it. JSON.parse copes with a megabyte of `[`, but
 * JSON.stringify (storing a value, answering with it, showing it) recurses and overflows the stack well before
 * that. Every read of stored JSON (an outside client may have written anything) checks the same depth before
 * walking the value.
 */

export const MAX_DEPTH = 64;

export type JsonInputProblem =
  | { kind: 'too_large'; bytes: number; limit: number }
  | { kind: 'too_deep'; depth: number; limit: number }
  | { kind: 'not_json'; position: number; line: number; column: number; reason: string };

export type JsonInput = { ok: true; value: unknown } | { ok: false; problem: JsonInputProblem };

/**
 * The size half of the rule, alone: what a form checks in the browser before it sends a text the server would
 * refuse unread (a body past Next.js's own limit for an action is a 413 the page cannot show beside the field).
 * TextEncoder, which the browser has too, where Buffer is Node's.
 */
export function sizeProblem(text: string, maxBytes: number): JsonInputProblem | null {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: a text short enough needs no encoding to pass.
  if (text.length * 3 <= maxBytes) return null;
  const bytes = new TextEncoder().encode(text).length;
  return bytes > maxBytes ? { kind: 'too_large', bytes, limit: maxBytes } : null;
}

/**
 * `text` parsed, or what is wrong with it. `maxBytes`: the limit in UTF-8 bytes, as stored
 * (WAYBILL_MAX_BODY_BYTES); null where the edge bounded the bytes already, as the API does while it reads.
 */
export function parseJsonInput(text: string, { maxBytes }: { maxBytes: number | null }): JsonInput {
  const large = maxBytes === null ? null : sizeProblem(text, maxBytes);
  if (large) return { ok: false, problem: large };
  const depth = nestingDepth(text);
  if (depth > MAX_DEPTH) return { ok: false, problem: { kind: 'too_deep', depth, limit: MAX_DEPTH } };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    const reason = (error as Error).message;
    const at = /at position (\d+)/.exec(reason)?.[1];
    const position = at === undefined ? text.length : Number(at);
    return { ok: false, problem: { kind: 'not_json', position, ...lineColumn(text, position), reason } };
  }
}

/** What is wrong, as a field error says it of its field: "nests 81 levels deep: the limit is 64". */
export function jsonProblemText(problem: JsonInputProblem): string {
  const n = (value: number) => value.toLocaleString('en-US');
  switch (problem.kind) {
    case 'too_large':
      return `is ${n(problem.bytes)} bytes: the limit is ${n(problem.limit)} bytes (WAYBILL_MAX_BODY_BYTES)`;
    case 'too_deep':
      return `nests ${n(problem.depth)} levels deep: the limit is ${problem.limit}`;
    case 'not_json':
      return `is not valid JSON at line ${problem.line} column ${problem.column} (position ${problem.position}): ${problem.reason}`;
  }
}

/** The same with its subject, as one line of an error: "--input nests 81 levels deep: the limit is 64". */
export function jsonProblemMessage(subject: string, problem: JsonInputProblem): string {
  return `${subject} ${jsonProblemText(problem)}`;
}

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

function lineColumn(text: string, position: number): { line: number; column: number } {
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  return { line, column: position - before.lastIndexOf('\n') };
}
