/**
 * ctx.setTags, ctx.addTags and ctx.setMetadata: a run changing its own tags and metadata (lib/domain/run-tags.ts
 * says what they may be). Each call is a durable step of its own, `tags#<n>` numbered in call order as unnamed
 * sleeps are: a replay skips the calls it made before and answers what they answered, so a change the run made
 * later is never undone by replaying an earlier one. A change that breaks the rules is a bug in the workflow, not
 * something a retry mends: it is NonRetryableError, and nothing of it is written.
 */
import type { z } from 'zod';
import { metadataSchema, tagsSchema } from '../domain/run-tags';
import { InvalidInputError, NonRetryableError } from '../errors';
import type { RunTagChange, RunTagStore, RunTags } from '../store/contract';

export type TagMethod = 'setTags' | 'addTags' | 'setMetadata';

/**
 * `given` by `schema`, or an error naming the call (`where`) and the field: NonRetryableError inside a run, where
 * it is a bug no retry mends, InvalidInputError for a start.
 */
function checked<T>(
  schema: z.ZodType<T>,
  given: unknown,
  where: string,
  field: string,
  Refusal: new (message: string) => Error = NonRetryableError,
): T {
  const parsed = schema.safeParse(given);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new Refusal(`${where}: ${[field, ...issue.path.map(String)].join('.')}: ${issue.message}`);
}

/**
 * A start's tags and metadata, checked as the API and the CLI check them: startRun is exported (waybill/engine),
 * and a caller that skipped the check wrote what no filter could find ("bad tag", a string taken for its letters).
 */
export function startTags(options: { tags?: unknown; metadata?: unknown }): {
  tags: string[];
  metadata: Record<string, string>;
} {
  return {
    tags:
      options.tags === undefined
        ? []
        : (checked(tagsSchema, options.tags, 'start', 'tags', InvalidInputError) as string[]),
    metadata:
      options.metadata === undefined
        ? {}
        : (checked(metadataSchema, options.metadata, 'start', 'metadata', InvalidInputError) as Record<string, string>),
  };
}

/** The change a call asks for, checked; NonRetryableError naming the call and the field when it breaks a rule. */
export function tagChange(method: TagMethod, given: unknown): RunTagChange {
  if (method === 'setMetadata')
    return { metadata: checked(metadataSchema, given, `ctx.${method}`, 'metadata') as Record<string, string> };
  const tags = checked(tagsSchema, given, `ctx.${method}`, 'tags') as string[];
  return method === 'setTags' ? { tags } : { addTags: tags };
}

/** A child's tags and metadata (ctx.startChild's options), checked as a start's. */
export function childTags(
  name: string,
  options: { tags?: unknown; metadata?: unknown },
): { tags?: string[]; metadata?: Record<string, string> } {
  const where = `ctx.startChild(${name})`;
  return {
    ...(options.tags === undefined ? {} : { tags: checked(tagsSchema, options.tags, where, 'tags') as string[] }),
    ...(options.metadata === undefined
      ? {}
      : { metadata: checked(metadataSchema, options.metadata, where, 'metadata') as Record<string, string> }),
  };
}

/** Writes the change (inside the call's step); a result past the per-run limits is NonRetryableError. */
export async function writeTagChange(
  store: RunTagStore,
  runId: string,
  method: TagMethod,
  change: RunTagChange,
): Promise<RunTags> {
  try {
    return await store.tagRun(runId, change);
  } catch (error) {
    if (error instanceof InvalidInputError) throw new NonRetryableError(`ctx.${method}: ${error.message}`);
    throw error;
  }
}
