/**
 * No server outlives the process that started it: a test process that dies (SIGKILL) without
 * stopping its service leaves no `wa serve` behind (WA_EXIT_WITH_PARENT, src/main.ts; the harness
 * holds the server's stdin).
 */
import { execFileSync, spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { expect, it } from "vitest"
import { isAlive, waitFor } from "../support/processes.ts"

it("a service whose test process is killed stops itself", async () => {
  // A stand-in test process: starts a service, prints its pid and data dir, then waits to be killed.
  const script = `
    import { startService } from "./test/support/service.ts"
    const service = await startService()
    console.log(JSON.stringify({ pid: service.process.pid, dataDir: service.dataDir }))
    setInterval(() => {}, 1000)
  `
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] })
  const started = await new Promise<{ pid: number; dataDir: string }>((resolve, reject) => {
    let out = ""
    parent.stdout.on("data", (chunk) => {
      out += chunk
      const line = out.split("\n").find((candidate) => candidate.startsWith("{"))
      if (line !== undefined) resolve(JSON.parse(line))
    })
    parent.on("exit", (code) => reject(new Error(`the stand-in exited (${code}) before its service started`)))
  })
  expect(isAlive(started.pid)).toBe(true)
  parent.kill("SIGKILL")
  await waitFor("the orphaned service to stop", () => !isAlive(started.pid), 30_000)
  // Its embedded PostgreSQL went with it (stopped by the service, or by its watchdog).
  await waitFor("its PostgreSQL to stop", () => !execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).includes(`${started.dataDir}/postgres`), 30_000)
  rmSync(started.dataDir, { recursive: true, force: true })
}, 120_000)
