/** The commands of docs/guide.md, run as its reader would: see ./page.ts and ./here.ts. */
import { runPage } from './page';

await runPage('docs/guide.md');
