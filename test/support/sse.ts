/**
 * Reads a run's SSE stream over real HTTP until it ends (after the terminal event) or a deadline.
 *
 * The response is held to the OpenAPI document by the contract hook (contract-hook.ts
 * `contractFetch`): its status is declared for the operation, its content type and headers too
 * (a refusal's JSON body against its schema); a mismatch throws.
 *
 * Every event read from a product's event stream is held to the contract (src/domain/events.ts):
 * its type is one that product's stream carries, its envelope is `{type, data, created_at}` with
 * `type` equal to the frame's `event`, and its `data` decodes with the schema of its type (the
 * Convention B form under /api/v1), unknown fields refused; ids increase; nothing but heartbeats
 * follows the stream's last event (a run's `run.completed`, a monitor's change to completed or
 * canceled). A mismatch throws, naming the event, so every suite that reads a stream checks the
 * events it gets.
 */
import { Schema } from "effect"
import { eventDataSchema, HEARTBEAT_EVENT, StreamEventTypes, type StreamKind } from "../../src/domain/events.ts"
import { streamOfPath } from "../../src/http/api/openapi-events.ts"
import { contractFetch } from "./contract-hook.ts"

export interface SseEvent {
  readonly id: number | undefined
  readonly event: string
  readonly data: any
}

export const readSse = async (url: string, headers: Record<string, string>, options: { timeoutMs?: number; stopAfter?: (events: Array<SseEvent>) => boolean } = {}) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 60_000)
  const events: Array<SseEvent> = []
  let status = 0
  let contentType = ""
  /** True when the server closed the stream itself (not our timeout, not stopAfter). */
  let ended = false
  /** The stream's last event, once read: the stream ends there, nothing follows it. */
  let last: string | undefined
  let previousId: number | undefined
  try {
    // The response itself (status, content type, headers; an error's body) goes through the
    // contract hook against the document of the service at the URL's origin.
    const response = await contractFetch(new URL(url).origin)(url, { headers, signal: controller.signal })
    status = response.status
    contentType = response.headers.get("content-type") ?? ""
    if (response.body === null) return { status, contentType, events, ended: true }
    const decoder = new TextDecoder()
    let buffer = ""
    const reader = response.body.getReader()
    while (true) {
      const { done, value } = await reader.read()
      if (done) {
        ended = true
        break
      }
      buffer += decoder.decode(value, { stream: true })
      let split: number
      while ((split = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, split)
        buffer = buffer.slice(split + 2)
        let id: number | undefined
        let event = "message"
        let data = ""
        for (const line of raw.split("\n")) {
          if (line.startsWith("id: ")) id = Number(line.slice(4))
          else if (line.startsWith("event: ")) event = line.slice(7)
          else if (line.startsWith("data: ")) data += line.slice(6)
        }
        const parsed = { id, event, data: data === "" ? undefined : JSON.parse(data) }
        const problem = checkEvent(url, parsed) ??
          (last !== undefined && event !== HEARTBEAT_EVENT ? `${event}${id === undefined ? "" : ` (id ${id})`} came after the stream's last event, ${last}` : undefined) ??
          (id !== undefined && previousId !== undefined && id <= previousId ? `${event} (id ${id}) does not follow id ${previousId}: ids increase within a stream` : undefined)
        if (id !== undefined) previousId = id
        if (isLastEvent(url, parsed)) last = `${event}${id === undefined ? "" : ` (id ${id})`}`
        if (problem !== undefined) {
          controller.abort()
          throw new EventContractError(`event stream ${new URL(url).pathname}: ${problem}`)
        }
        events.push(parsed)
        if (options.stopAfter?.(events)) {
          controller.abort()
          return { status, contentType, events, ended }
        }
      }
    }
  } catch (error) {
    if (error instanceof EventContractError || !controller.signal.aborted) throw error
  } finally {
    clearTimeout(timer)
  }
  return { status, contentType, events, ended }
}

/** An event that breaks the contract of its stream (thrown by readSse). */
export class EventContractError extends Error {}

/** The product whose stream `url` is, and the convention its route speaks; undefined for other streams. */
/** The product stream a URL reads (the document's own rule, src/http/api/openapi-events.ts), or undefined. */
export const streamOf = (url: string): { readonly kind: StreamKind; readonly convention: "A" | "B" } | undefined =>
  streamOfPath(new URL(url).pathname)

const strict = { errors: "all", onExcessProperty: "error" } as const

/**
 * Whether the event is its stream's last (the server ends the stream after it): a run's
 * `run.completed`, a monitor's change to `completed` or `canceled` (src/http/sse.ts, track.ts).
 */
export const isLastEvent = (url: string, event: SseEvent): boolean => {
  const stream = streamOf(url)
  if (stream === undefined) return false
  if (stream.kind !== "track") return event.event === "run.completed"
  const to = event.data?.data?.to
  return event.event === "monitor.status_changed" && (to === "completed" || to === "canceled")
}

/** What is wrong with one event of the stream at `url` (undefined: nothing, or not a product's stream). */
export const checkEvent = (url: string, event: SseEvent): string | undefined => {
  const stream = streamOf(url)
  if (stream === undefined) return undefined
  const name = `${event.event}${event.id === undefined ? "" : ` (id ${event.id})`}`
  const envelope = event.data as { type?: unknown; data?: unknown; created_at?: unknown } | undefined
  if (typeof envelope !== "object" || envelope === null) return `${name}: data is not a JSON object`
  if (envelope.type !== event.event) return `${name}: envelope type ${JSON.stringify(envelope.type)} is not the frame's event`
  if (event.event === HEARTBEAT_EVENT) {
    if (event.id !== undefined) return `${name}: a heartbeat carries no id`
  } else {
    if (event.id === undefined || !Number.isSafeInteger(event.id)) return `${name}: no numeric id`
    if (typeof envelope.created_at !== "string" || Number.isNaN(Date.parse(envelope.created_at))) return `${name}: created_at is not a timestamp`
    if (!(StreamEventTypes[stream.kind] as ReadonlyArray<string>).includes(event.event)) {
      return `${name}: not an event type of the ${stream.kind} stream (src/domain/events.ts StreamEventTypes)`
    }
  }
  const extra = Object.keys(envelope).filter((key) => key !== "type" && key !== "data" && key !== "created_at")
  if (extra.length > 0) return `${name}: undocumented envelope fields ${extra.join(", ")}`
  const schema = eventDataSchema(event.event, stream.convention)
  if (schema === undefined) return `${name}: no schema for this event type (src/domain/events.ts)`
  const decoded = Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>)(envelope.data, strict)
  if (decoded._tag === "Failure") {
    return `${name} does not match its schema (convention ${stream.convention}): ${String(decoded.cause)}\ndata: ${JSON.stringify(envelope.data).slice(0, 2000)}`
  }
  return undefined
}
