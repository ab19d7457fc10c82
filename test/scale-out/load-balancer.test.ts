/**
 * The repository's load balancer, end to end: infra/docker/nginx.conf (Debian's nginx, a child
 * process) in front of two `wa serve` nodes on one external PostgreSQL and Redis. Only what must
 * differ on loopback is rewritten (upstream addresses, the listen port, pid/log/temp paths in a temp
 * dir, `daemon off`); the proxy settings come from the file as they are. Runs only where
 * TEST_DATABASE_URL and TEST_REDIS_URL are set; needs `nginx` (.ci/run installs Debian's package).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatRequest, lastUserText, promptText, type ScriptedModel, type ScriptedReply, startScriptedModel } from "../fixtures/model/scripted-model.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { externalDatabase, type Service, startService, stopAndClean } from "../support/service.ts"
import { contractFetch } from "../support/contract-hook.ts"
import { readSse, type SseEvent } from "../support/sse.ts"
import { clusterNodeEnv, eventually, shardsSettled } from "./nodes.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"] || undefined
const redisUrl = process.env["TEST_REDIS_URL"] || undefined
const repoConf = path.resolve(import.meta.dirname, "../../infra/docker/nginx.conf")

/** Model gate: a run whose task is `hold` visits the fixture site, then waits until it opens. */
let openGate: () => void = () => {}
const gateOpened = new Promise<void>((resolve) => (openGate = resolve))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer().once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

/** Replaces `pattern` in `text`, insisting it is there exactly once (the repo's file changed otherwise). */
const replaceOnce = (text: string, pattern: RegExp, replacement: string) => {
  const found = text.match(new RegExp(pattern.source, "gm"))?.length ?? 0
  if (found !== 1) throw new Error(`infra/docker/nginx.conf: expected one match of ${pattern}, found ${found}`)
  return text.replace(new RegExp(pattern.source, "m"), replacement)
}

/** infra/docker/nginx.conf with loopback upstreams and listen port, and everything it writes under `dir`. */
const loopbackConf = (dir: string, listenPort: number, nodePorts: readonly [number, number]) => {
  let conf = readFileSync(repoConf, "utf8")
  conf = replaceOnce(conf, /^(\s*)server wa-1:8080\b/, `$1server 127.0.0.1:${nodePorts[0]}`)
  conf = replaceOnce(conf, /^(\s*)server wa-2:8080\b/, `$1server 127.0.0.1:${nodePorts[1]}`)
  conf = replaceOnce(conf, /^(\s*)listen 80;/, `$1listen 127.0.0.1:${listenPort};`)
  const local = [
    `  log_format wa '$request_id $status $upstream_addr $request';`,
    `  access_log ${dir}/access.log wa;`,
    ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((name) => `  ${name}_temp_path ${dir}/${name};`)
  ]
  conf = replaceOnce(conf, /^http \{$/, `http {\n${local.join("\n")}\n`)
  return `daemon off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/error.log info;\n${conf}`
}

const nginxBinary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"].find((file) => existsSync(file)) ?? "nginx"

describe.skipIf(databaseUrl === undefined || redisUrl === undefined)("scale-out: infra/docker/nginx.conf in front of two API nodes", () => {
  let site: FixtureSites
  let model: ScriptedModel
  let database: Awaited<ReturnType<typeof externalDatabase>>
  let a: Service
  let b: Service
  let nginx: ChildProcess | undefined
  let nginxDir: string
  let lb: string

  const script = async (request: ChatRequest): Promise<ScriptedReply> => {
    const task = promptText(request).match(/Task:\n(.*)/)?.[1] ?? ""
    if (task !== "hold") return { tool: "done", args: { output: "ok" } }
    if (!lastUserText(request).includes(`${site.url}/login`)) return { tool: "navigate", args: { url: `${site.url}/login` } }
    await gateOpened
    return { tool: "done", args: { output: "released" } }
  }

  /** A request through nginx with the bootstrap key (`key: null` sends none). */
  const viaLb = async (method: string, pathname: string, options: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...options.headers }
    const key = options.key === undefined ? a.apiKey : options.key
    if (key !== null) headers["authorization"] = `Bearer ${key}`
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const response = await contractFetch(lb)(lb + pathname, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
    const text = await response.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined // nginx's own error pages are HTML
    }
    return { status: response.status, headers: response.headers, text, json }
  }
  const keysPath = () => `/v1/projects/${a.projectId}/api_keys`
  const sessionsPath = () => `/v1/projects/${a.projectId}/do_anything/sessions`
  const requestLines = (node: Service, pathname: string) => node.logs.filter((line) => line.message === "request" && line.annotations["path"] === pathname)

  beforeAll(async () => {
    site = await startFixtureSites()
    model = await startScriptedModel(script)
    database = await externalDatabase()
    const env = clusterNodeEnv(database!.url, redisUrl!, model.baseUrl, {
      WA_RATE_LIMIT_REQUESTS: "100000",
      WA_CLUSTER_HEALTH_CHECK_SECONDS: "1",
      WA_CLUSTER_LOCK_EXPIRATION_SECONDS: "6",
      WA_DRAIN_SECONDS: "10"
    })
    a = await startService({ env })
    b = await startService({ env, credentials: { projectId: a.projectId, apiKey: a.apiKey } })
    await shardsSettled("the shards split over both runners", [a.url, b.url])

    nginxDir = mkdtempSync(path.join(tmpdir(), "wa-nginx-"))
    // Run as root, nginx's workers run as `nobody`: they must reach the temp paths in here.
    chmodSync(nginxDir, 0o755)
    const port = await freePort()
    const conf = path.join(nginxDir, "nginx.conf")
    writeFileSync(conf, loopbackConf(nginxDir, port, [Number(new URL(a.url).port), Number(new URL(b.url).port)]))
    let output = ""
    const child = spawn(nginxBinary, ["-p", nginxDir, "-c", conf], { stdio: ["ignore", "pipe", "pipe"] })
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    const failed = new Promise<never>((_, reject) => {
      child.once("error", (error) => reject(new Error(`cannot run ${nginxBinary} (install Debian's nginx): ${error.message}`)))
      child.once("exit", (code) => reject(new Error(`nginx exited with ${code}:\n${output}${readFileSync(path.join(nginxDir, "error.log"), { encoding: "utf8", flag: "a+" })}`)))
    })
    failed.catch(() => {})
    nginx = child
    lb = `http://127.0.0.1:${port}`
    await Promise.race([failed, eventually("nginx to answer", async () => (await contractFetch(lb)(`${lb}/healthz`)).status === 200 ? true : undefined, { timeoutMs: 30_000 })])
  }, 180_000)

  afterAll(async () => {
    openGate()
    if (nginx !== undefined && nginx.exitCode === null && nginx.signalCode === null) {
      const exited = new Promise<void>((resolve) => nginx!.once("exit", () => resolve()))
      nginx.kill("SIGTERM")
      await exited
    }
    if (nginxDir !== undefined) rmSync(nginxDir, { recursive: true, force: true })
    await Promise.all([stopAndClean(a), stopAndClean(b)])
    await database?.drop()
    await model?.close()
    await site?.close()
  }, 120_000)

  it("authenticated requests through nginx succeed and reach both nodes", async () => {
    expect((await viaLb("GET", keysPath(), { key: null })).status).toBe(401)
    // least_conn falls back to round robin between idle nodes; keep asking until both served one.
    const both = () => requestLines(a, keysPath()).length > 0 && requestLines(b, keysPath()).length > 0
    for (let i = 0; i < 40 && !both(); i++) {
      const response = await viaLb("GET", keysPath())
      expect(response.status, response.text).toBe(200)
      expect(response.json.items.length).toBeGreaterThan(0)
    }
    await eventually("requests logged on both nodes", async () => both() ? true : undefined)
  })

  it("the node logs and echoes the request id nginx sets ($request_id), not the client's", async () => {
    const response = await viaLb("GET", keysPath(), { headers: { "x-request-id": "from-the-client" } })
    expect(response.status).toBe(200)
    const id = response.headers.get("x-request-id")
    expect(id).toMatch(/^[0-9a-f]{32}$/)
    const logged = await eventually("the node's access-log line", async () =>
      [a, b].flatMap((node) => requestLines(node, keysPath())).find((line) => line.annotations["request_id"] === id))
    expect(logged.annotations["status"]).toBe(200)
    const nginxLog = await eventually("nginx's access-log line", async () =>
      readFileSync(path.join(nginxDir, "access.log"), "utf8").split("\n").find((line) => line.startsWith(`${id} `)))
    expect(nginxLog).toContain(`GET ${keysPath()}`)
  })

  it("SSE through nginx is not buffered: events arrive while the run is held, then the stream ends", async () => {
    const created = await viaLb("POST", sessionsPath(), { body: { instructions: "hold", keep_alive: false } })
    expect(created.status, created.text).toBe(201)
    const sid = created.json.id as string
    const rid = created.json.latest_run_id as string
    let beforeGate: Array<SseEvent> | undefined
    const isRunning = (event: SseEvent) => event.event === "run.status_changed" && event.data?.data?.status === "running"
    const stream = await readSse(`${lb}${sessionsPath()}/${sid}/runs/${rid}/events`, { authorization: `Bearer ${a.apiKey}` }, {
      // The gate opens only once these events came through nginx: buffered, they never would.
      timeoutMs: 30_000,
      stopAfter: (seen) => {
        if (beforeGate === undefined && seen.some(isRunning) && seen.some((event) => event.event === "run.cost_update")) {
          beforeGate = [...seen]
          openGate()
        }
        return false
      }
    })
    expect(stream.status).toBe(200)
    expect(stream.contentType).toContain("text/event-stream")
    expect(beforeGate, "events before the gate opened").toBeDefined()
    expect(beforeGate!.some((event) => event.event === "run.completed")).toBe(false)
    expect(stream.events.map((event) => event.event)).toContain("run.completed")
    expect(stream.ended).toBe(true)
    const run = (await viaLb("GET", `${sessionsPath()}/${sid}/runs/${rid}`)).json
    expect(run.status).toBe("done")
    expect(run.output).toBe("released")
  })

  it("a node going away (SIGTERM): reads through nginx keep answering 200", async () => {
    const gone = new Promise<void>((resolve) => b.process.once("exit", () => resolve()))
    let exited = false
    void gone.then(() => (exited = true))
    const servedBy = () => requestLines(a, keysPath()).length
    const before = servedBy()
    b.process.kill("SIGTERM")
    const statuses: Array<number> = []
    // While B shuts down and after it exited: every answer is a 200 (the other node takes over).
    for (let after = 0; after < 20; after += exited ? 1 : 0) {
      const response = await viaLb("GET", keysPath())
      statuses.push(response.status)
      expect(response.status, `request ${statuses.length}: ${response.text}`).toBe(200)
      if (!exited) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(b.process.exitCode).toBe(0)
    await eventually("A's access log to show the requests after B left", async () => servedBy() - before >= 20 ? true : undefined)
  }, 120_000)
})
