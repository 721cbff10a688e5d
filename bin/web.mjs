#!/usr/bin/env node
// The dashboard as a Node cluster: `node bin/web.mjs [next start flags]`, what `npm start` runs. The work is
// in lib/launch/web-cluster.ts (built, or through tsx: bin/entry.mjs). The workers run next's own CLI and
// never load tsx.
import { entry } from './entry.mjs';

const { runWebCluster } = await entry('web-cluster', 'lib/launch/web-cluster.ts', ['zod']);
process.exitCode = await runWebCluster(process.argv.slice(2));
