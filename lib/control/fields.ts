/**
 * Field rules more than one operation uses, so the dashboard, the API and the CLI accept and refuse the
 * same text everywhere.
 */
import { z } from 'zod';
import { keyProblem } from '../checkpoint/keys';
import { reasonSchema } from '../reason';

/** The operator's reason (the confirm dialog's, `--reason`): trimmed, ≤ 500 characters, no control characters. */
export const reasonField = reasonSchema;

/** A claim's key: the rule every key was written under (runOnce and the protocol, lib/checkpoint/keys). */
export const claimKey = z.string({ error: 'must be a string' }).superRefine((key, ctx) => {
  const problem = keyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** Notes: any text but NUL (PostgreSQL's text cannot hold it), bounded. */
export const note = (max: number) => z.string({ error: 'must be text' }).max(max, `must be at most ${max} characters`)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');
