/**
 * The deterministic model of the evaluation suite: an OpenAI-compatible server on loopback
 * (`POST /v1/chat/completions`, the real Chat Completions format with tool calls and usage) that
 * follows each task's fixed plan (src/eval/tasks.ts). It finds the task by the start page in the
 * run's instructions, reads the newest observation the service sent and the tool results so far,
 * and answers with the plan's next tool call; once the page shows its success code it calls done
 * with it. CI points a service at it (WA_MODEL_BASE_URL) and runs `wa eval`: 100 % of the tasks
 * must pass, so a change that breaks a widget class fails the build.
 *
 * Token usage is reported as the request's and the reply's size in characters / 4, an image as
 * ceil(width × height / 750) (a stand-in the price table turns into a cost, so the eval's cost
 * column has figures). With vision on (WA_MODEL_VISION=on on the service), the plan gets the
 * newest observation's screenshot too: the vision tasks find what to click in it (src/eval/vision.ts).
 *
 *   npx node src/eval/scripted-model.ts [--port N]     prints {"base_url": ...} and serves until stopped
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { evalTasks, type PlanStep, PlanStuck, taskOfInstructions } from "./tasks.ts"
import { jpegOfDataUrl, jpegSize } from "./vision.ts"

interface ChatMessage {
  readonly role: string
  readonly content: unknown
  readonly tool_call_id?: string
}

interface ChatRequest {
  readonly model?: string
  readonly messages: ReadonlyArray<ChatMessage>
}

export interface PlanModel {
  /** e.g. http://127.0.0.1:PORT/v1 (WA_MODEL_BASE_URL) */
  readonly baseUrl: string
  /** Requests answered, and the plan steps that found nothing to act on (for diagnostics). */
  readonly requests: () => number
  readonly stuck: ReadonlyArray<{ readonly task: string; readonly reason: string; readonly page: string }>
  readonly close: () => Promise<void>
}

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (Array.isArray(content)) return content.map((part) => typeof part?.text === "string" ? part.text : "").join("\n")
  return content === null || content === undefined ? "" : JSON.stringify(content)
}

/** The data URLs of a message's images (Chat Completions `image_url` parts). */
const imageUrlsOf = (content: unknown): Array<string> =>
  Array.isArray(content)
    ? content.flatMap((part) => part?.type === "image_url" && typeof part.image_url?.url === "string" ? [part.image_url.url as string] : [])
    : []

/**
 * Prompt tokens of a request: its JSON at 4 characters a token without the images' base64, plus
 * ceil(width × height / 750) per image (the service's own estimate, src/agent/providers/usage.ts).
 */
export const promptTokens = (raw: string, messages: ReadonlyArray<ChatMessage>): number => {
  let chars = raw.length
  let images = 0
  for (const url of messages.flatMap((m) => imageUrlsOf(m.content))) {
    chars -= url.length
    const jpeg = jpegOfDataUrl(url)
    const size = jpeg === undefined ? undefined : jpegSize(jpeg)
    images += size === undefined ? 1_600 : Math.ceil((size.width * size.height) / 750)
  }
  return Math.ceil(Math.max(0, chars) / 4) + images
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => resolve(body))
    request.on("error", reject)
  })

/** Most steps a plan may take before it gives up (a broken widget must not loop until max_steps). */
const MAX_TURNS = 30

/** The plan's next step for one Chat Completions request. */
export const nextStep = (
  request: ChatRequest,
  stuck?: (task: string, reason: string, page: string) => void,
  trace?: (task: string, page: string, step: PlanStep) => void
): PlanStep => {
  const messages = request.messages
  const task = messages.filter((m) => m.role === "user").map((m) => taskOfInstructions(textOf(m.content))).find((t) => t !== undefined)
  if (task === undefined) return { tool: "done", args: { output: "no eval task in the instructions" } }
  const plan = evalTasks.find((t) => t.name === task.name)
  if (plan === undefined) return { tool: "done", args: { output: `no plan for ${task.name}` } }
  const results = messages.filter((m) => m.role === "tool").map((m) => parse(textOf(m.content)))
  if (results.length === 0) return { tool: "navigate", args: { url: task.start } }
  if (results.length >= MAX_TURNS) return { tool: "done", args: { output: `gave up after ${results.length} steps` } }
  const newest = [...messages].reverse().find((m) => m.role === "user")
  const page = textOf(newest?.content)
  const images = imageUrlsOf(newest?.content).flatMap((url) => jpegOfDataUrl(url) ?? [])
  const code = /Success code: (WA-[0-9A-F]+)/.exec(page)?.[1]
  if (code !== undefined) return { tool: "done", args: { output: `Success code: ${code}` } }
  const last = results.at(-1) as { error?: unknown } | string | undefined
  const lastError = typeof last === "object" && last !== null && typeof last.error === "string"
    ? last.error
    : typeof last === "string" && /error|fail|timeout/i.test(last) ? last : undefined
  try {
    const step = plan.plan({ page, images, results, lastError, start: task.start })
    trace?.(task.name, `${page}\n(last result: ${JSON.stringify(results.at(-1)).slice(0, 400)})`, step)
    return step
  } catch (error) {
    if (!(error instanceof PlanStuck)) throw error
    stuck?.(task.name, error.message, page)
    return { tool: "done", args: { output: `stuck: ${error.message}` } }
  }
}

export const startPlanModel = async (
  options: { readonly port?: number; readonly host?: string; readonly trace?: (task: string, page: string, step: PlanStep) => void } = {}
): Promise<PlanModel> => {
  let answered = 0
  const stuck: Array<{ task: string; reason: string; page: string }> = []
  const server: Server = createServer(async (req, res) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }))
      return
    }
    let body: ChatRequest
    let raw: string
    try {
      raw = await readBody(req)
      body = JSON.parse(raw) as ChatRequest
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "the body is not JSON" } }))
      return
    }
    const step = nextStep(body, (task, reason, page) => stuck.push({ task, reason, page }), options.trace)
    answered++
    const args = JSON.stringify(step.args ?? {})
    const prompt = promptTokens(raw, body.messages)
    const completion = Math.ceil((step.tool.length + args.length) / 4)
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
      id: `chatcmpl-eval-${answered}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? "eval-plan",
      choices: [{
        index: 0,
        message: { role: "assistant", content: null, tool_calls: [{ id: `call_${answered}`, type: "function", function: { name: step.tool, arguments: args } }] },
        finish_reason: "tool_calls"
      }],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
    }))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://${options.host ?? "127.0.0.1"}:${port}/v1`,
    requests: () => answered,
    stuck,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

if (process.argv[1] !== undefined && import.meta.filename === (await import("node:fs")).realpathSync(process.argv[1])) {
  const at = process.argv.indexOf("--port")
  const model = await startPlanModel(at === -1 ? {} : { port: Number(process.argv[at + 1]) })
  process.stdout.write(JSON.stringify({ base_url: model.baseUrl, model: "eval-plan" }) + "\n")
  const stop = () => void model.close().then(() => process.exit(0))
  process.on("SIGINT", stop)
  process.on("SIGTERM", stop)
}
