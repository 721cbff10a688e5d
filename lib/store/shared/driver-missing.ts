/**
 * Whether a failed load is Node's "cannot find package" for the driver itself (ESM or CommonJS), and not for
 * something the driver failed to load: only the first is a DriverMissingError, the second is the driver's own
 * failure and is thrown as it is.
 */
export function isDriverMissing(error: unknown, driver: string): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = (error as Error).message;
  return message.includes(`'${driver}'`) || message.includes(`"${driver}"`);
}
