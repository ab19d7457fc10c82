/**
 * The `wa` client commands and the `wa mcp` server as a user runs them: real processes against the
 * real service (scripted model, SearXNG faked, the research web on loopback). The MCP server is
 * driven by the MCP SDK's own Client, over stdio and over streamable HTTP.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import type { ChatRequest } from "../fixtures/model/scripted-model.ts"
import { researchScript } from "../fixtures/model/research-model.ts"
import { type ResearchFixtures, researchEnv, startResearchFixtures } from "../deep-research/helpers.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { type ContractProxy, startContractProxy } from "../support/contract-proxy.ts"
import { onJsonLines } from "../support/json-lines.ts"
import { eventually } from "../support/runs.ts"

vi.setConfig({ testTimeout: 120_000 })

const root = path.resolve(import.meta.dirname, "../..")
const wa = path.join(root, "bin/wa.js")

let fx: ResearchFixtures
let service: Service
/** The CLI and MCP processes reach the service through it: their answers go through the contract hook. */
let proxy: ContractProxy
let table: Record<string, ReadonlyArray<string>> = {}
let home: string

beforeAll(async () => {
  fx = await startResearchFixtures(() => table)
  service = await startService({ env: researchEnv(fx.model, fx.engines, { WA_MAX_CONCURRENT_SESSIONS: "100" }) })
  proxy = await startContractProxy(service.url)
  home = mkdtempSync(path.join(tmpdir(), "wa-cli-home-"))
  table = {
    "cli-cost": [fx.web.url("127.0.0.1", "/doc/cli-cost-a"), fx.web.url("127.0.0.2", "/doc/cli-cost-b")],
    "cli-history": [fx.web.url("127.0.0.2", "/doc/cli-history-a"), fx.web.url("127.0.0.3", "/doc/cli-history-b")],
    "widget prices": [fx.web.url("127.0.0.1", "/doc/widget-prices"), fx.web.url("127.0.0.2", "/doc/widget-costs")],
    "widget history": [fx.web.url("127.0.0.3", "/doc/widget-history"), fx.web.url("127.0.0.1", "/doc/widget-prices")]
  }
})
/** Cancels what the tests left waiting for a person, so the service stops without draining them. */
const cancelWaiting = async () => {
  const pid = service.projectId
  const sessions = (await service.request("GET", `/v1/projects/${pid}/do_anything/sessions?limit=100`)).json?.items ?? []
  for (const session of sessions) {
    for (const run of session.runs ?? []) {
      if (!["done", "failed", "canceled"].includes(run.status)) {
        await service.request("POST", `/v1/projects/${pid}/do_anything/sessions/${session.id}/runs/${run.id}/cancel`, { body: {} })
      }
    }
  }
  const research = (await service.request("GET", `/v1/projects/${pid}/deep_research/runs?limit=100`)).json?.items ?? []
  for (const run of research) {
    if (!["done", "failed", "canceled"].includes(run.status)) await service.request("POST", `/v1/projects/${pid}/deep_research/runs/${run.id}/cancel`, { body: {} })
  }
}

// A mismatch the proxy saw fails the test whose processes made the request.
afterEach(() => {
  expect(proxy?.takeMismatches() ?? []).toEqual([])
})

afterAll(async () => {
  await proxy?.close()
  if (service !== undefined) await cancelWaiting()
  await stopAndClean(service)
  await fx?.close()
  if (home !== undefined) rmSync(home, { recursive: true, force: true })
})

/** The environment of a user's shell: no WA_* from the test runner, HOME in a temp dir. */
const userEnv = (extra: Record<string, string> = {}) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith("WA_")) env[name] = value
  return { ...env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), ...extra }
}
const connected = () => userEnv({ WA_URL: proxy.url, WA_API_KEY: service.apiKey, WA_PROJECT: service.projectId })

const waRun = (args: ReadonlyArray<string>, env: Record<string, string> = connected()) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [wa, ...args], { cwd: root, env, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof (error as { code?: unknown }).code === "number" ? (error as { code: number }).code : -1, stdout, stderr })
    })
  })

const stepsTaken = (request: ChatRequest) => request.messages.filter((m) => m.role === "tool").length
const agentScript = (steps: number, output: unknown) => (request: ChatRequest) =>
  stepsTaken(request) < steps ? { tool: "wait_for", args: { timeout_ms: 1 } } : { tool: "done", args: { output } }

const researchSections = [{ title: "Costs", queries: ["cli-cost"] }, { title: "History", queries: ["cli-history"] }]

describe("wa (client commands)", () => {
  it("wa run --follow shows the steps as they happen, then the output", async () => {
    fx.model.setScript(agentScript(2, "the answer is 42"))
    const result = await waRun(["run", "Find the answer", "--follow"])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toBe("the answer is 42\n")
    const lines = result.stderr.split("\n")
    expect(lines.filter((l) => l.startsWith("→ wait_for"))).toHaveLength(2)
    expect(lines.filter((l) => l.startsWith("✓ wait_for"))).toHaveLength(2)
    expect(lines.some((l) => l.startsWith("status: running"))).toBe(true)
  })

  it("--json gives scripts one document (or JSON lines with --follow); exit codes tell failures apart", async () => {
    fx.model.setScript(agentScript(0, { total: 3 }))
    const plain = await waRun(["run", "Count", "--json"])
    expect(plain.code, plain.stderr).toBe(0)
    expect(JSON.parse(plain.stdout)).toMatchObject({ status: "done", output: { total: 3 } })

    const followed = await waRun(["run", "Count", "--json", "--follow"])
    const docs = followed.stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(docs.at(-1)).toMatchObject({ run: { status: "done", output: { total: 3 } } })
    expect(docs.slice(0, -1).every((d) => typeof d.event?.type === "string" && typeof d.event?.id === "number")).toBe(true)

    // The agent asks a question and nobody can answer here (stdin is not a terminal): 9.
    fx.model.setScript(() => ({ tool: "ask_human", args: { prompt: "Which account?" } }))
    const asks = await waRun(["run", "Log in", "--follow"])
    expect(asks.code).toBe(9)
    expect(asks.stderr).toContain("Which account?")
    const asksQuietly = await waRun(["run", "Log in"])
    expect(asksQuietly.code).toBe(9)
    expect(asksQuietly.stderr).toContain("Which account?")

    // The run fails (the model calls a tool that does not exist): 1, with the error on stderr.
    fx.model.setScript(() => ({ tool: "no_such_tool" }))
    const failed = await waRun(["run", "Break"])
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/^failed: \w+/m)

    expect((await waRun(["run", "x".repeat(10_001)])).code).toBe(5) // validation
    expect((await waRun(["run", "hello"], userEnv({ WA_URL: proxy.url, WA_API_KEY: `wa_${"x".repeat(40)}`, WA_PROJECT: service.projectId }))).code).toBe(3)
    expect((await waRun(["monitors", "show", "mon_missing"])).code).toBe(4)
    expect((await waRun(["run"])).code).toBe(2)
    expect((await waRun(["run", "hello", "--frobnicate"])).code).toBe(2)
    const unconfigured = await waRun(["run", "hello"], userEnv())
    expect(unconfigured.code).toBe(2)
    expect(unconfigured.stderr).toContain("missing the API key")
  })

  it("takes the service and key from a config file, flags and the environment winning over it", async () => {
    const file = path.join(home, ".config", "wa", "config.json")
    const { mkdirSync } = await import("node:fs")
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify({ url: proxy.url, api_key: service.apiKey, project_id: service.projectId }))
    try {
      fx.model.setScript(agentScript(0, "from the config file"))
      const fromFile = await waRun(["run", "Say it"], userEnv())
      expect(fromFile.code, fromFile.stderr).toBe(0)
      expect(fromFile.stdout).toBe("from the config file\n")
      // A flag overrides the file: a wrong key is refused.
      expect((await waRun(["run", "Say it", "--key", `wa_${"y".repeat(40)}`], userEnv())).code).toBe(3)
      // The environment overrides the file too.
      expect((await waRun(["run", "Say it"], userEnv({ WA_PROJECT: "proj_other" }))).code).toBe(3)
    } finally {
      rmSync(file)
    }
  })

  it("wa research --follow --approve shows the phases, approves the outline and prints the report", async () => {
    fx.model.setScript(researchScript({ sections: researchSections }))
    const result = await waRun(["research", "Widgets and their prices", "--follow", "--approve", "--depth", "light"])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain("phase: plan")
    expect(result.stderr).toContain("outline approved (--approve)")
    expect(result.stderr).toContain("phase: synthesize")
    expect(result.stderr).toMatch(/citations \d+ · confidence high \d+ medium \d+ low \d+/)
    expect(result.stdout).toContain("Costs")

    // Without --approve and without a terminal to ask on, the command says what waits: 9.
    const waiting = await waRun(["research", "Widgets again", "--follow", "--depth", "light"])
    expect(waiting.code).toBe(9)
    expect(waiting.stderr).toContain("waits for outline approval")
  })

  it("on a terminal, asks: the outline for approval (n cancels), the agent's question", async () => {
    /** Runs wa in a pseudo-terminal (util-linux `script`), typing `answer` when `prompt` shows. */
    const onTerminal = (args: ReadonlyArray<string>, prompt: string, answer: string) =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const quoted = [process.execPath, wa, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")
        const child = spawn("script", ["-q", "-e", "-c", quoted, "/dev/null"], { cwd: root, env: connected(), stdio: ["pipe", "pipe", "pipe"] })
        let output = ""
        let answered = false
        child.stdout.on("data", (chunk) => {
          output += chunk
          if (!answered && output.includes(prompt)) {
            answered = true
            child.stdin.write(`${answer}\r`)
          }
        })
        child.once("exit", (code) => resolve({ code, output }))
      })

    fx.model.setScript(researchScript({ sections: researchSections }))
    const approved = await onTerminal(["research", "Widgets on a terminal", "--follow", "--depth", "light"], "approve this outline? [Y/n]", "y")
    expect(approved.code, approved.output).toBe(0)
    expect(approved.output).toContain("# ") // the outline shown before the question
    expect(approved.output).toContain("phase: synthesize")

    const rejected = await onTerminal(["research", "Widgets rejected", "--follow", "--depth", "light"], "approve this outline? [Y/n]", "n")
    expect(rejected.code, rejected.output).toBe(8)

    fx.model.setScript((request) => {
      const results = request.messages.filter((m) => m.role === "tool")
      return results.length === 0 ? { tool: "ask_human", args: { prompt: "Which account?" } } : { tool: "done", args: { output: `used ${String(results[0]!.content)}` } }
    })
    const answered = await onTerminal(["run", "Log in", "--follow"], "answer> ", "acct-7")
    expect(answered.code, answered.output).toBe(0)
    expect(answered.output).toContain("? Which account?")
    expect(answered.output).toMatch(/used .*acct-7/)
  })

  it("wa search prints ranked results; --json the whole run", async () => {
    const result = await waRun(["search", "widget prices", "widget history"])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(/^1\. .+\n {3}http:\/\/127\.0\.0\.\d:\d+\/doc\//)
    expect(result.stderr).toMatch(/\d+ unique results/)
    const json = await waRun(["search", "widget prices", "--json"])
    const run = JSON.parse(json.stdout)
    expect(run).toMatchObject({ kind: "web_search", status: "done" })
    expect(run.results.results.map((r: { url: string }) => r.url)).toEqual(expect.arrayContaining([table["widget prices"]![0]]))
  })

  it("wa monitors create, list and show", async () => {
    const created = await waRun(["monitors", "create", "--intent", "Watch the widget price", "--target", fx.web.url("127.0.0.1", "/doc/widget-prices"), "--interval", "3600", "--json"])
    expect(created.code, created.stderr).toBe(0)
    const monitor = JSON.parse(created.stdout)
    expect(monitor).toMatchObject({ id: expect.any(String), status: "active", notify_channel: { kind: "console_inbox" }, notify_secret: expect.any(String) })
    const listed = JSON.parse((await waRun(["monitors", "list", "--json"])).stdout)
    expect(listed.items.map((m: { id: string }) => m.id)).toContain(monitor.id)
    const human = await waRun(["monitors", "list"])
    expect(human.stdout).toContain(monitor.id)
    const shown = await waRun(["monitors", "show", monitor.id, "--json"])
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: monitor.id, intent_text: "Watch the widget price", recent_snapshots: expect.any(Array) })
    expect(JSON.parse(shown.stdout)).not.toHaveProperty("notify_secret")
    const badNotify = await waRun(["monitors", "create", "--intent", "Watch it", "--notify", "carrier-pigeon"])
    expect(badNotify.code).toBe(2)
  })
})

describe("wa mcp", () => {
  const connect = async (transport: StdioClientTransport | StreamableHTTPClientTransport) => {
    const client = new Client({ name: "test-agent", version: "1.0.0" })
    await client.connect(transport)
    return client
  }

  it("over stdio: lists the four tools; do_anything reports progress from the run's events", async () => {
    const client = await connect(new StdioClientTransport({ command: process.execPath, args: [wa, "mcp"], cwd: root, env: connected(), stderr: "pipe" }))
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name).sort()).toEqual(["deep_research", "do_anything", "track", "web_search"])

      fx.model.setScript(agentScript(2, { done: true }))
      const progress: Array<{ progress: number; message?: string | undefined }> = []
      const result = await client.callTool({ name: "do_anything", arguments: { instructions: "Wait twice" } }, undefined, {
        onprogress: (p) => void progress.push({ progress: p.progress, message: p.message })
      })
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toMatchObject({ status: "done", output: { done: true }, run_id: expect.stringMatching(/^run_/) })
      expect(JSON.parse((result.content as Array<{ text: string }>)[0]!.text)).toEqual({ done: true })
      expect(progress.filter((p) => p.message?.startsWith("→ wait_for"))).toHaveLength(2)
      expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1))

      // Canceling the tool call cancels the run.
      let parked: () => void = () => {}
      const reached = new Promise<void>((resolve) => (parked = resolve))
      fx.model.setScript(async (request) => {
        if (stepsTaken(request) === 0) return { tool: "wait_for", args: { timeout_ms: 1 } }
        parked()
        await new Promise((resolve) => setTimeout(resolve, 60_000))
        return { tool: "done", args: { output: "too late" } }
      })
      const abort = new AbortController()
      const call = client.callTool({ name: "do_anything", arguments: { instructions: "Take long" } }, undefined, {
        signal: abort.signal,
        onprogress: () => {}
      }).catch((error) => error)
      await reached
      const sessions = (await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions?limit=1`)).json.items
      abort.abort()
      expect(await call).toBeInstanceOf(Error)
      const canceled = await eventually("the run canceled", async () => {
        const run = (await service.request("GET", `/v1/projects/${service.projectId}/do_anything/sessions/${sessions[0].id}/runs/${sessions[0].latest_run_id}`)).json
        return run.status === "canceled" ? run : undefined
      })
      expect(canceled.status).toBe("canceled")

      // A refusal is a tool error the agent can read, not a protocol failure.
      const refused = await client.callTool({ name: "do_anything", arguments: { instructions: "x".repeat(10_001) } })
      expect(refused.isError).toBe(true)
      expect(refused.structuredContent).toMatchObject({ code: "validation_error" })

      fx.model.setScript(researchScript({ sections: researchSections }))
      const research = await client.callTool({ name: "deep_research", arguments: { topic: "Widgets over MCP", depth: "light" } }, undefined, {
        onprogress: (p) => void progress.push({ progress: p.progress, message: p.message })
      })
      expect(research.isError, JSON.stringify(research.content)).toBeFalsy()
      expect(research.structuredContent).toMatchObject({ status: "done", citations_count: expect.any(Number) })
      expect((research.content as Array<{ text: string }>)[0]!.text).toContain("Costs")
      expect(progress.map((p) => p.message)).toContain("phase: synthesize")

      const tracked = await client.callTool({ name: "track", arguments: { intent: "Watch widget history", target_urls: [fx.web.url("127.0.0.3", "/doc/widget-history")], interval_seconds: 3600 } })
      expect(tracked.structuredContent).toMatchObject({ monitor_id: expect.any(String), status: "active", notify_secret: expect.any(String) })
      const shown = await client.callTool({ name: "track", arguments: { action: "show", monitor_id: (tracked.structuredContent as { monitor_id: string }).monitor_id } })
      expect(shown.structuredContent).toMatchObject({ monitor: { intent_text: "Watch widget history" } })
    } finally {
      await client.close()
    }
  })

  it("over streamable HTTP (wa mcp --http PORT): web_search", async () => {
    const child: ChildProcess = spawn(process.execPath, [wa, "mcp", "--http", "0"], { cwd: root, env: connected(), stdio: ["ignore", "pipe", "pipe"] })
    try {
      const url = await new Promise<string>((resolve, reject) => {
        onJsonLines<{ mcp: string }>(child.stdout!, (line) => resolve(line.mcp))
        child.once("exit", (code) => reject(new Error(`wa mcp --http exited with ${code}`)))
      })
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
      const client = await connect(new StreamableHTTPClientTransport(new URL(url)))
      try {
        const result = await client.callTool({ name: "web_search", arguments: { queries: ["widget prices"] } })
        expect(result.isError).toBeFalsy()
        const structured = result.structuredContent as { results: Array<{ url: string }> }
        expect(structured.results.map((r) => r.url)).toEqual(expect.arrayContaining([table["widget prices"]![0]]))
        expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/^1\. /)
      } finally {
        await client.close()
      }
    } finally {
      child.kill("SIGTERM")
      await new Promise((resolve) => child.once("exit", resolve))
    }
  })
})
