/**
 * Waybill's PostgreSQL functions as they are now, one file each: code that runs, kept beside the TypeScript that
 * calls it rather than in migrations (which say only how the schema changed, and keep the older texts as history).
 * Opening a store applies them with CREATE OR REPLACE, in the migration's transaction and under its lock
 * (postgres/migrate.ts), when the store recorded an older set in waybill_functions (or another text of this
 * version). Change a text, raise the version: a store never takes an older set back. Strings, not
 * .sql files, so that whatever bundles the library carries them.
 *
 * CREATE OR REPLACE keeps a function's name, arguments and return type: changing any of those takes a migration
 * that drops the old signature, and the new text here.
 */
import { createHash } from 'node:crypto';
import type { FunctionSet } from '../../migrate/runner';
import { CLAIM_BATCH_FUNCTION } from './batch';
import { CLAIM_FUNCTION } from './claim';
import { COMMIT_FIELDS_FUNCTION, COMMIT_FUNCTION } from './commit';
import { COMMIT_BATCH_FUNCTION } from './commit-batch';
import { COMMITTED_CHANGED_FUNCTION, PROGRESS_COUNTED_FUNCTION } from './committed-count';
import { EARLIER_START_FUNCTION } from './earlier-starts';
import { LIMIT_KEY_ESCAPED_FUNCTION, LIMIT_KEY_FUNCTION } from './limit-key';
import { LONE_RUNS_ROW_FUNCTION } from './lone-runs';
import { NOTIFY_RUNNABLE_FUNCTION } from './notify';
import { SAVE_PROGRESS_FUNCTION } from './progress';

/**
 * In an order in which each is created after what it calls: PL/pgSQL looks callees up when it runs, but an SQL
 * function's body (waybill_commit's) is checked when it is created.
 */
const STATEMENTS = [
  SAVE_PROGRESS_FUNCTION,
  CLAIM_FUNCTION,
  COMMIT_FIELDS_FUNCTION,
  COMMIT_FUNCTION,
  CLAIM_BATCH_FUNCTION,
  COMMIT_BATCH_FUNCTION,
  NOTIFY_RUNNABLE_FUNCTION,
  COMMITTED_CHANGED_FUNCTION,
  PROGRESS_COUNTED_FUNCTION,
  LONE_RUNS_ROW_FUNCTION,
  LIMIT_KEY_ESCAPED_FUNCTION,
  LIMIT_KEY_FUNCTION,
  EARLIER_START_FUNCTION,
];

export const POSTGRES_FUNCTIONS: FunctionSet = {
  version: 12,
  hash: createHash('sha256').update(STATEMENTS.join('\n;\n')).digest('hex'),
  statements: STATEMENTS,
};
