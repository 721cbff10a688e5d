/**
 * lib/control: every operator operation, written once — start, pause, resume, cancel, retry (runs, one or
 * every run a filter matches: bulk), expire, resolve, sweep (claims), prune (retention), run tokens (tokens)
 * — the audit log's reader, and the one judgement of a stalled run (stalled). Each takes the caller, decides
 * whether it may, validates, calls the store and records its audit line. Server actions, API routes and CLI
 * commands only parse their input, build the caller and shape the answer. No next/*, no react.
 */
export * as audit from './audit';
export * as bulk from './bulk';
export * as stalled from './stalled';
export * as claims from './claims';
export * as logs from './logs';
export * as retention from './retention';
export * as rewind from './rewind';
export * as steps from './steps';
export * as runs from './runs';
export * as tokens from './tokens';
export * as waits from './waits';
export { authorize, type Caller, type Channel, type Role } from './caller';
export { ControlInputError, ForbiddenError, LiveClaimError, StartRefusedError, type FieldErrors } from '../errors';
export type { ControlDeps, ControlStore } from './store';
