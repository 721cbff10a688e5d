/**
 * Field rules more than one operation uses, so the dashboard, the API and the CLI accept and refuse the
 * same text everywhere.
 */
import { z } from 'zod';
import { keyProblem } from '../checkpoint/keys';
import { runIdLookup } from '../domain/run-id';
import { META_KEYS_PER_RUN, metaFilterSchema, TAGS_PER_RUN, tagSchema } from '../domain/run-tags';
import { storableText } from '../domain/text';
import { reasonSchema } from '../reason';
import { WAIT_KINDS } from '../store/contract/waits';

/** The operator's reason (the confirm dialog's, `--reason`): trimmed, ≤ 500 characters, no control characters. */
export const reasonField = reasonSchema;

/** A claim's key: the rule every key was written under (runOnce and the protocol, lib/checkpoint/keys). */
export const claimKey = z.string({ error: 'must be a string' }).superRefine((key, ctx) => {
  const problem = keyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Notes: any text a store can keep (lib/domain/text.ts), bounded. */
export const note = (max: number) =>
  z.string({ error: 'must be text' }).max(max, `must be at most ${max} characters`).superRefine(storableText);

/** A run id to act on or filter by: the lookup rule (lib/domain/run-id), looser than a new run's id. */
export const runRef = runIdLookup;

/** A workflow's name, the rule defineWorkflow and the protocol's begin name one by. */
export const workflowRef = z
  .string({ error: 'must be a workflow name' })
  .regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a workflow name (1-64 lowercase letters, digits and dashes)');

/** A step's number, as a step's page, its API route and `waybill step` name it. */
export const stepField = z
  .number({ error: 'must be a step number' })
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

/** Text to match exactly (an actor's name): bounded, and text a store can keep, as what it is matched with. */
export const exactText = (max: number) =>
  z
    .string({ error: 'must be text' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .superRefine(storableText);

/** The runs list's `waiting` filter (the API's ?waiting=, the CLI's --waiting, bulk by filter): a wait's kind. */
export const waitingFilter = z.enum(WAIT_KINDS, { error: `must be one of ${WAIT_KINDS.join(', ')}` });

/**
 * `waiting` lists runs parked on a wait of that kind, so it is status `waiting` by definition: with another
 * status the two contradict each other, and the request is refused naming `waiting` rather than answered empty.
 */
export function waitingMatchesStatus(filter: { status?: string; waiting?: string }): boolean {
  return filter.waiting === undefined || filter.status === undefined || filter.status === 'waiting';
}
export const WAITING_WITH_STATUS = 'lists waiting runs only: leave status out, or make it waiting';

/**
 * The runs list's tag and metadata filters (the API's ?tag= &meta=, the CLI's --tag --meta, the runs page, bulk by
 * filter): runs with every tag, and every `key=value`; no more of either than a run can carry.
 */
export const tagFilter = z
  .array(tagSchema, { error: 'must be a list of tags' })
  .max(TAGS_PER_RUN, `must be at most ${TAGS_PER_RUN} tags`);
export const metaFilter = z
  .array(metaFilterSchema, { error: 'must be a list of key=value' })
  .max(META_KEYS_PER_RUN, `must be at most ${META_KEYS_PER_RUN} key=value pairs`);

/**
 * The metadata filter kept as its `key=value` texts, each checked by the rule (bulk by filter, whose filter is the
 * runs page's URL as it stands); metaPairs reads them.
 */
export const metaTextFilter = z
  .array(z.string({ error: 'must be key=value' }), { error: 'must be a list of key=value' })
  .max(META_KEYS_PER_RUN, `must be at most ${META_KEYS_PER_RUN} key=value pairs`)
  .superRefine((texts, ctx) => {
    for (const [i, text] of texts.entries()) {
      const checked = metaFilterSchema.safeParse(text);
      if (!checked.success) ctx.addIssue({ code: 'custom', path: [i], message: checked.error.issues[0]!.message });
    }
  });

/** metaTextFilter's texts as the store's pairs; undefined for none. */
export function metaPairs(texts: string[] | undefined): { key: string; value: string }[] | undefined {
  return texts?.length ? texts.map((text) => metaFilterSchema.parse(text)) : undefined;
}
