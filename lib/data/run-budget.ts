import 'server-only';
/**
 * The run page's one read of its model-call ledger (lib/control/usage, as `waybill inspect` and
 * GET /api/v1/runs/{id}/usage read it): the usage card shows it, and the budget form what was spent of the budget.
 */
import { type Caller, usage } from '../control';
import type { RunUsage } from '../control/usage';
import { ControlInputError, NotFoundError } from '../errors';
import { controlDeps } from './control';

export async function getRunLedger(caller: Caller, runId: string): Promise<RunUsage | null> {
  return (
    usage
      .ofRun(controlDeps(), caller, { runId })
      // ControlInputError: an id the API cannot name (an outside client's, with a space), whose steps' keys the
      // gateway refuses too: it has no calls to show.
      .catch((error: unknown) =>
        error instanceof NotFoundError || error instanceof ControlInputError ? null : Promise.reject(error),
      )
  );
}
