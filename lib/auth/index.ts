export { crossSiteReason, hostReason, type RequestFacts, selfOrigin } from './origin';
export { allows, authEnabled, LOCAL, type Principal, type Role, roleForToken } from './principal';
export { readSession, SESSION_COOKIE, signSession } from './session';
