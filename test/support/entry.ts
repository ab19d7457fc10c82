/**
 * What the process-level suites (and the benches that start the service through them) run as
 * `wa` (serve, runner, migrate and the other verbs): the bundle `npm start` runs,
 * dist/server/main.js (build/server.ts), so the tests hold what users run. The project's global
 * setup (build-server.ts) rebuilds it before a run when a source is newer.
 * WA_TEST_ENTRY=sources runs src/main.ts instead (to compare the two).
 */
import * as path from "node:path"

export const waEntry = process.env["WA_TEST_ENTRY"] === "sources"
  ? path.resolve(import.meta.dirname, "../../src/main.ts")
  : path.resolve(import.meta.dirname, "../../dist/server/main.js")
