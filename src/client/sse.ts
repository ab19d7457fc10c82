/**
 * Server-sent events of a run or a monitor as an async iterator that survives dropped
 * connections: after a network error, a stall (no byte, heartbeats included, for `stallMs`) or an
 * early end, it reconnects with `Last-Event-ID` set to the last id it saw, so the server replays
 * what was missed; ids it has already yielded are skipped (delivery is at-least-once). The first
 * reconnect is immediate, later ones back off. Heartbeats are filtered unless asked for.
 *
 * The streams of the client's helpers are typed by the event schemas of the contract
 * (src/domain/events.ts, the ones the OpenAPI document lists): a stream yields a union
 * discriminated by `type`, each type with the payload the document declares for it on that
 * product's stream (`DoAnythingEvent`, `ResearchEvent`, `WebSearchEvent`, `MonitorEvent`). Only the
 * types are taken from there: the payloads are not decoded, so the bundle holds none of it.
 */
import type { EventSchemas, EventType, HEARTBEAT_EVENT, HeartbeatData, StreamEventTypes, StreamKind } from "../domain/events.ts"
import { errorFromResponse, WebAgentError } from "./errors.ts"
import { backoffDelay, defaultRetryPolicy } from "./transport.ts"

/** One frame of an event stream, as read: `data` is whatever the frame carried. */
export interface StreamEvent<Data = any, Type extends string = string> {
  /** Increases within a run; undefined for heartbeats. */
  readonly id: number | undefined
  readonly type: Type
  readonly data: Data
  readonly created_at?: string | undefined
}

/** The payload of an event type on the wire (JSON: a date-time is a string), as the document declares it. */
export type EventPayload<T extends EventType> = (typeof EventSchemas)[T]["Encoded"]

/** An event of one of the types `T`, its `data` typed by its type (narrow on `event.type`). */
export type TypedEvent<T extends EventType> = { readonly [K in T]: StreamEvent<EventPayload<K>, K> }[T]

/** What an idle stream sends (yielded only with `includeHeartbeats`). */
export type HeartbeatEvent = StreamEvent<(typeof HeartbeatData)["Encoded"], typeof HEARTBEAT_EVENT>

/** The events of a product's stream: the types the document lists for it, and the heartbeat. */
export type StreamEventOf<K extends StreamKind> = TypedEvent<(typeof StreamEventTypes)[K][number]> | HeartbeatEvent

/** `.../do_anything/sessions/{sid}/runs/{rid}/events` */
export type DoAnythingEvent = StreamEventOf<"do_anything">
/** `.../deep_research/runs/{rid}/events` */
export type ResearchEvent = StreamEventOf<"deep_research">
/** `.../web_search/runs/{rid}/events` */
export type WebSearchEvent = StreamEventOf<"web_search">
/** `.../track/monitors/{mid}/events` */
export type MonitorEvent = StreamEventOf<"track">

export interface StreamOptions<E extends StreamEvent = StreamEvent> {
  /** Resume after this id (the server replays every later event). */
  readonly lastEventId?: number | undefined
  /** Yield `stream.heartbeat` too (default false). */
  readonly includeHeartbeats?: boolean | undefined
  /** Reconnect when nothing arrived for this long (default 60000 ms, the spec's stall bound). */
  readonly stallMs?: number | undefined
  /** The event after which the stream ends (default: the server's end of stream after it). */
  readonly isLast?: ((event: E) => boolean) | undefined
  /** Consecutive failed connections before giving up (default 8). */
  readonly maxReconnects?: number | undefined
  readonly signal?: AbortSignal | undefined
  /** Called on every reconnect (for progress lines, logs and the reconnect benchmark). */
  readonly onReconnect?: ((info: { readonly lastEventId: number | undefined; readonly reason: string; readonly attempt: number }) => void) | undefined
}

/** Parses one SSE frame (the text between two blank lines). */
export const parseFrame = (raw: string): StreamEvent | undefined => {
  let id: number | undefined
  let event = "message"
  const data: Array<string> = []
  for (const line of raw.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value === "" ? undefined : Number(value)
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  if (data.length === 0 && id === undefined) return undefined
  const text = data.join("\n")
  let parsed: unknown = text
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  // The service sends `{type, data, created_at}` as the data of each frame.
  if (typeof parsed === "object" && parsed !== null && "type" in parsed && "data" in parsed) {
    const envelope = parsed as { type: string; data: unknown; created_at?: string }
    return { id: Number.isFinite(id) ? id : undefined, type: envelope.type, data: envelope.data, created_at: envelope.created_at }
  }
  return { id: Number.isFinite(id) ? id : undefined, type: event, data: parsed }
}

class Stalled extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Follows `url` (an events endpoint) with `fetch` (the SDK's transport: token, retries). `E` is what
 * the caller knows the endpoint streams (one of the typed unions above); by default any frame.
 */
export async function* followEvents<E extends StreamEvent = StreamEvent>(
  fetch: typeof globalThis.fetch,
  url: string,
  options: StreamOptions<E> = {}
): AsyncGenerator<E, void, undefined> {
  let lastId = options.lastEventId
  const stallMs = options.stallMs ?? 60_000
  const maxReconnects = options.maxReconnects ?? 8
  let failures = 0
  let emptyCleanEnds = 0
  let sawLast = false
  while (true) {
    if (options.signal?.aborted) return
    const controller = new AbortController()
    const onAbort = () => controller.abort(options.signal?.reason)
    options.signal?.addEventListener("abort", onAbort, { once: true })
    let stallTimer: ReturnType<typeof setTimeout> | undefined
    const armStall = () => {
      clearTimeout(stallTimer)
      stallTimer = setTimeout(() => controller.abort(new Stalled(`no data for ${stallMs} ms`)), stallMs)
    }
    let progressed = false
    let reason: string
    try {
      const headers: Record<string, string> = { accept: "text/event-stream" }
      if (lastId !== undefined) headers["last-event-id"] = String(lastId)
      armStall()
      const response = await fetch(url, { headers, signal: controller.signal })
      if (!response.ok) throw await errorFromResponse(response)
      if (response.body === null) throw new WebAgentError(response.status, "bad_response", "the event stream has no body")
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      while (true) {
        armStall()
        const { done, value } = await reader.read()
        if (done) break
        buffer += value
        let split: RegExpExecArray | null
        while ((split = /\r?\n\r?\n/.exec(buffer)) !== null) {
          const raw = buffer.slice(0, split.index)
          buffer = buffer.slice(split.index + split[0].length)
          const event = parseFrame(raw) as E | undefined
          if (event === undefined) continue
          if (event.id !== undefined) {
            if (lastId !== undefined && event.id <= lastId) continue // replayed: already yielded
            lastId = event.id
            progressed = true
            failures = 0
          }
          if (event.type === "stream.heartbeat" && options.includeHeartbeats !== true) continue
          if (options.isLast?.(event) === true) sawLast = true
          yield event
          if (sawLast) return
        }
      }
      // The server ends a stream after the source's last event. An end that brought nothing new
      // means the source has ended (twice in a row when an isLast event was expected but not seen).
      emptyCleanEnds = progressed ? 0 : emptyCleanEnds + 1
      if (emptyCleanEnds >= (options.isLast === undefined ? 1 : 2)) return
      reason = "stream ended"
    } catch (error) {
      if (options.signal?.aborted) return
      if (error instanceof WebAgentError && !error.retryable) throw error
      failures++
      if (failures > maxReconnects) {
        throw error instanceof WebAgentError ? error : new WebAgentError(0, "stream_failed", String((error as Error)?.message ?? error))
      }
      reason = controller.signal.reason instanceof Stalled ? "stalled" : `error: ${String((error as Error)?.message ?? error)}`
    } finally {
      clearTimeout(stallTimer)
      options.signal?.removeEventListener("abort", onAbort)
      controller.abort()
    }
    options.onReconnect?.({ lastEventId: lastId, reason, attempt: failures })
    // The first reconnect after progress is immediate; repeated failures back off.
    if (failures > 1) await sleep(backoffDelay(failures - 1, defaultRetryPolicy))
  }
}
