export { allows, authEnabled, roleForToken, LOCAL, type Principal, type Role } from './principal';
export { readSession, signSession, SESSION_COOKIE } from './session';
export { crossSiteReason, hostReason, selfOrigin, type RequestFacts } from './origin';
