/**
 * An operator's reason for a cancel, an expiry or a sweep, kept by the audit log. One schema for the
 * dashboard's actions and the CLI's `--reason`, so both accept and refuse the same text.
 */
import { z } from 'zod';
import { storableText } from './domain/text';

export const REASON_MAX = 500;

/**
 * Optional; blank is no reason. Control characters would forge line breaks in the log and the audit page; an
 * unpaired surrogate would be kept as U+FFFD, another text than the operator's (lib/domain/text.ts).
 */
export const reasonSchema = z
  .string({ error: 'must be text' })
  .trim()
  .max(REASON_MAX, `at most ${REASON_MAX} characters`)
  .refine((text) => ![...text].some(isControl), { message: 'must not contain control characters', abort: true })
  .superRefine(storableText)
  .optional()
  .transform((text) => (text ? text : undefined));

/** The audit line's detail: what the action itself notes ("forced: …"), then the operator's reason. */
export function auditDetail(parts: { note?: string | null; reason?: string }): string | null {
  const text = [parts.note, parts.reason ? `reason: ${parts.reason}` : null].filter(Boolean).join('; ');
  return text || null;
}

/** C0 controls and DEL; a tab is allowed (pasted text has them), a line break is not. */
function isControl(char: string): boolean {
  const code = char.codePointAt(0)!;
  return (code < 0x20 && code !== 0x09) || code === 0x7f;
}
