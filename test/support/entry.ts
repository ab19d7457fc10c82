/**
 * What the process-level suites run as `wa` (serve, runner, migrate and the other verbs): the
 * bundle `npm start` runs, dist/server/main.js (build/server.ts), so the tests hold what users run.
 * The project's global setup (build-server.ts) rebuilds it before a run when a source is newer.
 */
import * as path from "node:path"

export const waEntry = path.resolve(import.meta.dirname, "../../dist/server/main.js")
