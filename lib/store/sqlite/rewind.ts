/** Rerun and fork on SQLite: the shared plans (../shared/rewind.ts) driven synchronously inside one BEGIN IMMEDIATE. */

import type { RewindStore } from '../contract/rewind';
import type { Plan } from '../shared/plan';
import { forkPlan, type RewindOutcome, rerunLetGoPlan, rerunPlan, rewindSpanPlan } from '../shared/rewind';
import { forksPlan, readStepPlan, stepOfKeysPlan, tracePlan } from '../shared/step-reads';
import { guard, type SqliteConnection } from './connection';
import { drive } from './plan';

export function sqliteRewind(c: SqliteConnection): RewindStore {
  const run = (make: (now: number) => Plan<RewindOutcome>) => {
    const now = c.now();
    return c.tx(() => drive(c, make(now)));
  };
  return {
    async rerunRun(request) {
      return run((now) => rerunPlan('sqlite', request, now, ''));
    },
    async forkRun(request) {
      return run((now) => forkPlan('sqlite', request, now, ''));
    },
    async rewindSpan(runId, fromStep) {
      return guard(() => drive(c, rewindSpanPlan('sqlite', runId, fromStep)));
    },
    async rerunLetGo(runId, fromStep) {
      return guard(() => drive(c, rerunLetGoPlan('sqlite', runId, fromStep)));
    },
    async readStep(runId, step, limit = 200) {
      return guard(() => drive(c, readStepPlan('sqlite', runId, step, limit)));
    },
    async readTrace(runId, from, count) {
      return guard(() => drive(c, tracePlan('sqlite', runId, from, count)));
    },
    async listForks(runId) {
      return guard(() => drive(c, forksPlan(runId)));
    },
    async stepOfKeys(runId, keys) {
      return guard(() => drive(c, stepOfKeysPlan(runId, keys)));
    },
  };
}
