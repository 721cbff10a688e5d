/**
 * The edge of the CLI: flags are parsed strictly (node:util parseArgs) and their values checked with zod
 * before anything is opened. Every problem here is a UsageError — exit 2, one line naming the flag.
 */

import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { budgetUsdSchema } from '../domain/budget';
import { jsonProblemMessage, parseJsonInput } from '../domain/json-input';
import { runIdLookup } from '../domain/run-id';
import { prioritySchema } from '../domain/run-limits';
import { metaFilterSchema, tagSchema } from '../domain/run-tags';
import { UsageError } from '../errors';
import { LISTED_STATUSES } from '../store/shared/outside-runs';
import { nearest } from './nearest';

/** Bad syntax or bad values: the command never reached the store. */

/** `--as NAME`: shown in the audit log as given, so bounded and free of control characters. */
export const actorName = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(64, 'must be at most 64 characters')
  .regex(/^[^\p{Cc}]+$/u, 'must not contain control characters');

/** Flags every command accepts, before or after its name. */
export const GLOBAL_OPTIONS = {
  db: { type: 'string' },
  /** Who the audit log records an operator action as; else `cli:<OS user>`. */
  as: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs a parseArgs call, turning its errors into one-line UsageErrors. */
export function flags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code?.startsWith('ERR_PARSE_ARGS')) {
      // Node appends advice about '--' to unknown-option errors; the first sentence names the problem.
      throw new UsageError((error as Error).message.split('. To specify')[0]!);
    }
    throw error;
  }
}

/** Checks one value against a schema; the error names the flag and the first problem. */
export function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new UsageError(`${what}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
}

/** Exactly `names.length` positionals, named in the error when one is missing or extra. */
export function positionals(given: string[], names: string[]): string[] {
  if (given.length < names.length)
    throw new UsageError(
      `missing ${names
        .slice(given.length)
        .map((n) => `<${n}>`)
        .join(' ')}`,
    );
  if (given.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(given[names.length])}`);
  return given;
}

/**
 * The action of a command that has several (`waybill schedule add …`), and its other words. The action may come
 * after global flags (`waybill --db URL schedule add` hands them over first), so it is the first of the actions among
 * the words. None there: the first word past the flags is what was typed instead, an unknown action named with the
 * actions (and the nearest, when one is close), as an unknown command is; no word at all is a missing action.
 */
export function actionOf<A extends string>(args: string[], actions: readonly A[]): { action: A; rest: string[] } {
  const at = args.findIndex((word) => (actions as readonly string[]).includes(word));
  if (at >= 0) return { action: args[at] as A, rest: [...args.slice(0, at), ...args.slice(at + 1)] };
  const use = `use ${actions.slice(0, -1).join(', ')} or ${actions.at(-1)}`;
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) i += args[i] === '--db' || args[i] === '--as' ? 2 : 1;
  const typed = args[i];
  if (typed === undefined) throw new UsageError(`missing action: ${use}`);
  const guess = nearest(typed, [...actions]);
  throw new UsageError(
    `unknown action ${JSON.stringify(typed)}${guess ? `: did you mean ${guess}? (${use})` : `: ${use}`}`,
  );
}

/** What `runs --status` accepts: the run states, and `idle` for an outside client's run with no claim. */
export const statusFilter = z.enum(LISTED_STATUSES);

/** Positive whole numbers from a flag's text: "1.5", "1e3" and "" are refused, not rounded. */
export const count = (max: number) => {
  const says = `must be a whole number, ${max >= Number.MAX_SAFE_INTEGER ? 'at least 1' : `1-${max}`}`;
  return z.string().regex(/^\d+$/, says).transform(Number).pipe(z.number().int().min(1, says).max(max, says));
};

/** A budget from a flag's text: plain decimal dollars ("2.50"), then the one budget rule (lib/domain/budget). */
export const usd = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a number of US dollars, like 2.50')
  .transform(Number)
  .pipe(budgetUsdSchema);

/** A priority from a flag's text: a whole number, maybe negative, then the one priority rule (lib/domain/run-limits). */
export const priorityFlag = z
  .string()
  .regex(/^-?\d+$/, 'must be a whole number, like 10 or -5')
  .transform(Number)
  .pipe(prioritySchema);

/**
 * Ids we look up but did not necessarily create: run ids, and the keys, worker and workflow names outside
 * clients chose too, all under the run-id lookup rule (lib/domain/run-id).
 */
export const lookupId = runIdLookup;

/** Repeated `--tag T` flags (start and the runs list), each by the tag rule; undefined when none is given. */
export function tagFlags(values: string[] | undefined): string[] | undefined {
  return values?.length ? values.map((tag) => check(tagSchema, tag, '--tag')) : undefined;
}

/** Repeated `--meta key=value` flags, each by the metadata rule; undefined when none is given. */
export function metaFlags(values: string[] | undefined): { key: string; value: string }[] | undefined {
  return values?.length ? values.map((pair) => check(metaFilterSchema, pair, '--meta')) : undefined;
}

/**
 * Reads a JSON flag: the text itself, `@path` for a file, `@-` for standard input; held to the API's rule for
 * operator JSON (lib/domain/json-input), with `maxBytes` its WAYBILL_MAX_BODY_BYTES.
 */
export function jsonArg(value: string, flag: string, maxBytes: number): unknown {
  let text = value;
  if (value.startsWith('@')) {
    const path = value.slice(1);
    try {
      text = readFileSync(path === '-' ? 0 : path, 'utf8');
    } catch (error) {
      throw new UsageError(
        `${flag}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }
  const parsed = parseJsonInput(text, { maxBytes });
  if (!parsed.ok) throw new UsageError(jsonProblemMessage(flag, parsed.problem));
  return parsed.value;
}
