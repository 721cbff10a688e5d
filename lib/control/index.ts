/**
 * lib/control: every operator operation, written once — start, pause, resume, cancel, retry (runs), expire,
 * resolve, sweep (claims), prune (retention), run tokens (tokens) — and the audit log's reader. Each takes the caller, decides
 * whether it may, validates, calls the store and records its audit line. Server actions, API routes and CLI
 * commands only parse their input, build the caller and shape the answer. No next/*, no react.
 */
export * as audit from './audit';
export * as claims from './claims';
export * as retention from './retention';
export * as runs from './runs';
export * as tokens from './tokens';
export * as waits from './waits';
export { authorize, type Caller, type Channel, type Role } from './caller';
export { ControlInputError, ForbiddenError, LiveClaimError, StartRefusedError, type FieldErrors } from '../errors';
export type { ControlDeps, ControlStore } from './store';
