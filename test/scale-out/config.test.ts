/** Cluster settings that cannot work stop start-up with one line and exit code 2. */
import { afterAll, describe, type ExpectStatic, it } from "vitest"
import { rmSync } from "node:fs"
import { cleanEnv, runWa } from "../support/processes.ts"
import { newDataDir } from "../support/service.ts"

const dataDirs: Array<string> = []
afterAll(() => {
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
})

const expectOneLine = async (expect: ExpectStatic, args: Array<string>, env: Record<string, string>, fragment: string) => {
  // A data dir per case: the cases run side by side.
  const dataDir = newDataDir()
  dataDirs.push(dataDir)
  const result = await runWa(args, cleanEnv(dataDir, env))
  expect(result.code).toBe(2)
  const lines = result.stderr.trim().split("\n")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toContain(fragment)
}

// Each case is its own `wa` process, refused at start-up: run them side by side.
describe.concurrent("cluster configuration", () => {
  it("`wa runner` needs DATABASE_URL", ({ expect }) => expectOneLine(expect, ["runner"], {}, "DATABASE_URL"))
  it("WA_CLUSTER=socket needs DATABASE_URL", ({ expect }) => expectOneLine(expect, ["serve"], { WA_CLUSTER: "socket" }, "WA_CLUSTER"))
  it("WA_CLUSTER accepts only single or socket", ({ expect }) => expectOneLine(expect, ["serve"], { WA_CLUSTER: "many" }, "WA_CLUSTER"))
  it("WA_RUNNER_PORT must be a port", ({ expect }) => expectOneLine(expect, ["serve"], { WA_RUNNER_PORT: "70000" }, "WA_RUNNER_PORT"))
  it("`wa runner` with WA_CLUSTER=single is refused", ({ expect }) =>
    expectOneLine(expect, ["runner"], { WA_CLUSTER: "single", DATABASE_URL: "postgres://127.0.0.1:1/none" }, "socket runners"))
})
