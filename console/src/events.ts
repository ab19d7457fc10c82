/**
 * Following an event stream of the API (a run's or a monitor's). EventSource cannot send an
 * Authorization header, so this reads the stream with fetch: it parses the SSE frames, drops
 * heartbeats, de-duplicates by id (delivery is at least once), and reconnects with Last-Event-ID
 * after a network error or a stream silent for 60 s (the server sends a heartbeat every ~15 s),
 * with backoff (0.5 s doubling to 8 s). The server ends a stream after the run's last event; a
 * reconnect that ends at once with nothing new means the stream is over.
 */
import type { EventSchemas, EventType, StreamEventTypes, StreamKind } from "../../src/domain/events.ts"

/**
 * The payload of an event type as the API's document declares it (src/domain/events.ts, the
 * schemas the OpenAPI document lists; JSON, so the encoded side). Type-only: nothing of the
 * schemas is in the console's bundle, and payloads are not decoded (console/src/api.ts says why).
 */
export type EventPayload<T extends EventType> = (typeof EventSchemas)[T]["Encoded"]

/** A received event of one of the types `T`, its `data` typed by its type (narrow on `event.type`). */
export type StreamEvent<T extends EventType = EventType> = {
  readonly [K in T]: {
    readonly id: number
    readonly type: K
    readonly data: EventPayload<K>
    readonly created_at: string | undefined
    /** When this console received it (Date.now()), for the latency figure. */
    readonly received_at: number
  }
}[T]

/** The events of a product's stream: the types the document lists for it (`StreamEventTypes`). */
export type StreamEventOf<K extends StreamKind> = StreamEvent<(typeof StreamEventTypes)[K][number]>

export type StreamState = "connecting" | "live" | "reconnecting" | "ended" | "failed"

export interface FollowOptions<E extends StreamEvent = StreamEvent> {
  readonly url: string
  readonly headers: Record<string, string>
  readonly onEvents: (events: ReadonlyArray<E>) => void
  readonly onState: (state: StreamState, detail?: string) => void
  readonly signal: AbortSignal
  /** Resume after this id (events up to it are already shown). */
  readonly lastEventId?: number
  readonly stallMs?: number
}

interface Frame {
  id: number | undefined
  event: string
  data: string
}

/** Splits a buffer into complete frames, returning them and the unparsed rest. */
export const parseFrames = (buffer: string): { frames: Array<Frame>; rest: string } => {
  const frames: Array<Frame> = []
  const normalized = buffer.replace(/\r\n?/g, "\n")
  let rest = normalized
  let split: number
  while ((split = rest.indexOf("\n\n")) >= 0) {
    const raw = rest.slice(0, split)
    rest = rest.slice(split + 2)
    const frame: Frame = { id: undefined, event: "message", data: "" }
    for (const line of raw.split("\n")) {
      if (line.startsWith(":")) continue
      const colon = line.indexOf(":")
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
      if (field === "id" && /^\d+$/.test(value)) frame.id = Number(value)
      else if (field === "event") frame.event = value
      else if (field === "data") frame.data = frame.data === "" ? value : `${frame.data}\n${value}`
    }
    frames.push(frame)
  }
  return { frames, rest }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener("abort", () => {
      clearTimeout(timer)
      resolve()
    }, { once: true })
  })

export const followEvents = async <E extends StreamEvent = StreamEvent>(options: FollowOptions<E>): Promise<void> => {
  const { signal } = options
  const stallMs = options.stallMs ?? 60_000
  let lastId = options.lastEventId ?? 0
  let backoff = 500
  let first = true
  while (!signal.aborted) {
    options.onState(first ? "connecting" : "reconnecting")
    first = false
    const attempt = new AbortController()
    const abortAttempt = () => attempt.abort()
    signal.addEventListener("abort", abortAttempt, { once: true })
    let stall: ReturnType<typeof setTimeout> | undefined
    const armStall = () => {
      clearTimeout(stall)
      stall = setTimeout(() => attempt.abort(), stallMs)
    }
    let received = 0
    try {
      armStall()
      const response = await fetch(options.url, {
        headers: { ...options.headers, accept: "text/event-stream", ...(lastId > 0 ? { "last-event-id": String(lastId) } : {}) },
        signal: attempt.signal,
        cache: "no-store"
      })
      if (!response.ok || response.body === null) {
        const text = await response.text().catch(() => "")
        let detail = `HTTP ${response.status}`
        try {
          const envelope = JSON.parse(text) as { code?: string; detail?: string }
          detail = `${envelope.detail ?? detail} (${envelope.code ?? response.status})`
        } catch {
          // keep the status
        }
        // A wrong key or path does not get better by retrying; rate limits and 5xx do.
        if (response.status >= 400 && response.status < 500 && response.status !== 429) {
          options.onState("failed", detail)
          return
        }
        throw new Error(detail)
      }
      options.onState("live")
      const reader = response.body.getReader()
      const decoder = new TextDecoder()
      let buffer = ""
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        armStall()
        buffer += decoder.decode(value, { stream: true })
        const parsed = parseFrames(buffer)
        buffer = parsed.rest
        const fresh: Array<E> = []
        const now = Date.now()
        for (const frame of parsed.frames) {
          if (frame.event === "stream.heartbeat" || frame.id === undefined || frame.id <= lastId) continue
          lastId = frame.id
          let envelope: { type?: string; data?: unknown; created_at?: string } = {}
          try {
            envelope = JSON.parse(frame.data)
          } catch {
            // an unparsable frame still shows as an event of its type
          }
          // The frame's `data` is the payload the document declares for its type on this stream (the
          // suites decode every event they read with those schemas: test/support/sse.ts); as with the
          // JSON bodies, it is not decoded here.
          fresh.push({ id: frame.id, type: envelope.type ?? frame.event, data: envelope.data ?? {}, created_at: envelope.created_at, received_at: now } as E)
        }
        received += fresh.length
        if (fresh.length > 0) options.onEvents(fresh)
      }
      backoff = 500
      // The server closed the stream: the run (or monitor) has ended. One more look after the
      // last id confirms nothing followed; a connection that brings nothing new ends it.
      if (received === 0) {
        options.onState("ended")
        return
      }
    } catch (error) {
      if (signal.aborted) return
      options.onState("reconnecting", error instanceof Error ? error.message : String(error))
      await sleep(backoff + Math.random() * 250, signal)
      backoff = Math.min(backoff * 2, 8000)
    } finally {
      clearTimeout(stall)
      signal.removeEventListener("abort", abortAttempt)
    }
  }
}
