/**
 * One embedded PostgreSQL for the whole in-process tier (vitest project "in-process"): started
 * once before its files run, stopped after. Each test file creates its own database on it
 * (harness.ts), so files never see each other's rows, and no file pays for an initdb and a start.
 * Vitest runs a project's globalSetup only when files of that project are selected.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { startEmbeddedPostgres } from "../../src/store/embedded-postgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin URL of the tier's embedded PostgreSQL (database `postgres`). */
    readonly inProcessPostgresUrl: string
  }
}

export default async function setup(project: TestProject) {
  const dataDir = mkdtempSync(path.join(tmpdir(), "wa-in-process-"))
  const db = await startEmbeddedPostgres(dataDir, { mode: "own" })
  project.provide("inProcessPostgresUrl", db.url)
  return async () => {
    await db.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}
