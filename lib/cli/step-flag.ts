import { z } from 'zod';
import { stepText } from '../control/rewind';

/**
 * `--from-step N|NAME` (rerun, fork, and rerun --all-matching): digits are a step number; other text a step's
 * name or key, resolved in the run.
 */
export const stepFlag = z
  .string()
  .trim()
  .min(1, 'must be a step number or a step name (e.g. --from-step 20, --from-step fetch-3)')
  .pipe(stepText);
