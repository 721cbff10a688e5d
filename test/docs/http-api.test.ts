/** The commands of docs/reference/http-api.md, run as its reader would: see ./page.ts and ./here.ts. */
import { runPage } from './page';

await runPage('docs/reference/http-api.md');
