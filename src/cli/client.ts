/**
 * The client commands of `wa` (clients of the public API through the SDK, src/client):
 *
 *   wa run "instructions" [--follow] [--no-wait] [--keep-alive] [--max-duration MIN] [--output-schema JSON]
 *   wa research "topic" [--follow] [--approve] [--depth light|standard|deep] [--audience TEXT] [--no-outline] [--no-wait]
 *   wa search "q1" ["q2" ...] [--engines a,b] [--max-results N] [--summarize] [--language L] [--objective TEXT]
 *   wa monitors create --intent TEXT [--target URL ...] [--interval SECONDS | --cron EXPR [--tz TZ]] [--notify inbox|URL|webhook:ID]
 *   wa monitors list [--status S] [--page N]
 *   wa monitors show MONITOR_ID
 *   wa mcp [--http PORT]
 *
 * Common flags: --json (one JSON document on stdout; with --follow, one JSON line per event then the
 * result), --url, --key, --project, --config (see src/cli/config.ts). Exit codes: see EXIT below.
 */
import { createInterface } from "node:readline/promises"
import { createClient, type WebAgentClient, WebAgentError } from "../client/index.ts"
import type { StreamEvent } from "../client/sse.ts"
import { ConfigError, type Connection, resolveConnection } from "./config.ts"
import { Progress } from "./render.ts"
import { clientUsage } from "./usage.ts"

/** Exit codes, one per kind of failure, so scripts can branch without parsing text. */
export const EXIT = {
  ok: 0,
  /** The task ran and failed. */
  taskFailed: 1,
  /** Bad command line or configuration. */
  usage: 2,
  /** 401/403: the key is missing, wrong, revoked or not for this project. */
  auth: 3,
  /** 404: no such run, session or monitor. */
  notFound: 4,
  /** Another 4xx: the service refused the request (validation, conflict, credits). */
  rejected: 5,
  /** 429 after the retries: rate limit or concurrent sessions. */
  rateLimited: 6,
  /** The service is unreachable or failed (network error, 5xx after the retries). */
  unavailable: 7,
  /** The task was canceled. */
  canceled: 8,
  /** The task waits for a person's answer and none can be asked (no terminal, no --approve). */
  needsInput: 9
} as const


export class UsageError extends Error {}

const BOOLEAN_FLAGS = new Set(["follow", "json", "approve", "keep-alive", "no-wait", "summarize", "no-outline", "help"])
const VALUE_FLAGS = new Set([
  "url", "key", "project", "config", "depth", "audience", "max-duration", "output-schema", "engines", "max-results",
  "language", "objective", "intent", "target", "interval", "cron", "tz", "notify", "status", "page", "http", "max-cost"
])

export interface Parsed {
  readonly positional: Array<string>
  readonly flags: Map<string, Array<string>>
  readonly bools: Set<string>
}

export const parseArgs = (args: ReadonlyArray<string>): Parsed => {
  const positional: Array<string> = []
  const flags = new Map<string, Array<string>>()
  const bools = new Set<string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") {
      positional.push(...args.slice(i + 1))
      break
    }
    if (!arg.startsWith("--")) {
      positional.push(arg)
      continue
    }
    const eq = arg.indexOf("=")
    const name = arg.slice(2, eq === -1 ? undefined : eq)
    if (BOOLEAN_FLAGS.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`)
      bools.add(name)
    } else if (VALUE_FLAGS.has(name)) {
      const value = eq !== -1 ? arg.slice(eq + 1) : args[++i]
      if (value === undefined) throw new UsageError(`--${name} needs a value`)
      flags.set(name, [...(flags.get(name) ?? []), value])
    } else {
      throw new UsageError(`unknown flag --${name}`)
    }
  }
  return { positional, flags, bools }
}

const one = (parsed: Parsed, name: string): string | undefined => parsed.flags.get(name)?.at(-1)
const integer = (parsed: Parsed, name: string, min: number, max: number): number | undefined => {
  const raw = one(parsed, name)
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) throw new UsageError(`--${name} is a whole number from ${min} to ${max}`)
  return value
}

/** What a command needs: the client, the parsed flags and where to write. */
interface Context {
  readonly client: WebAgentClient
  readonly parsed: Parsed
  readonly json: boolean
  readonly out: (text: string) => void
}

const printJson = (ctx: Context, value: unknown) => ctx.out(JSON.stringify(value) + "\n")

const exitForStatus = (status: string): number =>
  status === "done" || status === "succeeded" ? EXIT.ok : status === "canceled" ? EXIT.canceled : EXIT.taskFailed

const showOutput = (ctx: Context, output: unknown) =>
  ctx.out(typeof output === "string" ? `${output}\n` : `${JSON.stringify(output, null, 2)}\n`)

/** Reads one answer from the terminal (stdin), or undefined when stdin is not a terminal. */
const ask = async (question: string): Promise<string | undefined> => {
  if (process.stdin.isTTY !== true) return undefined
  const rl = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return await rl.question(question)
  } finally {
    rl.close()
  }
}

class NeedsInput extends Error {}

/**
 * Waits for the run, answering its questions on the terminal. `follow` shows every event (lines
 * on stderr, or JSON lines with --json); without it only the result is printed.
 */
const followRun = async (ctx: Context, sessionId: string, runId: string, follow: boolean): Promise<number> => {
  const progress = ctx.json || !follow ? undefined : new Progress()
  const run = await ctx.client.runs.wait(sessionId, runId, {
    onEvent: async (event) => {
      if (follow && ctx.json) printJson(ctx, { event })
      else progress?.event(event)
      if (!follow && event.type === "run.input_request") process.stderr.write(`? ${event.data?.prompt ?? ""}\n`)
      if (event.type === "run.input_request") {
        const id = String(event.data?.input_request_id ?? event.data?.request_id)
        const answer = await ask(`answer> `)
        if (answer === undefined) {
          throw new NeedsInput(`the run asks: ${event.data?.prompt ?? "(no prompt)"}\nanswer it with POST .../runs/${runId}/intervene {"input_request_id": "${id}", "response": ...}`)
        }
        await ctx.client.runs.answer(sessionId, runId, id, answer)
      }
    }
  })
  progress?.done()
  if (ctx.json) printJson(ctx, follow ? { run } : run)
  else if (run.error !== null) process.stderr.write(`${run.status}: ${run.error.code}: ${run.error.detail}\n`)
  else if (run.status === "done") showOutput(ctx, run.output)
  else process.stderr.write(`${run.status}${run.terminal_reason ? ` (${run.terminal_reason})` : ""}\n`)
  return exitForStatus(run.status)
}

const runCommand = async (ctx: Context): Promise<number> => {
  const instructions = ctx.parsed.positional.join(" ").trim()
  if (instructions === "") throw new UsageError(`wa run needs the instructions\n${clientUsage}`)
  let outputSchema: unknown
  const rawSchema = one(ctx.parsed, "output-schema")
  if (rawSchema !== undefined) {
    try {
      outputSchema = JSON.parse(rawSchema)
    } catch {
      throw new UsageError("--output-schema is a JSON object")
    }
  }
  const maxDuration = integer(ctx.parsed, "max-duration", 1, 10080)
  const session = await ctx.client.runs.create({
    instructions,
    // A one-shot command: the session closes after the run unless asked to stay warm.
    keep_alive: ctx.parsed.bools.has("keep-alive"),
    ...(maxDuration !== undefined ? { max_duration_minutes: maxDuration } : {}),
    ...(outputSchema !== undefined ? { output_schema: outputSchema as Record<string, unknown> } : {})
  })
  const runId = session.latest_run_id!
  if (ctx.parsed.bools.has("no-wait")) {
    if (ctx.json) printJson(ctx, session)
    else ctx.out(`session ${session.id}\nrun ${runId}\n`)
    return EXIT.ok
  }
  return followRun(ctx, session.id, runId, ctx.parsed.bools.has("follow"))
}

const outlineText = (outline: any): string =>
  outline === null || outline === undefined
    ? "(no outline)"
    : [`# ${outline.title}`, ...(outline.sections ?? []).map((s: any, i: number) => `${i + 1}. ${s.title}${s.section_id ? ` [${s.section_id}]` : ""}`)].join("\n")

const researchCommand = async (ctx: Context): Promise<number> => {
  const topic = ctx.parsed.positional.join(" ").trim()
  if (topic === "") throw new UsageError(`wa research needs the topic\n${clientUsage}`)
  const depth = one(ctx.parsed, "depth")
  if (depth !== undefined && !["light", "standard", "deep"].includes(depth)) throw new UsageError("--depth is light, standard or deep")
  const audience = one(ctx.parsed, "audience")
  const approve = ctx.parsed.bools.has("approve")
  const created = await ctx.client.research.create({
    topic,
    ...(depth !== undefined ? { depth: depth as "light" } : {}),
    ...(audience !== undefined ? { target_audience: audience } : {}),
    ...(ctx.parsed.bools.has("no-outline") ? { require_outline_approval: false } : {})
  })
  if (ctx.parsed.bools.has("no-wait")) {
    if (ctx.json) printJson(ctx, created)
    else ctx.out(`run ${created.id}\n`)
    return EXIT.ok
  }
  const follow = ctx.parsed.bools.has("follow")
  const progress = ctx.json || !follow ? undefined : new Progress()
  const run = await ctx.client.research.wait(created.id, {
    onEvent: (event: StreamEvent) => {
      if (!follow) return
      if (ctx.json) printJson(ctx, { event })
      else progress!.event(event)
    },
    onOutline: async ({ outline }) => {
      if (approve) {
        progress?.print("outline approved (--approve)")
        return "approve"
      }
      progress?.print(outlineText(outline))
      const answer = await ask("approve this outline? [Y/n] ")
      if (answer === undefined) throw new NeedsInput(`the research run ${created.id} waits for outline approval; rerun with --approve, or approve it through the API`)
      if (/^n/i.test(answer.trim())) {
        await ctx.client.research.cancel(created.id, "outline rejected from the command line")
        return undefined
      }
      return "approve"
    }
  })
  progress?.done()
  if (ctx.json) printJson(ctx, follow ? { run } : run)
  else if (run.result !== null) {
    ctx.out(`${run.result.final_md}\n`)
    const c = run.result.confidence_summary
    process.stderr.write(`citations ${run.result.citations_count} · confidence high ${c?.high ?? 0} medium ${c?.medium ?? 0} low ${c?.low ?? 0}\n`)
  } else process.stderr.write(`${run.status}${run.error ? `: ${run.error.code}: ${run.error.detail}` : ""}\n`)
  return exitForStatus(run.status)
}

const searchCommand = async (ctx: Context): Promise<number> => {
  const queries = ctx.parsed.positional.filter((q) => q.trim() !== "")
  if (queries.length === 0) throw new UsageError(`wa search needs at least one query\n${clientUsage}`)
  const engines = one(ctx.parsed, "engines")?.split(",").map((e) => e.trim()).filter((e) => e !== "")
  const maxResults = integer(ctx.parsed, "max-results", 1, 100)
  const language = one(ctx.parsed, "language")
  const objective = one(ctx.parsed, "objective")
  const run = await ctx.client.search.run({
    queries,
    ...(engines !== undefined ? { engines } : {}),
    ...(maxResults !== undefined ? { max_results_per_query: maxResults } : {}),
    ...(ctx.parsed.bools.has("summarize") ? { summarize: true } : {}),
    ...(language !== undefined ? { language } : {}),
    ...(objective !== undefined ? { objective } : {})
  } as never)
  if (ctx.json) {
    printJson(ctx, run)
    return exitForStatus(run.status)
  }
  if (run.results === null) {
    process.stderr.write(`${run.status}${run.error ? `: ${run.error.code}: ${run.error.detail}` : ""}\n`)
    return exitForStatus(run.status)
  }
  const results = run.results.results
  results.forEach((r, i) => {
    ctx.out(`${i + 1}. ${r.title}\n   ${r.url}\n${r.summary ?? r.snippet ? `   ${(r.summary ?? r.snippet ?? "").replace(/\s+/g, " ").slice(0, 300)}\n` : ""}`)
  })
  process.stderr.write(`${run.results.total_unique_results} unique results\n`)
  return exitForStatus(run.status)
}

const notifyChannel = (value: string | undefined) => {
  if (value === undefined || value === "inbox" || value === "console_inbox") return { kind: "console_inbox" as const }
  if (value.startsWith("webhook:")) return { kind: "global_webhook" as const, webhook_id: value.slice("webhook:".length) }
  if (/^https?:\/\//.test(value)) return { kind: "callback_url" as const, url: value }
  throw new UsageError("--notify is inbox, a callback URL (http[s]://...) or webhook:WEBHOOK_ID")
}

const monitorLine = (m: any) =>
  `${m.id}  ${m.status.padEnd(22)}  ${m.last_tick_at ?? "never".padEnd(24)}  ${String(m.intent_text).replace(/\s+/g, " ").slice(0, 60)}`

const monitorsCommand = async (ctx: Context): Promise<number> => {
  const [sub, ...rest] = ctx.parsed.positional
  if (sub === "create") {
    const intent = one(ctx.parsed, "intent") ?? rest.join(" ")
    if (intent.trim() === "") throw new UsageError(`wa monitors create needs --intent\n${clientUsage}`)
    const interval = integer(ctx.parsed, "interval", 1, 315_360_000)
    const cron = one(ctx.parsed, "cron")
    if (interval !== undefined && cron !== undefined) throw new UsageError("give --interval or --cron, not both")
    const tz = one(ctx.parsed, "tz")
    const schedule = interval !== undefined
      ? { kind: "interval", interval_seconds: interval }
      : cron !== undefined
      ? { kind: "cron", expr: cron, ...(tz !== undefined ? { tz } : {}) }
      : undefined
    const targets = ctx.parsed.flags.get("target")
    const created = await ctx.client.monitors.create({
      intent,
      notify_channel: notifyChannel(one(ctx.parsed, "notify")),
      ...(schedule !== undefined ? { schedule } : {}),
      ...(targets !== undefined ? { target_urls: targets } : {})
    } as never)
    if (ctx.json) printJson(ctx, created)
    else {
      ctx.out(`${monitorLine(created)}\n`)
      process.stderr.write(`notify_secret (shown once): ${created.notify_secret}\n`)
    }
    return EXIT.ok
  }
  if (sub === "list") {
    const status = one(ctx.parsed, "status")
    const page = integer(ctx.parsed, "page", 1, 100_000)
    const list = await ctx.client.monitors.list({ ...(status !== undefined ? { status } : {}), ...(page !== undefined ? { page } : {}) })
    if (ctx.json) printJson(ctx, list)
    else {
      for (const m of list.items) ctx.out(`${monitorLine(m)}\n`)
      process.stderr.write(`${list.total} monitor(s)${list.has_more ? `, more on --page ${list.page + 1}` : ""}\n`)
    }
    return EXIT.ok
  }
  if (sub === "show") {
    const id = rest[0]
    if (id === undefined) throw new UsageError(`wa monitors show needs a monitor id\n${clientUsage}`)
    const monitor = await ctx.client.monitors.get(id)
    const snapshots = await ctx.client.monitors.snapshots(id, { limit: 5 })
    if (ctx.json) printJson(ctx, { ...monitor, recent_snapshots: snapshots.items })
    else {
      ctx.out(`${JSON.stringify(monitor, null, 2)}\n`)
      for (const s of snapshots.items as ReadonlyArray<any>) ctx.out(`snapshot ${s.id}  ${s.created_at}  ${s.diff === null ? "baseline" : "diff"}\n`)
    }
    return EXIT.ok
  }
  throw new UsageError(`wa monitors create|list|show\n${clientUsage}`)
}

export const exitForError = (error: unknown): number => {
  if (error instanceof UsageError || error instanceof ConfigError) return EXIT.usage
  if (error instanceof NeedsInput) return EXIT.needsInput
  if (error instanceof WebAgentError) {
    if (error.status === 0 || error.status >= 500) return EXIT.unavailable
    if (error.status === 401 || error.status === 403) return EXIT.auth
    if (error.status === 404) return EXIT.notFound
    if (error.status === 429) return EXIT.rateLimited
    return EXIT.rejected
  }
  return EXIT.unavailable
}

/** Runs a client command; resolves to the process exit code (errors are written to stderr). */
export const runClientCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const [command, ...args] = argv
  let parsed: Parsed | undefined
  try {
    parsed = parseArgs(args)
    if (parsed.bools.has("help")) {
      process.stdout.write(`${clientUsage}\n`)
      return EXIT.ok
    }
    const connection: Connection = resolveConnection({
      url: one(parsed, "url"),
      key: one(parsed, "key"),
      project: one(parsed, "project"),
      config: one(parsed, "config")
    })
    if (command === "mcp") {
      const { runMcp } = await import("./mcp.ts")
      const port = integer(parsed, "http", 0, 65535)
      return await runMcp(connection, port)
    }
    const client = createClient({ baseUrl: connection.url, token: connection.apiKey, projectId: connection.projectId })
    const ctx: Context = { client, parsed, json: parsed.bools.has("json"), out: (text) => void process.stdout.write(text) }
    switch (command) {
      case "run":
        return await runCommand(ctx)
      case "research":
        return await researchCommand(ctx)
      case "search":
        return await searchCommand(ctx)
      case "monitors":
        return await monitorsCommand(ctx)
      default:
        throw new UsageError(clientUsage)
    }
  } catch (error) {
    const code = exitForError(error)
    if (parsed?.bools.has("json") === true && error instanceof WebAgentError) {
      process.stdout.write(JSON.stringify({ error: { status: error.status, code: error.code, detail: error.detail, extra: error.extra } }) + "\n")
    }
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
    return code
  }
}

/** Runs the command and ends the process with its exit code once stdout is flushed. */
export const mainClient = async (argv: ReadonlyArray<string>): Promise<never> => {
  const code = await runClientCommand(argv)
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()))
  process.exit(code)
}
