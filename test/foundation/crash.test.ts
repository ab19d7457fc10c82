/**
 * Durability and process hygiene of the all-in-one mode: a SIGKILL while writes are in flight
 * loses no acknowledged write (with the embedded PostgreSQL surviving, and with it killed too);
 * the embedded PostgreSQL does not outlive a killed service; a closed stdout does not end the
 * service; a graceful stop stops the embedded PostgreSQL; the database is private to the machine.
 */
import { spawn } from "node:child_process"
import { readFileSync, statSync } from "node:fs"
import { connect } from "node:net"
import { networkInterfaces } from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import { SERVICE_NODE_FLAGS } from "../../src/config/node-flags.ts"
import { embeddedDatabaseClient, seededDataDir, type Service, startService, stopAndClean } from "../support/service.ts"
import { childPids, cleanEnv, clusterDirOf, isAlive, livePostmaster, liveWatchdog, waitFor } from "../support/processes.ts"
import { waEntry } from "../support/entry.ts"

// Every test here spawns the service or the CLI (each a full Node start, some starting PostgreSQL);
// on a loaded CI machine that takes far longer than the default 60 s allows.
vi.setConfig({ testTimeout: 180_000 })

const env = { WA_RATE_LIMIT_REQUESTS: "1000000" }
const running: Array<Service> = []
const start = async (options: Parameters<typeof startService>[0] = {}) => {
  const service = await startService({ ...options, env: { ...env, ...options.env } })
  running.push(service)
  return service
}
afterEach(async () => {
  // Stop the last service of each data dir (earlier ones were killed or stopped by the test).
  const last = new Map(running.map((s) => [s.dataDir, s]))
  for (const service of last.values()) {
    await service.stop()
    // A test that failed between a kill and the restart leaves the PostgreSQL it started running.
    const leftover = livePostmaster(service.dataDir)
    if (leftover !== undefined) {
      process.kill(leftover, "SIGINT") // fast shutdown
      await waitFor("the leftover PostgreSQL to stop", () => !isAlive(leftover))
    }
    await stopAndClean(service)
  }
  running.length = 0
})

interface Acknowledged {
  readonly id: string
  readonly secret: string
  readonly name: string
}

/**
 * Concurrent workers POST new API keys without pause; once `killAfter` were acknowledged (201),
 * `kill` runs while the other workers' requests are still in flight. Resolves with the
 * acknowledged writes and how many requests were in flight at the kill.
 */
const createUntilKilled = async (service: Service, kill: () => void, workers = 8, killAfter = 40) => {
  const acknowledged: Array<Acknowledged> = []
  let inFlight = 0
  let inFlightAtKill = -1
  const path = `/v1/projects/${service.projectId}/api_keys`
  const worker = async (w: number) => {
    for (let n = 0; ; n++) {
      const name = `crash-${w}-${n}`
      inFlight++
      let response
      try {
        response = await service.request("POST", path, { body: { name, scope: "admin" } })
      } catch {
        return // the service is gone; this write's outcome is unknown, which is allowed
      } finally {
        inFlight--
      }
      if (response.status !== 201) throw new Error(`unexpected ${response.status}: ${response.text}`)
      acknowledged.push({ id: response.json.id, secret: response.json.secret_token, name })
      if (acknowledged.length === killAfter) {
        inFlightAtKill = inFlight
        kill()
      }
    }
  }
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)))
  return { acknowledged, inFlightAtKill }
}

/** Every acknowledged key is listed and authenticates after the restart. */
const expectAllServed = async (service: Service, acknowledged: ReadonlyArray<Acknowledged>) => {
  const listed = new Map<string, any>()
  let cursor: string | null = null
  do {
    const page: any = await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=100${cursor === null ? "" : `&cursor=${cursor}`}`)
    expect(page.status, page.text).toBe(200)
    for (const item of page.json.items) listed.set(item.id, item)
    cursor = page.json.next_cursor
  } while (cursor !== null)
  for (const ack of acknowledged) {
    expect(listed.get(ack.id), `acknowledged key ${ack.id} is lost`).toMatchObject({ id: ack.id, name: ack.name })
  }
  for (const ack of acknowledged) {
    const response = await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=1`, { key: ack.secret })
    expect(response.status, `acknowledged key ${ack.id} does not authenticate`).toBe(200)
  }
}

/** SIGKILL of the postmaster and every process it started (a container or machine going down). */
const killPostgres = async (dataDir: string) => {
  const postmaster = livePostmaster(dataDir)
  expect(postmaster, "the embedded PostgreSQL should still run after the service was killed").toBeDefined()
  // Frozen first, so it forks nothing between listing its children and the kill.
  process.kill(postmaster!, "SIGSTOP")
  const children = childPids(postmaster!)
  process.kill(postmaster!, "SIGKILL")
  for (const child of children) {
    try {
      process.kill(child, "SIGKILL")
    } catch {
      // already gone
    }
  }
  await waitFor("the killed PostgreSQL processes to be gone", () => !isAlive(postmaster!) && children.every((c) => !isAlive(c)))
}

/**
 * SIGKILL of the service together with the watchdog that would stop its PostgreSQL (a machine
 * where both die, or an operator killing every process but the database's): the server is left.
 */
const killServiceAndWatchdog = (service: Service) => {
  const watchdog = liveWatchdog(service.dataDir)
  expect(watchdog, "the embedded PostgreSQL should have a watchdog").toBeDefined()
  process.kill(watchdog!, "SIGKILL")
  service.process.kill("SIGKILL")
}

describe("SIGKILL with writes in flight", () => {
  it("every acknowledged write is served after a restart that adopts the surviving PostgreSQL", async () => {
    const service = await start()
    const postmaster = livePostmaster(service.dataDir)
    const { acknowledged, inFlightAtKill } = await createUntilKilled(service, () => killServiceAndWatchdog(service))
    await service.kill()
    expect(inFlightAtKill).toBeGreaterThan(0)
    expect(acknowledged.length).toBeGreaterThanOrEqual(40)
    expect(livePostmaster(service.dataDir)).toBe(postmaster)

    const restarted = await start({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    // The surviving server was adopted, not replaced, and is watched again: it does not outlive
    // the service that adopted it.
    expect(livePostmaster(service.dataDir)).toBe(postmaster)
    await expectAllServed(restarted, acknowledged)
    expect((await restarted.request("GET", "/readyz", { key: null })).status).toBe(200)
    await restarted.kill()
    await waitFor("the adopted PostgreSQL to stop after its new owner was killed", () => !isAlive(postmaster!))
  })

  it("every acknowledged write is served after the service and its PostgreSQL were both killed", async () => {
    const service = await start()
    const { acknowledged, inFlightAtKill } = await createUntilKilled(service, () => killServiceAndWatchdog(service))
    await service.kill()
    await killPostgres(service.dataDir)
    expect(inFlightAtKill).toBeGreaterThan(0)

    // The stale postmaster.pid and service.pid must not stop the next start.
    const restarted = await start({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    expect(livePostmaster(service.dataDir)).toBeDefined()
    await expectAllServed(restarted, acknowledged)
  })
})

describe("the embedded PostgreSQL does not outlive the service", () => {
  it("SIGKILL of the service: its PostgreSQL stops by itself, and a restart on the data dir serves every acknowledged write", async () => {
    const service = await start()
    const postmaster = livePostmaster(service.dataDir)
    expect(postmaster).toBeDefined()
    const { acknowledged } = await createUntilKilled(service, () => service.process.kill("SIGKILL"))
    await service.kill()

    await waitFor("the killed service's PostgreSQL to stop", () => !isAlive(postmaster!), 20_000)
    expect(livePostmaster(service.dataDir)).toBeUndefined()

    const restarted = await start({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    expect(livePostmaster(service.dataDir)).not.toBe(postmaster)
    await expectAllServed(restarted, acknowledged)
  })

  it("SIGKILL of the service while its PostgreSQL is still starting: that PostgreSQL stops by itself", async () => {
    const dataDir = await seededDataDir()
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, waEntry, "serve"], {
      env: cleanEnv(dataDir),
      stdio: ["ignore", "pipe", "ignore"]
    })
    let listening = false
    child.stdout.on("data", (chunk: Buffer) => void (listening ||= chunk.toString().includes("\"listening\"")))
    let postmaster: number | undefined
    try {
      // Killed as soon as its server has a pid (pg_ctl is still waiting for it to accept connections).
      await waitFor("the service's PostgreSQL to start", () => (postmaster = livePostmaster(dataDir)) !== undefined, 60_000)
      child.kill("SIGKILL")
      expect(listening).toBe(false)
      await waitFor("the PostgreSQL of the service killed during its start to stop", () => !isAlive(postmaster!), 30_000)
    } finally {
      child.kill("SIGKILL")
      const leftover = livePostmaster(dataDir)
      if (leftover !== undefined) process.kill(leftover, "SIGINT")
    }
  })

  it("a restart while the killed service's PostgreSQL is still going away waits for its watchdog, then starts a fresh one", async () => {
    const service = await start()
    const postmaster = livePostmaster(service.dataDir)!
    // Frozen, the old server cannot act on its watchdog's shutdown signals: it stays "running" until
    // the watchdog's last resort (SIGKILL), however long the new service takes to look at it.
    process.kill(postmaster, "SIGSTOP")
    await service.kill()
    try {
      const restarted = await start({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
      // Not adopted: that server was on its way out.
      expect(isAlive(postmaster)).toBe(false)
      expect(livePostmaster(service.dataDir)).toBeDefined()
      for (let i = 0; i < 3; i++) expect((await restarted.request("GET", "/readyz", { key: null })).status).toBe(200)
      expect((await restarted.request("GET", `/v1/projects/${restarted.projectId}/api_keys?limit=1`)).status).toBe(200)
    } finally {
      if (isAlive(postmaster)) process.kill(postmaster, "SIGCONT")
    }
  })
})

describe("a closed stdout", () => {
  it("does not end the service: it keeps answering after the log reader went away, and still stops cleanly", async () => {
    const service = await start()
    const postmaster = livePostmaster(service.dataDir)
    // The reader of the service's stdout goes away (`wa serve | head -5`).
    service.process.stdout!.destroy()
    // Every request writes an access line; each is flushed on its own (the batch window is 20 ms).
    for (let i = 0; i < 5; i++) {
      const response = await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=1`)
      expect(response.status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(service.process.exitCode).toBeNull()
    expect((await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "after-stdout-closed" } })).status).toBe(201)

    await service.stop()
    expect(service.process.exitCode).toBe(0)
    expect(isAlive(postmaster!)).toBe(false)
  })
})

describe("graceful stop", () => {
  it("SIGTERM stops the embedded PostgreSQL and releases the data dir; a restart works", async () => {
    const service = await start()
    const created = await service.request("POST", `/v1/projects/${service.projectId}/api_keys`, { body: { name: "before-stop" } })
    expect(created.status).toBe(201)
    const postmaster = livePostmaster(service.dataDir)
    expect(postmaster).toBeDefined()

    await service.stop()
    expect(livePostmaster(service.dataDir)).toBeUndefined()
    expect(isAlive(postmaster!)).toBe(false)
    expect(() => statSync(path.join(clusterDirOf(service.dataDir), "postmaster.pid"))).toThrow()
    expect(() => statSync(path.join(service.dataDir, "service.pid"))).toThrow()

    const restarted = await start({ dataDir: service.dataDir, credentials: { projectId: service.projectId, apiKey: service.apiKey } })
    expect((await restarted.request("GET", "/readyz", { key: null })).status).toBe(200)
    const listed = await restarted.request("GET", `/v1/projects/${restarted.projectId}/api_keys?limit=100`)
    expect(listed.status).toBe(200)
    expect(listed.json.items).toContainEqual(expect.objectContaining({ id: created.json.id, name: "before-stop" }))
  })
})

describe("the embedded PostgreSQL is private", () => {
  it("keeps its password in a 0600 file, listens on 127.0.0.1 only and keeps its socket private", async () => {
    const service = await start()
    const passwordFile = path.join(service.dataDir, "postgres.password")
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600)
    expect(readFileSync(passwordFile, "utf8").trim().length).toBeGreaterThanOrEqual(24)

    const db = await embeddedDatabaseClient(service.dataDir)
    let port: number
    try {
      expect((await db.query("SHOW listen_addresses")).rows[0].listen_addresses).toBe("127.0.0.1")
      // Its Unix socket (the service's own connections use it) sits in the cluster dir, which only
      // the server's user can enter.
      const socketDir = (await db.query("SHOW unix_socket_directories")).rows[0].unix_socket_directories
      expect(socketDir).toBe(path.resolve(service.dataDir, "postgres"))
      expect(statSync(socketDir).mode & 0o777).toBe(0o700)
      expect((await db.query("SHOW password_encryption")).rows[0].password_encryption).toBe("scram-sha-256")
      port = Number((await db.query("SHOW port")).rows[0].port)
    } finally {
      await db.end()
    }

    // And nothing answers on the machine's other addresses (when it has any).
    const external = Object.values(networkInterfaces()).flat().filter((a) => a !== undefined && !a.internal && a.family === "IPv4")
    for (const address of external) {
      const outcome = await new Promise<string>((resolve) => {
        const socket = connect({ host: address!.address, port, timeout: 2000 })
        socket.once("connect", () => {
          socket.destroy()
          resolve("connected")
        })
        socket.once("timeout", () => {
          socket.destroy()
          resolve("timeout")
        })
        socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"))
      })
      expect(outcome, `PostgreSQL answers on ${address!.address}:${port}`).not.toBe("connected")
    }
  })
})
