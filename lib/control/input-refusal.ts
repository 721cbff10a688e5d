/** Why a start, a rerun or a fork with an edited input is refused, said the same way by each. */

import { type InputIssue, issuePath } from '../engine/input-check';
import type { StartCheck } from '../engine/workflow';
import { StartRefusedError } from '../errors';

/**
 * A refused check of a start's input: by the workflow's schema (inputRefused), or by the key one of its limits
 * reads from it (lib/domain/run-limits.ts limitKeyProblem), filed under that field with its own words.
 */
export function startRefused(workflow: string, refused: Extract<StartCheck, { ok: false }>): StartRefusedError {
  const { limitKey } = refused;
  if (!limitKey) return inputRefused(workflow, refused.issues);
  return new StartRefusedError(
    workflow,
    'limit-key',
    limitKey.message,
    { [`input.${limitKey.path}`]: [limitKey.field] },
    refused.issues,
  );
}

/** An input its workflow's schema refuses: each problem under its field (`input.items.0`), the first in the message. */
export function inputRefused(workflow: string, issues: InputIssue[]): StartRefusedError {
  const fields = new Map<string, string[]>();
  for (const issue of issues) {
    const name = issue.path.length ? `input.${issuePath(issue)}` : 'input';
    fields.set(name, [...(fields.get(name) ?? []), issue.message]);
  }
  const [first, messages] = [...fields][0]!;
  return new StartRefusedError(
    workflow,
    'input',
    `input does not match ${workflow}'s schema: ${first}: ${messages[0]}`,
    Object.fromEntries(fields),
    issues,
  );
}
