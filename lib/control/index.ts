/**
 * lib/control: every operator operation, written once — start, pause, resume, cancel, retry (runs, one or
 * every run a filter matches: bulk), expire, resolve, sweep (claims), prune (retention), run tokens (tokens)
 * — the audit log's reader, the usage ledger's (usage), and the one judgement of a stalled run (stalled). Each takes the caller, decides
 * whether it may, validates, calls the store and records its audit line. Server actions, API routes and CLI
 * commands only parse their input, build the caller and shape the answer. No next/*, no react.
 */

export { ControlInputError, type FieldErrors, ForbiddenError, LiveClaimError, StartRefusedError } from '../errors';
export * as audit from './audit';
export * as bulk from './bulk';
export { authorize, type Caller, type Channel, type Role } from './caller';
export * as claims from './claims';
export * as events from './events';
export * as logs from './logs';
export * as retention from './retention';
export * as rewind from './rewind';
export * as runs from './runs';
export * as schedules from './schedules';
export * as stalled from './stalled';
export * as steps from './steps';
export type { ControlDeps, ControlStore } from './store';
export * as tokens from './tokens';
export * as usage from './usage';
export * as waits from './waits';
export * as webhooks from './webhooks';
