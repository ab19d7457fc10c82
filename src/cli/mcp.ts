/**
 * `wa mcp`: the four products as MCP tools, for agents that speak the Model Context Protocol
 * (official @modelcontextprotocol/sdk). A client of the public API through the SDK, with the key
 * and project of the `wa` configuration.
 *
 * - `wa mcp` serves over stdio (what desktop agents launch).
 * - `wa mcp --http PORT` serves streamable HTTP at http://127.0.0.1:PORT/mcp (stateless: each
 *   POST is one exchange; loopback only, since every caller acts with the configured key).
 *
 * Tools: do_anything (progress notifications from the run's events; a canceled tool call cancels
 * the run), web_search, deep_research (approves the outline itself unless asked not to), track
 * (create, list or show monitors).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { createClient, type WebAgentClient, WebAgentError } from "../client/index.ts"
import type { Connection } from "./config.ts"
import { describeEvent } from "./render.ts"

const stringArray = { type: "array", items: { type: "string" } } as const

export const tools = [
  {
    name: "do_anything",
    description: "Carry out a task in a real web browser with the web agent (navigate, click, type, read, extract). " +
      "Give one natural-language instruction; returns the agent's output when the run ends. Progress notifications report each step.",
    inputSchema: {
      type: "object",
      properties: {
        instructions: { type: "string", description: "what to do, at most 10000 characters" },
        output_schema: { type: "object", description: "a JSON schema the output must match (optional)" },
        max_duration_minutes: { type: "integer", minimum: 1, maximum: 10080 }
      },
      required: ["instructions"],
      additionalProperties: false
    }
  },
  {
    name: "web_search",
    description: "Search the web with several queries at once across engines; returns de-duplicated, re-ranked results (title, url, snippet).",
    inputSchema: {
      type: "object",
      properties: {
        queries: { ...stringArray, minItems: 1, description: "one or more queries" },
        max_results_per_query: { type: "integer", minimum: 1, maximum: 100 },
        summarize: { type: "boolean", description: "add a summary to each result (slower, costs more)" },
        engines: stringArray,
        objective: { type: "string" }
      },
      required: ["queries"],
      additionalProperties: false
    }
  },
  {
    name: "deep_research",
    description: "Research a topic on the web and write a Markdown report with citations and confidence. Takes minutes; progress notifications report phases.",
    inputSchema: {
      type: "object",
      properties: {
        topic: { type: "string", description: "1 to 2000 characters" },
        depth: { type: "string", enum: ["light", "standard", "deep"] },
        target_audience: { type: "string" },
        approve_outline: { type: "boolean", description: "approve the planned outline automatically (default true); false skips the approval step" }
      },
      required: ["topic"],
      additionalProperties: false
    }
  },
  {
    name: "track",
    description: "Watch web pages for changes: create a monitor (intent, target URLs, a schedule), list monitors, or show one with its latest snapshots.",
    inputSchema: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["create", "list", "show"], description: "default create" },
        intent: { type: "string", description: "create: what to watch for (4 to 4000 characters)" },
        target_urls: { ...stringArray, maxItems: 20 },
        interval_seconds: { type: "integer", minimum: 1 },
        cron: { type: "string", description: "create: a cron expression instead of interval_seconds" },
        tz: { type: "string" },
        callback_url: { type: "string", description: "create: where change notifications are POSTed (default: the console inbox)" },
        monitor_id: { type: "string", description: "show: the monitor" }
      },
      additionalProperties: false
    }
  }
] as const

interface ToolContext {
  readonly signal: AbortSignal
  readonly progress: (progress: number, message: string) => Promise<void>
}

const text = (value: unknown) => typeof value === "string" ? value : JSON.stringify(value, null, 2)

const ok = (body: string, structured: Record<string, unknown>, isError = false): CallToolResult => ({
  content: [{ type: "text", text: body }],
  structuredContent: structured,
  ...(isError ? { isError: true } : {})
})

const args = (value: unknown): Record<string, any> => (typeof value === "object" && value !== null ? value as Record<string, any> : {})

const handlers: Record<string, (client: WebAgentClient, input: Record<string, any>, ctx: ToolContext) => Promise<CallToolResult>> = {
  do_anything: async (client, input, ctx) => {
    const session = await client.runs.create({
      instructions: input.instructions,
      keep_alive: false,
      ...(input.output_schema !== undefined ? { output_schema: input.output_schema } : {}),
      ...(input.max_duration_minutes !== undefined ? { max_duration_minutes: input.max_duration_minutes } : {})
    })
    const runId = session.latest_run_id!
    const onAbort = () => void client.runs.cancel(session.id, runId, "the MCP tool call was canceled").catch(() => {})
    ctx.signal.addEventListener("abort", onAbort, { once: true })
    let n = 0
    try {
      const run = await client.runs.wait(session.id, runId, {
        signal: ctx.signal,
        onEvent: async (event) => {
          const message = describeEvent(event)
          if (message !== undefined) await ctx.progress(++n, message)
        }
      })
      const structured = { session_id: session.id, run_id: runId, status: run.status, output: run.output ?? null, error: run.error }
      if (run.status === "done") return ok(text(run.output), structured)
      return ok(`the run ended ${run.status}${run.error ? `: ${run.error.code}: ${run.error.detail}` : ""}`, structured, true)
    } finally {
      ctx.signal.removeEventListener("abort", onAbort)
    }
  },
  web_search: async (client, input, ctx) => {
    const run = await client.search.run({
      queries: input.queries,
      ...(input.max_results_per_query !== undefined ? { max_results_per_query: input.max_results_per_query } : {}),
      ...(input.summarize !== undefined ? { summarize: input.summarize } : {}),
      ...(input.engines !== undefined ? { engines: input.engines } : {}),
      ...(input.objective !== undefined ? { objective: input.objective } : {})
    } as never, { signal: ctx.signal })
    if (run.results === null) {
      return ok(`the search ended ${run.status}${run.error ? `: ${run.error.code}: ${run.error.detail}` : ""}`, { run_id: run.id, status: run.status, error: run.error }, true)
    }
    const results = run.results.results.map((r) => ({ title: r.title, url: r.url, snippet: r.snippet, summary: r.summary, rank: r.final_rank, query: r.source_query }))
    const body = results.map((r, i) => `${i + 1}. ${r.title}\n${r.url}\n${r.summary ?? r.snippet ?? ""}`).join("\n\n")
    return ok(body === "" ? "no results" : body, { run_id: run.id, status: run.status, total_unique_results: run.results.total_unique_results, results })
  },
  deep_research: async (client, input, ctx) => {
    const approve = input.approve_outline !== false
    const created = await client.research.create({
      topic: input.topic,
      ...(input.depth !== undefined ? { depth: input.depth } : {}),
      ...(input.target_audience !== undefined ? { target_audience: input.target_audience } : {}),
      ...(approve ? {} : { require_outline_approval: false })
    })
    const onAbort = () => void client.research.cancel(created.id, "the MCP tool call was canceled").catch(() => {})
    ctx.signal.addEventListener("abort", onAbort, { once: true })
    let n = 0
    try {
      const run = await client.research.wait(created.id, {
        signal: ctx.signal,
        onEvent: async (event) => {
          const message = describeEvent(event)
          if (message !== undefined) await ctx.progress(++n, message)
        },
        onOutline: () => "approve"
      })
      const structured = {
        run_id: run.id,
        status: run.status,
        citations_count: run.result?.citations_count ?? 0,
        confidence_summary: run.result?.confidence_summary ?? null,
        error: run.error
      }
      if (run.result !== null) return ok(run.result.final_md, structured)
      return ok(`the research ended ${run.status}${run.error ? `: ${run.error.code}: ${run.error.detail}` : ""}`, structured, true)
    } finally {
      ctx.signal.removeEventListener("abort", onAbort)
    }
  },
  track: async (client, input) => {
    const action = input.action ?? "create"
    if (action === "list") {
      const list = await client.monitors.list({ page_size: 100 })
      const items = list.items.map((m) => ({ id: m.id, status: m.status, intent: m.intent_text, last_tick_at: m.last_tick_at }))
      return ok(items.map((m) => `${m.id} ${m.status} ${m.intent}`).join("\n") || "no monitors", { total: list.total, items })
    }
    if (action === "show") {
      if (typeof input.monitor_id !== "string") return ok("show needs monitor_id", {}, true)
      const monitor = await client.monitors.get(input.monitor_id)
      const snapshots = await client.monitors.snapshots(input.monitor_id, { limit: 5 })
      return ok(text({ ...monitor, recent_snapshots: snapshots.items }), { monitor, recent_snapshots: snapshots.items })
    }
    if (typeof input.intent !== "string") return ok("create needs intent", {}, true)
    const schedule = input.interval_seconds !== undefined
      ? { kind: "interval", interval_seconds: input.interval_seconds }
      : input.cron !== undefined
      ? { kind: "cron", expr: input.cron, ...(input.tz !== undefined ? { tz: input.tz } : {}) }
      : undefined
    const created = await client.monitors.create({
      intent: input.intent,
      notify_channel: input.callback_url !== undefined ? { kind: "callback_url", url: input.callback_url } : { kind: "console_inbox" },
      ...(schedule !== undefined ? { schedule } : {}),
      ...(input.target_urls !== undefined ? { target_urls: input.target_urls } : {})
    } as never)
    return ok(`monitor ${created.id} (${created.status}); notify_secret: ${created.notify_secret}`, {
      monitor_id: created.id,
      status: created.status,
      notify_secret: created.notify_secret
    })
  }
}

/** An MCP server (not yet connected) whose tools call the service through `client`. */
export const makeMcpServer = (client: WebAgentClient): Server => {
  const server = new Server({ name: "web-agent-service", version: "0.1.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools as unknown as Array<any> }))
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const handler = handlers[request.params.name]
    if (handler === undefined) return ok(`unknown tool ${request.params.name}`, {}, true)
    const token = extra._meta?.progressToken
    const ctx: ToolContext = {
      signal: extra.signal,
      progress: async (progress, message) => {
        if (token === undefined) return
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message } }).catch(() => {})
      }
    }
    try {
      return await handler(client, args(request.params.arguments), ctx)
    } catch (error) {
      // Refusals are tool errors the calling agent can read and correct, not protocol errors.
      if (error instanceof WebAgentError) {
        return ok(`${error.code}: ${error.detail}`, { status: error.status, code: error.code, detail: error.detail, extra: error.extra }, true)
      }
      throw error
    }
  })
  return server
}

/** Serves streamable HTTP on 127.0.0.1:port at /mcp; resolves with the URL and a close function. */
export const serveMcpHttp = async (client: WebAgentClient, port: number) => {
  const http = createServer(async (req, res) => {
    if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "not found: the MCP endpoint is /mcp" }))
      return
    }
    if (req.method !== "POST") {
      // Stateless: no server-initiated stream (GET) and no session to delete.
      res.writeHead(405, { allow: "POST", "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed." }, id: null }))
      return
    }
    const server = makeMcpServer(client)
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined } as {}) // undefined: stateless mode
    res.on("close", () => {
      void transport.close()
      void server.close()
    })
    try {
      await server.connect(transport)
      await transport.handleRequest(req, res)
    } catch (error) {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: String(error) }, id: null }))
      }
    }
  })
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject)
    http.listen(port, "127.0.0.1", () => resolve())
  })
  const address = http.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    close: () => new Promise<void>((resolve) => {
      http.closeAllConnections()
      http.close(() => resolve())
    })
  }
}

/** `wa mcp [--http PORT]`: serves until stdin closes (stdio) or a signal arrives (HTTP). */
export const runMcp = async (connection: Connection, httpPort: number | undefined): Promise<number> => {
  const client = createClient({ baseUrl: connection.url, token: connection.apiKey, projectId: connection.projectId })
  if (httpPort === undefined) {
    const server = makeMcpServer(client)
    const transport = new StdioServerTransport()
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve))
    await server.connect(transport)
    process.stdin.once("end", () => void server.close())
    await closed
    return 0
  }
  const served = await serveMcpHttp(client, httpPort)
  // The one line a supervisor (or a test) reads to find the endpoint; logs go to stderr.
  process.stdout.write(JSON.stringify({ mcp: served.url }) + "\n")
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve)
    process.once("SIGTERM", resolve)
  })
  await served.close()
  return 0
}
