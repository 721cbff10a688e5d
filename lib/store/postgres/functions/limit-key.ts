/**
 * waybill_limit_key: a run's key under a limit's path (a text[] of field names) from its stored input, as
 * lib/domain/run-limits.ts limitKeyOf reads it: a string is itself, a number or a boolean its JSON text, anything
 * else `""`. PostgreSQL's form of shared/run-limits-sql.ts limitKeySql, which the pick and a held run's reason and
 * place in line read.
 *
 * jsonb refuses a whole document holding a NUL escape (`\u0000`, 22P05) or an unpaired surrogate escape (22P02)
 * anywhere in it, where JSON.parse (so limitKeyOf) and SQLite read it. lib/domain/text.ts refuses both in a new
 * input, but a store keeps the rows written before, and outside clients write runs too: one such row failed every
 * pick of its workflow, and every run of it stayed queued. So an input holding any `\u` escape is read by
 * waybill_limit_key_escaped, which cannot fail; any other is cast inline, as before (waybill_limit_key is a SQL
 * function the planner inlines): a PL/pgSQL call and its subtransaction cost more than the cast itself, and a pick
 * pays them for every held run it passes (bench/limits-pick.ts), where the common input now pays for a strpos. The
 * price: a text jsonb refuses for another reason (no JSON at all, a number beyond numeric's range, nesting deeper
 * than the stack) still fails the pick unless it holds a `\u`. No writer of Waybill's makes one (each writes
 * JSON.stringify's text, which jsonb refuses only for such escapes).
 *
 * waybill_limit_key_escaped catches the cast's error and reads the text again with each escape jsonb refuses made
 * `\ufffd` (what a store keeps in place of text it cannot hold, lib/domain/text.ts): the key is limitKeyOf's unless
 * it holds such an escape itself. A text that still does not read (no JSON, a number beyond numeric's range, nesting
 * deeper than the stack) has the key `""`, as limitKeyOf gives a text JSON.parse refuses. Its EXCEPTION block is a
 * subtransaction per call; it writes nothing, so it takes no transaction id and cannot fill the subtransaction cache
 * (functions/batch.ts). PARALLEL UNSAFE: PostgreSQL before 17 refuses to begin a subtransaction in a parallel query.
 */

/** A backslash that begins an escape: after an even run of backslashes (escaped backslashes), kept as group 1. */
const ESCAPE_BEGINS = String.raw`(?<!\\)((?:\\\\)*)`;
const HIGH = String.raw`\\u[dD][89abAB][0-9a-fA-F]{2}`;
const LOW = String.raw`\\u[dD][c-fC-F][0-9a-fA-F]{2}`;

/** Not right after a high surrogate's escape (one that begins an escape itself). */
const NO_HIGH_BEFORE = String.raw`(?<!(?:^|[^\\])(?:\\\\)*${HIGH})`;

/**
 * The escapes jsonb refuses: `\u0000`, a high surrogate no low one follows, a low surrogate that follows no high one.
 * A pair is one character, and stays.
 */
const UNREADABLE_ESCAPE = String.raw`${ESCAPE_BEGINS}(?:\\u0000|${HIGH}(?!${LOW})|${NO_HIGH_BEFORE}${LOW})`;

/** What each becomes: the backslashes before it (group 1), then U+FFFD's escape. */
const READABLE = String.raw`\1\\ufffd`;

/** Dollar-quoted: no setting of standard_conforming_strings changes a backslash in it. */
const quoted = (text: string) => `$q$${text}$q$`;

/** The key of the jsonb `json` under p_path. */
const keyOf = (json: string) =>
  `CASE WHEN jsonb_typeof(${json} #> p_path) IN ('string', 'number', 'boolean') THEN ${json} #>> p_path ELSE '' END`;

export const LIMIT_KEY_ESCAPED_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_limit_key_escaped(p_input text,
  p_path text[]) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
DECLARE
  v jsonb;
BEGIN
  BEGIN
    v := p_input::jsonb;
  EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    BEGIN
      v := regexp_replace(p_input, ${quoted(UNREADABLE_ESCAPE)}, ${quoted(READABLE)}, 'g')::jsonb;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
      v := NULL;
    END;
  END;
  RETURN ${keyOf('v')};
END
$$`;

/** After waybill_limit_key_escaped, which it calls (a SQL function's body is checked when it is created). */
export const LIMIT_KEY_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_limit_key(p_input text, p_path text[])
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN strpos(p_input, ${quoted(String.raw`\u`)}) = 0 THEN ${keyOf('p_input::jsonb')}
    ELSE waybill_limit_key_escaped(p_input, p_path) END
$$`;
