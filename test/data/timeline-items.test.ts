import { describe, expect, it } from 'vitest';
import { countByKind, timelineItems } from '../../app/runs/[id]/timeline-items';
import type { AuditEntry, StepEvent } from '../../lib/store/contract';

let nextId = 1;
function event(e: Partial<StepEvent> & Pick<StepEvent, 'outcome' | 'at'>): StepEvent {
  return {
    id: nextId++,
    runId: 'r1',
    idemKey: null,
    step: null,
    count: 1,
    durationMs: null,
    workerId: null,
    detail: null,
    attempt: null,
    maxAttempts: null,
    retryAt: null,
    previousWorkerId: null,
    previousAttempt: null,
    ...e,
  };
}
function audit(a: Partial<AuditEntry> & Pick<AuditEntry, 'action' | 'at'>): AuditEntry {
  return { id: nextId++, actor: 'alice (operator)', role: 'operator', target: 'r1', runId: 'r1', detail: null, ...a };
}

describe('the run timeline', () => {
  it('lists newest first and shows each operator action once, with its transition and reason', () => {
    const events = [
      event({ outcome: 'operator', at: 100, detail: 'started by alice (operator)' }),
      event({ outcome: 'executed', at: 101, step: 0, idemKey: 'r1:step:0' }),
      event({
        outcome: 'expired',
        at: 102,
        step: 1,
        idemKey: 'r1:step:1',
        detail: 'expired by alice (operator): the step will run again',
      }),
      event({ outcome: 'failed', at: 103, step: 1, detail: 'boom' }),
      event({ outcome: 'operator', at: 104, detail: 'cancel by alice (operator): running → cancelled' }),
      event({ outcome: 'operator', at: 105, detail: 'retry by cli:root: cancelled → queued' }),
    ];
    const entries = [
      audit({ action: 'start', at: 100, detail: 'agent-batch' }),
      audit({ action: 'expire', at: 102, target: 'r1:step:1', detail: 'reason: the provider never got it' }),
      audit({ action: 'cancel', at: 104.2, detail: 'reason: wrong input' }),
    ];
    const items = timelineItems(events, entries);
    // Six events and three audit lines are six items: three actions absorbed their events; the CLI's retry
    // (no audit line) stays an event.
    expect(items.map((i) => (i.type === 'action' ? `action:${i.entry.action}` : `event:${i.event.outcome}`))).toEqual([
      'event:operator',
      'action:cancel',
      'event:failed',
      'action:expire',
      'event:executed',
      'action:start',
    ]);
    const cancel = items[1]!;
    expect(cancel).toMatchObject({
      type: 'action',
      transition: 'running → cancelled',
      entry: { detail: 'reason: wrong input' },
    });
    expect(items.filter((i) => i.type === 'event' && i.event.outcome === 'operator')).toHaveLength(1);
    expect(countByKind(items)).toEqual({ steps: 1, failures: 1, claims: 0, operator: 4 });
  });

  it("does not pair an action with another actor's event, or with one far apart in time", () => {
    const events = [
      event({ outcome: 'operator', at: 10, detail: 'pause by bob (operator): running → paused' }),
      event({ outcome: 'operator', at: 500, detail: 'pause by alice (operator): running → paused' }),
    ];
    const items = timelineItems(events, [audit({ action: 'pause', at: 11 })]);
    expect(items.map((i) => i.type)).toEqual(['event', 'action', 'event']);
    expect(items[1]).toMatchObject({ type: 'action', event: null, transition: null });
  });

  it('pairs two identical actions one to one', () => {
    const events = [
      event({ outcome: 'operator', at: 10, detail: 'pause by alice (operator): running → paused' }),
      event({ outcome: 'operator', at: 12, detail: 'resume by alice (operator): paused → queued' }),
      event({ outcome: 'operator', at: 14, detail: 'pause by alice (operator): queued → paused' }),
    ];
    const items = timelineItems(events, [
      audit({ action: 'pause', at: 10 }),
      audit({ action: 'resume', at: 12 }),
      audit({ action: 'pause', at: 14 }),
    ]);
    expect(items.map((i) => (i.type === 'action' ? i.transition : 'event'))).toEqual([
      'queued → paused',
      'paused → queued',
      'running → paused',
    ]);
  });

  it('shows each decision on a wait once, as its audit line with who and the note; a timeout stays an event', () => {
    // What the store writes (lib/store/shared/waits.ts decisionDetail) and lib/control/waits.ts audits.
    const events = [
      event({ outcome: 'operator', at: 20, detail: 'approval review approved by alice (operator): ship it' }),
      event({ outcome: 'operator', at: 30, detail: 'signal go signalled by bob (operator)' }),
      event({ outcome: 'operator', at: 40, detail: 'approval second rejected by alice (operator): wrong amount' }),
      event({ outcome: 'operator', at: 50, detail: 'approval third timed out by timeout' }),
      // Another wait's decision by the same person at the same moment is not this audit line's event.
      event({ outcome: 'operator', at: 20.5, detail: 'approval other approved by alice (operator)' }),
    ];
    const entries = [
      audit({ action: 'approve', at: 20.1, target: 'r1/review', detail: 'ship it' }),
      audit({ action: 'signal', at: 30.1, actor: 'bob (operator)', target: 'r1/go' }),
      audit({ action: 'reject', at: 40.1, target: 'r1/second', detail: 'wrong amount' }),
    ];
    const items = timelineItems(events, entries);
    expect(items.map((i) => (i.type === 'action' ? `action:${i.entry.action}` : `event:${i.event.detail}`))).toEqual([
      'event:approval third timed out by timeout',
      'action:reject',
      'action:signal',
      'event:approval other approved by alice (operator)',
      'action:approve',
    ]);
    const approve = items.find((i) => i.type === 'action' && i.entry.action === 'approve')!;
    expect(approve).toMatchObject({
      entry: { actor: 'alice (operator)', target: 'r1/review', detail: 'ship it' },
      event: { detail: 'approval review approved by alice (operator): ship it' },
    });
    expect(countByKind(items)).toEqual({ steps: 0, failures: 0, claims: 0, operator: 5 });
  });
});
