/** The commands of docs/reference/http-api.md, run as its reader would: see ./page.ts and ./here.ts. */
import { runPage } from './page';

// Leases short enough that the claims block's orphaned claims (made for it) pass in a second: the server's
// lease bounds the shortest a client may ask for.
await runPage('docs/reference/http-api.md', { WAYBILL_LEASE_MS: '1500' });
