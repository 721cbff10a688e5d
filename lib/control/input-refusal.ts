/** Why a start, a rerun or a fork with an edited input is refused, said the same way by each. */

import { type InputIssue, issuePath } from '../engine/input-check';
import { StartRefusedError } from '../errors';

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
