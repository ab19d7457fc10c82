/**
 * The port opens only when the handler is in place: a client polling a starting service (a
 * load balancer's health check, a readiness probe) gets either a refused connection or an answer,
 * never a connection that is accepted and then left without one. Before, the port was bound
 * while the routes were still being built, and a request that arrived in that window hung.
 */
import { spawn } from "node:child_process"
import { request } from "node:http"
import { rmSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { SERVICE_NODE_FLAGS } from "../../src/config/node-flags.ts"
import { freePort } from "../../src/net/free-port.ts"
import { seededDataDir } from "../support/service.ts"
import { checkExchange } from "../support/contract-hook.ts"
import { waEntry } from "../support/entry.ts"

const root = path.resolve(import.meta.dirname, "../..")

/** One GET: its status, "refused" when nothing listens, "no answer" when accepted and left hanging. */
const probe = (port: number) =>
  new Promise<number | "refused" | "no answer">((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/healthz", agent: false, timeout: 5_000 }, (res) => {
      let text = ""
      res.on("data", (chunk) => (text += chunk))
      // The answer is held to the service's OpenAPI document (the contract hook) too.
      res.once("end", () => {
        const headers = new Headers(Object.entries(res.headers).flatMap(([name, value]) => value === undefined ? [] : [[name, String(value)] as [string, string]]))
        checkExchange(`http://127.0.0.1:${port}`, { method: "GET", pathname: "/healthz", status: res.statusCode ?? 0, headers, text })
          .then(() => resolve(res.statusCode ?? 0), reject)
      })
    })
    req.once("error", () => resolve("refused"))
    req.once("timeout", () => {
      req.destroy()
      resolve("no answer")
    })
    req.end()
  })

describe("start-up", () => {
  it("a request that reaches the port while the service starts is answered, never left hanging", async () => {
    const dataDir = await seededDataDir()
    const port = await freePort()
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (value !== undefined && !name.startsWith("WA_") && name !== "DATABASE_URL" && name !== "REDIS_URL") env[name] = value
    }
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, waEntry, "serve"], {
      cwd: root,
      env: { ...env, WA_PORT: String(port), WA_HOST: "127.0.0.1", WA_DATA_DIR: dataDir, WA_EXIT_WITH_PARENT: "1" },
      stdio: ["pipe", "ignore", "ignore"]
    })
    try {
      // Many probes in flight at once from the first moment, so one lands right as the port opens.
      const outcomes: Array<number | "refused" | "no answer"> = []
      for (const started = Date.now(); !outcomes.includes(200) && Date.now() - started < 60_000;) {
        outcomes.push(...await Promise.all(Array.from({ length: 8 }, () => probe(port))))
      }
      expect(outcomes).toContain(200)
      expect(outcomes.filter((outcome) => outcome !== "refused" && outcome !== 200)).toEqual([])
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      await exited
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)
})
