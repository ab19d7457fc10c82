/**
 * A LanguageModel over Anthropic's Messages API (`POST {base}/v1/messages` with tools).
 * Written here for the same reason as the OpenAI-compatible provider: the published
 * @effect/ai-anthropic does not load with effect 4.1.
 */
import { Effect, Redacted, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, Tool } from "effect/ai"
import type * as Response from "effect/ai/Response"
import { HttpClient, HttpClientRequest } from "effect/http"
import { finishPart } from "./openai-compatible.ts"
import { estimateInputTokens, estimateOutputTokens } from "./usage.ts"

export interface AnthropicOptions {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted | undefined
  readonly model: string
  readonly maxTokens?: number
  readonly timeoutMs?: number
}

const failure = (method: string, description: string) =>
  AiError.make({ module: "Anthropic", method, reason: new AiError.UnknownError({ description }) })

type Block = Record<string, unknown>

const toBase64 = (data: string | Uint8Array | URL) =>
  data instanceof Uint8Array ? Buffer.from(data).toString("base64") : String(data)

/** System text and alternating user/assistant messages (consecutive same-role turns merged). */
const toMessages = (prompt: Prompt.Prompt) => {
  const system: Array<string> = []
  const messages: Array<{ role: "user" | "assistant"; content: Array<Block> }> = []
  const push = (role: "user" | "assistant", blocks: Array<Block>) => {
    if (blocks.length === 0) return
    const last = messages[messages.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else messages.push({ role, content: blocks })
  }
  const toolResult = (part: { id: string; result: unknown; isFailure: boolean }): Block => ({
    type: "tool_result",
    tool_use_id: part.id,
    content: JSON.stringify(part.result ?? null),
    ...(part.isFailure ? { is_error: true } : {})
  })
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        system.push(message.content)
        break
      case "user":
        push("user", message.content.map((part) =>
          part.type === "text"
            ? { type: "text", text: part.text }
            : { type: "image", source: { type: "base64", media_type: part.mediaType, data: toBase64(part.data) } }
        ))
        break
      case "assistant": {
        const blocks: Array<Block> = []
        const results: Array<Block> = []
        for (const part of message.content) {
          if (part.type === "text" && part.text !== "") blocks.push({ type: "text", text: part.text })
          if (part.type === "tool-call") blocks.push({ type: "tool_use", id: part.id, name: part.name, input: part.params ?? {} })
          if (part.type === "tool-result") results.push(toolResult(part))
        }
        push("assistant", blocks)
        push("user", results)
        break
      }
      case "tool":
        push("user", message.content.filter((part) => part.type === "tool-result").map(toolResult))
        break
    }
  }
  return { system: system.join("\n\n"), messages }
}

const toolChoiceOf = (choice: LanguageModel.ProviderOptions["toolChoice"]) => {
  if (choice === "auto" || choice === "none") return { type: choice }
  if (choice === "required") return { type: "any" }
  if ("tool" in choice) return { type: "tool", name: choice.tool }
  return { type: choice.mode === "required" ? "any" : "auto" }
}

const finishReasons: Record<string, Response.FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool-calls",
  refusal: "content-filter"
}

interface MessagesResponse {
  readonly content?: ReadonlyArray<{ readonly type: string; readonly text?: string; readonly id?: string; readonly name?: string; readonly input?: unknown }>
  readonly stop_reason?: string
  readonly usage?: {
    readonly input_tokens?: number
    readonly output_tokens?: number
    readonly cache_creation_input_tokens?: number
    readonly cache_read_input_tokens?: number
  }
  readonly error?: { readonly message?: string }
}

export const makeAnthropic = (options: AnthropicOptions) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const url = `${options.baseUrl.replace(/\/$/, "")}/v1/messages`
    return yield* LanguageModel.make({
      generateText: (provider) =>
        Effect.gen(function*() {
          const { system, messages } = toMessages(provider.prompt)
          const body: Record<string, unknown> = { model: options.model, max_tokens: options.maxTokens ?? 4096, messages }
          if (system !== "") body["system"] = system
          if (provider.tools.length > 0) {
            body["tools"] = provider.tools.map((tool) => ({
              name: tool.name,
              description: Tool.getDescription(tool) ?? "",
              input_schema: Tool.getJsonSchema(tool)
            }))
            body["tool_choice"] = toolChoiceOf(provider.toolChoice)
          }
          let request = HttpClientRequest.post(url).pipe(
            HttpClientRequest.bodyJsonUnsafe(body),
            HttpClientRequest.setHeader("anthropic-version", "2023-06-01")
          )
          if (options.apiKey !== undefined) request = HttpClientRequest.setHeader(request, "x-api-key", Redacted.value(options.apiKey))
          const response = yield* http.execute(request).pipe(
            Effect.timeout(options.timeoutMs ?? 120_000),
            Effect.mapError((error) => failure("generateText", `request to ${url} failed: ${String(error)}`))
          )
          const json = (yield* response.json.pipe(Effect.mapError(() => failure("generateText", `HTTP ${response.status}: the body is not JSON`)))) as MessagesResponse
          if (response.status >= 400) return yield* failure("generateText", `HTTP ${response.status}: ${json.error?.message ?? "model request refused"}`)
          const parts: Array<Response.PartEncoded> = []
          for (const block of json.content ?? []) {
            if (block.type === "text" && block.text) parts.push({ type: "text", text: block.text })
            if (block.type === "tool_use") parts.push({ type: "tool-call", id: block.id ?? "", name: block.name ?? "", params: block.input ?? {} })
          }
          // Input tokens: uncached + cache writes + cache reads (all are billed input); estimated when not reported (./usage.ts).
          const usage = json.usage
          const reported = usage?.input_tokens === undefined
            ? undefined
            : usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0)
          parts.push(finishPart(
            finishReasons[json.stop_reason ?? ""] ?? "unknown",
            reported ?? estimateInputTokens(provider.prompt),
            usage?.output_tokens ?? estimateOutputTokens(parts)
          ))
          return parts
        }),
      streamText: () => Stream.fail(failure("streamText", "streaming is not supported by this provider"))
    })
  })
