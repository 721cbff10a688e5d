/**
 * Every call the pages, actions and API routes make on the store passes through guardStore(): a failure that
 * means "unreachable" (StoreUnavailableError after the store's own retries, or a connection that could not be
 * made at all) marks the store down (store-health.ts) and is rethrown as one StoreUnavailableError carrying a
 * digest the error page recognises; any success marks it up.
 */
import { StoreUnavailableError } from '../errors';
import { isConnectionLoss } from '../store/index';
import { STORE_UNAVAILABLE_DIGEST } from './store-digest';
import { markStoreDown, markStoreUp } from './store-health';

/** The store could not be reached: by our own error's code (not its class: bundles may each hold a copy) or by the driver's. */
export function isUnreachable(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'STORE_UNAVAILABLE' || isConnectionLoss(error);
}

/** Marks the store down and returns the error to throw in place of `error`. */
export function markDown(error: unknown): StoreUnavailableError {
  const message = error instanceof Error ? error.message : String(error);
  markStoreDown(message);
  const unavailable =
    error instanceof StoreUnavailableError
      ? error
      : new StoreUnavailableError(`the store is unreachable: ${message}`, error);
  Object.assign(unavailable, { digest: STORE_UNAVAILABLE_DIGEST });
  return unavailable;
}

/** The store with every method's outcome recorded: unreachable failures become one StoreUnavailableError. */
export function guardStore<S extends object>(store: S): S {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'constructor') return value;
      return (...args: unknown[]) => {
        const settle = (error: unknown): never => {
          throw isUnreachable(error) ? markDown(error) : error;
        };
        let result: unknown;
        try {
          result = value.apply(target, args);
        } catch (error) {
          return settle(error);
        }
        if (!(result instanceof Promise)) return result;
        return result.then((v) => {
          markStoreUp();
          return v;
        }, settle);
      };
    },
  });
}
