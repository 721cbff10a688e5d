/**
 * A worker's turn at the schedules: fire what is due (the store's transaction per schedule, with the policy's
 * plan), then cancel the previous runs overlap `cancel` named, through actOnRun so the cancel has its event.
 */
import { InvalidTransitionError, NotFoundError } from '../../errors';
import type { FireOutcome, Store } from '../../store/contract';
import type { Logger } from '../log';
import { planFiring } from './policy';

export async function fireSchedules(store: Store, log: Logger): Promise<FireOutcome> {
  const outcome = await store.fireDueSchedules(planFiring);
  for (const f of outcome.fired) if (f.created) log.info('schedule fired', { schedule: f.schedule, runId: f.runId });
  for (const c of outcome.cancel) {
    // Ended meanwhile, or cancelled by another worker's firing: nothing left to cancel.
    await store.actOnRun(c.runId, 'cancel', `schedule ${c.schedule}`).catch((error) => {
      if (!(error instanceof InvalidTransitionError || error instanceof NotFoundError)) throw error;
    });
  }
  return outcome;
}
