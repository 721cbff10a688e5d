/**
 * A W3C trace context (https://www.w3.org/TR/trace-context/#traceparent-header): what a run's start takes
 * (the API's body field and header, the CLI's --traceparent, the library's option) and keeps with the run.
 * Version 00's form; a later version's first four fields are read the same, as the spec asks.
 */
import { z } from 'zod';

const FORM = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Why a traceparent is not one, or undefined when it is. */
export function traceparentProblem(value: string): string | undefined {
  const m = FORM.exec(value);
  if (!m) return 'must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lowercase';
  if (m[1] === 'ff') return 'must not have version ff';
  if (/^0+$/.test(m[2]!)) return 'must not have an all-zero trace id';
  if (/^0+$/.test(m[3]!)) return 'must not have an all-zero span id';
  return undefined;
}

export const traceparentSchema = z.string().superRefine((value, ctx) => {
  const problem = traceparentProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});
