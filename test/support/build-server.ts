/**
 * Global setup of the process-level project: (re)builds the bundled server (dist/server, the
 * `wa` every process-level test runs: entry.ts) when it is missing or older than a source, as
 * `npm start`'s prestart does. A build that cannot run (no rolldown) fails the run rather than
 * testing something else.
 */
import { existsSync } from "node:fs"
import * as path from "node:path"
import { buildServer, isStale, serverDist } from "../../build/server.ts"

export default async function setup() {
  if (isStale()) await buildServer()
  if (!existsSync(path.join(serverDist, "built"))) throw new Error("the bundled server (dist/server) could not be built: run `npm install`")
}
