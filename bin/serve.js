#!/usr/bin/env node
// `npm start`: the bundled server (dist/server, built by build/server.ts at install and again by
// `prestart` when a source changed), or the sources where it was not built (dev dependencies
// omitted). The arguments are the verb's, as for src/main.ts.
import { existsSync } from "node:fs"

const bundled = new URL("../dist/server/built", import.meta.url)
await import(existsSync(bundled) ? "../dist/server/main.js" : "../src/main.ts")
