/**
 * The dashboard's address as the programs npm start's worker spawns reach it (its `--url`): the worker runs
 * on this machine, so a wildcard listen address (0.0.0.0, ::) is reached over loopback, and every other
 * host as the dashboard listens on it. WAYBILL_URL, when set, is the user's and wins.
 */
export function programUrl(host: string, port: number): string {
  const reach = host === '0.0.0.0' ? '127.0.0.1' : host === '::' || host === '[::]' ? '::1' : host;
  return `http://${reach.includes(':') ? `[${reach.replace(/^\[|\]$/g, '')}]` : reach}:${port}`;
}
