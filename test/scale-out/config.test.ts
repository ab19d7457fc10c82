/** Cluster settings that cannot work stop start-up with one line and exit code 2. */
import { afterAll, describe, expect, it } from "vitest"
import { rmSync } from "node:fs"
import { cleanEnv, runWa } from "../support/processes.ts"
import { newDataDir } from "../support/service.ts"

const dataDir = newDataDir()
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

const expectOneLine = async (args: Array<string>, env: Record<string, string>, fragment: string) => {
  const result = await runWa(args, cleanEnv(dataDir, env))
  expect(result.code).toBe(2)
  const lines = result.stderr.trim().split("\n")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toContain(fragment)
}

describe("cluster configuration", () => {
  it("`wa runner` needs DATABASE_URL", () => expectOneLine(["runner"], {}, "DATABASE_URL"))
  it("WA_CLUSTER=socket needs DATABASE_URL", () => expectOneLine(["serve"], { WA_CLUSTER: "socket" }, "WA_CLUSTER"))
  it("WA_CLUSTER accepts only single or socket", () => expectOneLine(["serve"], { WA_CLUSTER: "many" }, "WA_CLUSTER"))
  it("WA_RUNNER_PORT must be a port", () => expectOneLine(["serve"], { WA_RUNNER_PORT: "70000" }, "WA_RUNNER_PORT"))
  it("`wa runner` with WA_CLUSTER=single is refused", () =>
    expectOneLine(["runner"], { WA_CLUSTER: "single", DATABASE_URL: "postgres://127.0.0.1:1/none" }, "socket runners"))
})

describe("search engine and Reader settings", () => {
  // Read by AppConfig with every other setting: a bad value stops start-up before any layer is built.
  it("a malformed WA_SEARCH_* number stops start-up naming it", () =>
    expectOneLine(["serve"], { WA_SEARCH_ENGINE_TIMEOUT_MS: "soon" }, "WA_SEARCH_ENGINE_TIMEOUT_MS"))
  it("a malformed WA_READER_* number stops start-up naming it", () =>
    expectOneLine(["serve"], { WA_READER_MAX_BYTES: "lots" }, "WA_READER_MAX_BYTES"))
})
