/**
 * The digest a store-unavailable error carries from a server render to the error page. Next replaces a server
 * error's message before it reaches the browser but keeps a digest it is given, so this is how the page can
 * tell "the store is unreachable" from a bug. Its own file: the error page is client code and imports only this.
 */
export const STORE_UNAVAILABLE_DIGEST = 'WAYBILL_STORE_UNAVAILABLE';
