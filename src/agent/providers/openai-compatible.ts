/**
 * A LanguageModel over any OpenAI-compatible Chat Completions endpoint (`POST {base}/chat/completions`
 * with `tools`): OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter.
 *
 * Written here because the published @effect/ai-openai-compat is still built against the Effect 4
 * betas (it imports `effect/unstable/...`) and does not load with effect 4.1. Streaming is not
 * used by the service and answers with an error.
 */
import { Effect, Redacted, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, Tool } from "effect/ai"
import type * as Response from "effect/ai/Response"
import { HttpClient, HttpClientRequest } from "effect/http"
import { estimateInputTokens, estimateOutputTokens } from "./usage.ts"

export interface OpenAiCompatibleOptions {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted | undefined
  readonly model: string
  readonly timeoutMs?: number
}

const failure = (method: string, description: string) =>
  AiError.make({ module: "OpenAiCompatible", method, reason: new AiError.UnknownError({ description }) })

const toBase64 = (data: string | Uint8Array | URL) =>
  data instanceof Uint8Array ? Buffer.from(data).toString("base64") : String(data)

/** Prompt messages in Chat Completions form. */
const toMessages = (prompt: Prompt.Prompt): Array<Record<string, unknown>> => {
  const messages: Array<Record<string, unknown>> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        messages.push({ role: "system", content: message.content })
        break
      case "user": {
        const parts = message.content.map((part) =>
          part.type === "text"
            ? { type: "text", text: part.text }
            : { type: "image_url", image_url: { url: `data:${part.mediaType};base64,${toBase64(part.data)}` } }
        )
        const onlyText = parts.every((part) => part.type === "text")
        messages.push({ role: "user", content: onlyText ? parts.map((part) => (part as { text: string }).text).join("\n") : parts })
        break
      }
      case "assistant": {
        const text = message.content.filter((part) => part.type === "text").map((part) => part.text).join("")
        const calls = message.content.filter((part) => part.type === "tool-call")
        messages.push({
          role: "assistant",
          content: text === "" ? null : text,
          ...(calls.length > 0
            ? { tool_calls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.params ?? {}) } })) }
            : {})
        })
        // Results of tools resolved in the same turn travel in the assistant message.
        for (const part of message.content) {
          if (part.type === "tool-result") messages.push({ role: "tool", tool_call_id: part.id, content: JSON.stringify(part.result ?? null) })
        }
        break
      }
      case "tool":
        for (const part of message.content) {
          if (part.type === "tool-result") messages.push({ role: "tool", tool_call_id: part.id, content: JSON.stringify(part.result ?? null) })
        }
        break
    }
  }
  return messages
}

const toolChoiceOf = (choice: LanguageModel.ProviderOptions["toolChoice"]) => {
  if (choice === "auto" || choice === "none" || choice === "required") return choice
  if ("tool" in choice) return { type: "function", function: { name: choice.tool } }
  return choice.mode ?? "auto"
}

/** The closing part of a provider response: why it stopped and the tokens it used. */
export const finishPart = (reason: Response.FinishReason, inputTokens: number | undefined, outputTokens: number | undefined) =>
  ({
    type: "finish",
    reason,
    usage: {
      inputTokens: { total: inputTokens, uncached: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: outputTokens, text: undefined, reasoning: undefined }
    }
  }) as Response.PartEncoded

const finishReasons: Record<string, Response.FinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool-calls",
  function_call: "tool-calls",
  content_filter: "content-filter"
}

interface ChatCompletion {
  readonly choices?: ReadonlyArray<{
    readonly finish_reason?: string | null
    readonly message?: {
      readonly content?: string | null
      readonly tool_calls?: ReadonlyArray<{ readonly id?: string; readonly function?: { readonly name?: string; readonly arguments?: string } }>
    }
  }>
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number }
  readonly error?: { readonly message?: string }
}

export const makeOpenAiCompatible = (options: OpenAiCompatibleOptions) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const url = `${options.baseUrl.replace(/\/$/, "")}/chat/completions`
    return yield* LanguageModel.make({
      generateText: (provider) =>
        Effect.gen(function*() {
          const body: Record<string, unknown> = { model: options.model, messages: toMessages(provider.prompt) }
          if (provider.tools.length > 0) {
            body["tools"] = provider.tools.map((tool) => ({
              type: "function",
              function: { name: tool.name, description: Tool.getDescription(tool) ?? "", parameters: Tool.getJsonSchema(tool) }
            }))
            body["tool_choice"] = toolChoiceOf(provider.toolChoice)
          }
          if (provider.responseFormat.type === "json") {
            body["response_format"] = {
              type: "json_schema",
              json_schema: {
                name: provider.responseFormat.objectName,
                schema: Tool.getJsonSchemaFromSchema(provider.responseFormat.schema)
              }
            }
          }
          let request = HttpClientRequest.post(url).pipe(HttpClientRequest.bodyJsonUnsafe(body))
          if (options.apiKey !== undefined) request = HttpClientRequest.bearerToken(request, Redacted.value(options.apiKey))
          const response = yield* http.execute(request).pipe(
            Effect.timeout(options.timeoutMs ?? 120_000),
            Effect.mapError((error) => failure("generateText", `request to ${url} failed: ${String(error)}`))
          )
          const json = (yield* response.json.pipe(Effect.mapError(() => failure("generateText", `HTTP ${response.status}: the body is not JSON`)))) as ChatCompletion
          if (response.status >= 400) {
            return yield* failure("generateText", `HTTP ${response.status}: ${json.error?.message ?? "model request refused"}`)
          }
          const choice = json.choices?.[0]
          if (choice === undefined) return yield* failure("generateText", "the model returned no choices")
          const parts: Array<Response.PartEncoded> = []
          if (choice.message?.content) parts.push({ type: "text", text: choice.message.content })
          for (const call of choice.message?.tool_calls ?? []) {
            let params: unknown = {}
            try {
              params = JSON.parse(call.function?.arguments || "{}")
            } catch {
              params = { _unparsed: call.function?.arguments }
            }
            parts.push({ type: "tool-call", id: call.id ?? `call_${parts.length}`, name: call.function?.name ?? "", params })
          }
          // A server that reports no usage is charged an estimate (./usage.ts); reported usage counts the images.
          parts.push(finishPart(
            finishReasons[choice.finish_reason ?? ""] ?? "unknown",
            json.usage?.prompt_tokens ?? estimateInputTokens(provider.prompt),
            json.usage?.completion_tokens ?? estimateOutputTokens(parts)
          ))
          return parts
        }),
      streamText: () => Stream.fail(failure("streamText", "streaming is not supported by this provider"))
    })
  })
