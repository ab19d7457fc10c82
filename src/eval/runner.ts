/**
 * Runs the evaluation suite (src/eval/tasks.ts) against a running service through its REST API,
 * with whatever model the service is configured with: starts the fixture sites (src/eval/sites.ts)
 * on loopback, creates one DoAnything session per task (a workspace where the task needs one),
 * answers the run's input requests the way the person running the eval would (the 2FA code the
 * site "sent to the phone"), waits for the run to end and checks that its output carries the code
 * the site revealed. Figures per task come from the run and its session: status, step_count, the
 * cost fields, and tokens when the service reports them on its events; wall time is measured here.
 *
 * Client side only: the SDK (src/client) and node:http, nothing of the server.
 */
import { createClient, type StreamEvent, WebAgentError } from "../client/index.ts"
import { type EvalSite, startEvalSite } from "./sites.ts"
import { type EvalTask, evalTasks, instructionsFor } from "./tasks.ts"

export interface EvalConnection {
  readonly url: string
  readonly apiKey: string
  readonly projectId: string
}

export interface EvalOptions {
  readonly connection: EvalConnection
  /** Task names; empty or ["all"]: every task. */
  readonly tasks?: ReadonlyArray<string>
  /** Runs of each task (default 1). */
  readonly repeat?: number
  /** Tasks run at once (default 4: under the service's default of 5 concurrent sessions per key). */
  readonly concurrency?: number
  /** A task's run is canceled after this long (default 300 000 ms). */
  readonly taskTimeoutMs?: number
  /** Address the fixture sites bind to (default 127.0.0.1) and the host the agent is sent to. */
  readonly siteHost?: string
  readonly sitePublicHost?: string
  /** Called as each task ends (progress lines). */
  readonly onResult?: (result: TaskResult) => void
}

export interface TaskResult {
  readonly task: string
  readonly category: string
  /** 1-based, for --repeat. */
  readonly attempt: number
  readonly success: boolean
  /** The run's status (done, failed, canceled) or "error" when the API refused the task. */
  readonly status: string
  readonly steps: number
  /** Null when the service does not report tokens. */
  readonly input_tokens: number | null
  readonly output_tokens: number | null
  /** The session's total_cost_usd (model, browser and proxy). */
  readonly cost_usd: number
  readonly llm_cost_usd: number
  readonly wall_ms: number
  /** Why it failed, in a line (wrong output, the run's error, the API's refusal). */
  readonly reason: string | null
  readonly session_id: string | null
  readonly run_id: string | null
}

export interface EvalTotals {
  readonly runs: number
  readonly passed: number
  readonly success_rate: number
  readonly steps: number
  readonly input_tokens: number | null
  readonly output_tokens: number | null
  readonly cost_usd: number
  readonly wall_ms: number
  /** Mean per run. */
  readonly mean_steps: number
  readonly mean_wall_ms: number
}

export interface EvalReport {
  readonly service: string
  readonly model: string | null
  readonly started_at: string
  /** Wall time of the whole eval (tasks run concurrently; totals.wall_ms sums the tasks'). */
  readonly elapsed_ms: number
  readonly concurrency: number
  readonly results: ReadonlyArray<TaskResult>
  readonly totals: EvalTotals
}

export class EvalUsageError extends Error {}

/** The tasks a `--tasks` list names (all when empty or "all"); an unknown name is a usage error. */
export const selectTasks = (names: ReadonlyArray<string> = []): ReadonlyArray<EvalTask> => {
  const wanted = names.flatMap((n) => n.split(",")).map((n) => n.trim()).filter((n) => n !== "")
  if (wanted.length === 0 || wanted.includes("all")) return evalTasks
  const byName = new Map(evalTasks.map((t) => [t.name, t]))
  const byCategory = (name: string) => evalTasks.filter((t) => t.category === name)
  const unknown = wanted.filter((n) => !byName.has(n) && byCategory(n).length === 0)
  if (unknown.length > 0) throw new EvalUsageError(`unknown task(s): ${unknown.join(", ")}; \`wa eval --list\` names them`)
  const picked = new Set(wanted.flatMap((n) => byName.has(n) ? [byName.get(n)!] : byCategory(n)))
  return evalTasks.filter((t) => picked.has(t))
}

const num = (value: unknown): number => {
  const n = typeof value === "number" ? value : Number(value)
  return Number.isFinite(n) ? n : 0
}

/** Tokens a cost-update (or usage) event reports, under the names providers use. */
const tokensOf = (event: StreamEvent): { input: number; output: number } | undefined => {
  const data = (event.data ?? {}) as Record<string, unknown>
  const inner = (typeof data["data"] === "object" && data["data"] !== null ? data["data"] : data) as Record<string, unknown>
  const input = inner["input_tokens"] ?? inner["prompt_tokens"]
  const output = inner["output_tokens"] ?? inner["completion_tokens"]
  if (input === undefined && output === undefined) return undefined
  return { input: num(input), output: num(output) }
}

const sum = (values: ReadonlyArray<number | null>): number | null =>
  values.some((v) => v === null) ? null : values.reduce<number>((a, v) => a + (v ?? 0), 0)

export const totalsOf = (results: ReadonlyArray<TaskResult>): EvalTotals => {
  const runs = results.length
  const passed = results.filter((r) => r.success).length
  const steps = results.reduce((a, r) => a + r.steps, 0)
  const wall = results.reduce((a, r) => a + r.wall_ms, 0)
  return {
    runs,
    passed,
    success_rate: runs === 0 ? 0 : passed / runs,
    steps,
    input_tokens: sum(results.map((r) => r.input_tokens)),
    output_tokens: sum(results.map((r) => r.output_tokens)),
    cost_usd: Math.round(results.reduce((a, r) => a + r.cost_usd, 0) * 1e6) / 1e6,
    wall_ms: wall,
    mean_steps: runs === 0 ? 0 : steps / runs,
    mean_wall_ms: runs === 0 ? 0 : wall / runs
  }
}

export const runEval = async (options: EvalOptions): Promise<EvalReport> => {
  const tasks = selectTasks(options.tasks)
  const repeat = options.repeat ?? 1
  const concurrency = Math.max(1, options.concurrency ?? 4)
  const timeoutMs = options.taskTimeoutMs ?? 300_000
  const { connection } = options
  const client = createClient({ baseUrl: connection.url, token: connection.apiKey, projectId: connection.projectId })
  const base = connection.url.replace(/\/+$/, "")
  const api = async (method: string, path: string, body?: unknown, raw?: { data: string; type: string }): Promise<any> => {
    const response = await fetch(`${base}/v1/projects/${connection.projectId}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${connection.apiKey}`,
        ...(body !== undefined || raw !== undefined ? { "content-type": raw?.type ?? "application/json" } : {})
      },
      ...(raw !== undefined ? { body: raw.data } : body !== undefined ? { body: JSON.stringify(body) } : {})
    })
    const text = await response.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    if (!response.ok) throw new WebAgentError(response.status, json?.code ?? "http_error", json?.detail ?? text.slice(0, 200), json?.extra ?? {})
    return json
  }

  const site: EvalSite = await startEvalSite({
    ...(options.siteHost !== undefined ? { host: options.siteHost } : {}),
    ...(options.sitePublicHost !== undefined ? { publicHost: options.sitePublicHost } : {})
  })
  const startedAt = new Date().toISOString()
  const startedMs = Date.now()
  let model: string | null = null

  const runTask = async (task: EvalTask, attempt: number): Promise<TaskResult> => {
    const started = Date.now()
    let sessionId: string | null = null
    let runId: string | null = null
    let tokens: { input: number; output: number } | null = null
    const result = (fields: Partial<TaskResult> & { success: boolean; status: string; reason: string | null }): TaskResult => ({
      task: task.name,
      category: task.category,
      attempt,
      steps: 0,
      input_tokens: tokens?.input ?? null,
      output_tokens: tokens?.output ?? null,
      cost_usd: 0,
      llm_cost_usd: 0,
      wall_ms: Date.now() - started,
      session_id: sessionId,
      run_id: runId,
      ...fields
    })
    try {
      let workspaceId: string | undefined
      if (task.workspace !== undefined) {
        const ws = await api("POST", "/workspaces", { name: `eval ${task.name} ${attempt} ${Date.now().toString(36)}` })
        workspaceId = ws.id as string
        for (const file of task.workspace.files ?? []) {
          await api("PUT", `/workspaces/${workspaceId}/files/${encodeURIComponent(file)}`, undefined, { data: site.uploadContent, type: "text/plain" })
        }
      }
      const session = await client.runs.create({
        instructions: instructionsFor(task, site),
        keep_alive: false,
        max_duration_minutes: Math.max(1, Math.ceil(timeoutMs / 60_000)),
        ...(workspaceId !== undefined ? { workspace_id: workspaceId } : {})
      })
      sessionId = session.id
      runId = session.latest_run_id!
      const abort = new AbortController()
      const timer = setTimeout(() => {
        abort.abort()
        void client.runs.cancel(sessionId!, runId!, "eval task timed out").catch(() => undefined)
      }, timeoutMs)
      let run
      try {
        run = await client.runs.wait(sessionId, runId, {
          signal: abort.signal,
          onEvent: async (event) => {
            const used = event.type === "run.cost_update" || event.type === "run.usage" ? tokensOf(event) : undefined
            if (used !== undefined) tokens = { input: (tokens?.input ?? 0) + used.input, output: (tokens?.output ?? 0) + used.output }
            if (event.type === "run.input_request") {
              const data: Record<string, unknown> = event.data
              const id = String(data["input_request_id"] ?? data["request_id"])
              await client.runs.answer(sessionId!, runId!, id, task.answer?.(site, String(data["prompt"] ?? "")) ?? "I cannot help with that; go on without it.")
            }
          }
        })
      } catch (error) {
        if (!abort.signal.aborted) throw error
        run = await client.runs.get(sessionId, runId)
      } finally {
        clearTimeout(timer)
      }
      model ??= run.model
      const sessionNow = await api("GET", `/do_anything/sessions/${sessionId}`)
      const output = typeof run.output === "string" ? run.output : JSON.stringify(run.output ?? null)
      const code = site.codeOf(task.name)
      let reason: string | null = null
      if (run.status !== "done") reason = run.error !== null ? `${run.status}: ${run.error.code}: ${run.error.detail}` : `${run.status}${run.terminal_reason ? ` (${run.terminal_reason})` : ""}`
      else if (!output.includes(code)) reason = `the output lacks the site's code: ${output.replace(/\s+/g, " ").slice(0, 160)}`
      if (reason === null && task.workspace?.expectFile !== undefined) {
        const files = await api("GET", `/workspaces/${workspaceId}/files`)
        const names = ((files?.items ?? []) as Array<{ name: string }>).map((f) => f.name)
        if (!names.includes(task.workspace.expectFile)) reason = `the workspace lacks ${task.workspace.expectFile} (has ${names.join(", ") || "nothing"})`
      }
      return result({
        success: reason === null,
        status: Date.now() - started >= timeoutMs && run.status !== "done" ? "timeout" : run.status,
        reason,
        steps: run.step_count,
        cost_usd: num(sessionNow?.total_cost_usd),
        llm_cost_usd: num(sessionNow?.llm_cost_usd ?? run.llm_cost_usd)
      })
    } catch (error) {
      const reason = error instanceof WebAgentError ? `${error.status} ${error.code}: ${error.detail}` : error instanceof Error ? error.message : String(error)
      return result({ success: false, status: "error", reason })
    }
  }

  try {
    const queue = tasks.flatMap((task) => Array.from({ length: repeat }, (_, i) => ({ task, attempt: i + 1 })))
    const results: Array<TaskResult & { order: number }> = []
    let next = 0
    const worker = async () => {
      while (next < queue.length) {
        const order = next++
        const { task, attempt } = queue[order]!
        const result = await runTask(task, attempt)
        options.onResult?.(result)
        results.push({ ...result, order })
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker))
    const ordered = results.sort((a, b) => a.order - b.order).map(({ order: _, ...r }) => r)
    return {
      service: connection.url,
      model,
      started_at: startedAt,
      elapsed_ms: Date.now() - startedMs,
      concurrency,
      results: ordered,
      totals: totalsOf(ordered)
    }
  } finally {
    await site.close()
  }
}

const pad = (s: string, n: number) => s.length >= n ? s : s + " ".repeat(n - s.length)
const lpad = (s: string, n: number) => s.length >= n ? s : " ".repeat(n - s.length) + s
const tok = (n: number | null) => n === null ? "-" : String(n)
const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`

/** One progress line for a finished task. */
export const resultLine = (r: TaskResult): string =>
  `${r.success ? "PASS" : "FAIL"}  ${pad(r.task + (r.attempt > 1 ? `#${r.attempt}` : ""), 22)} ${lpad(String(r.steps), 3)} steps  ` +
  `${lpad(tok(r.input_tokens), 8)} in ${lpad(tok(r.output_tokens), 7)} out  $${r.cost_usd.toFixed(4)}  ${lpad(secs(r.wall_ms), 7)}` +
  (r.reason === null ? "" : `  ${r.reason}`)

/** The table of a report: one row per task run, then the totals. */
export const reportTable = (report: EvalReport): string => {
  const header = `${pad("task", 22)} ${pad("class", 16)} ok    steps  tokens in  tokens out    cost USD     wall`
  const rows = report.results.map((r) =>
    `${pad(r.task + (r.attempt > 1 ? `#${r.attempt}` : ""), 22)} ${pad(r.category, 16)} ${r.success ? "yes " : "NO  "} ${lpad(String(r.steps), 7)}  ${lpad(tok(r.input_tokens), 9)}  ${lpad(tok(r.output_tokens), 10)}  ${lpad(r.cost_usd.toFixed(4), 10)}  ${lpad(secs(r.wall_ms), 7)}`
  )
  const t = report.totals
  const total = `${pad("total", 22)} ${pad(`${t.passed}/${t.runs}`, 16)} ${lpad(`${(t.success_rate * 100).toFixed(0)}%`, 4)} ${lpad(String(t.steps), 7)}  ${lpad(tok(t.input_tokens), 9)}  ${lpad(tok(t.output_tokens), 10)}  ${lpad(t.cost_usd.toFixed(4), 10)}  ${lpad(secs(t.wall_ms), 7)}`
  const failures = report.results.filter((r) => !r.success).map((r) => `  ${r.task}${r.attempt > 1 ? `#${r.attempt}` : ""}: ${r.reason}`)
  return [
    `model ${report.model ?? "(as configured on the service)"} at ${report.service}`,
    header,
    ...rows,
    total,
    `mean per task: ${t.mean_steps.toFixed(1)} steps, ${secs(t.mean_wall_ms)}; whole eval ${secs(report.elapsed_ms)} at concurrency ${report.concurrency}${t.input_tokens === null ? "; tokens: the service does not report them" : ""}`,
    ...(failures.length > 0 ? ["failures:", ...failures] : [])
  ].join("\n")
}
