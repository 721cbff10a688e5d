#!/usr/bin/env node
// The dashboard as a Node cluster: `node bin/web.mjs [next start flags]`, what `npm start` runs. The work is
// in lib/launch/web-cluster.ts; tsx compiles it on import, as in bin/start.mjs. The workers run next's own
// CLI and never load tsx.
import { register } from 'tsx/esm/api';

await import('zod');
register();
const { runWebCluster } = await import('../lib/launch/web-cluster.ts');
process.exitCode = await runWebCluster(process.argv.slice(2));
