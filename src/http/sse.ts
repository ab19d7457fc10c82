/**
 * Server-sent events of a run (or a monitor): replays every event after Last-Event-ID, then follows live events,
 * sends `stream.heartbeat` when idle, and ends after the run's terminal event. The stream pulls at
 * the consumer's pace: live events come from the run's shared reader (RunEvents.follow, the event bus's: one
 * database read per wakeup for all the streams of the run in this process, each event encoded
 * once), and a stream behind that reader's short buffer (replay, a slow consumer) reads the database
 * itself, so a slow consumer costs no memory; it resumes with Last-Event-ID. After a heartbeat the
 * stream reads the database once more, in case a notification was lost. A client that stops reading
 * altogether (its send buffer stays full for WA_SSE_STALL_SECONDS) is disconnected, so it holds no
 * connection, fiber or subscription forever.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Effect } from "effect"
import { Readable } from "node:stream"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { AppConfigShape } from "../config/config.ts"
import { type Convention, statusIn, terminalReasonIn } from "../domain/run-state.ts"
import type { RunId } from "../domain/run.ts"
import { type RunEvent, RunEvents } from "../runs/events.ts"

const encoder = new TextEncoder()

/**
 * A run event's data as `convention` shows it. The stored events name statuses as Convention A
 * does (`done`); Convention B (/api/v1) reads `succeeded` in `status` and `from`, and a run that
 * succeeded carries terminal_reason `done` (run.status_changed, run.completed), as its GET shows it.
 */
export const runEventDataIn = (convention: Convention, type: string, data: unknown): unknown => {
  if (convention === "A" || !type.startsWith("run.") || typeof data !== "object" || data === null) return data
  const fields = data as Record<string, unknown>
  if (fields["status"] !== "done" && fields["from"] !== "done") return data
  const mapped: Record<string, unknown> = { ...fields }
  if (typeof fields["from"] === "string") mapped["from"] = statusIn(convention, fields["from"])
  if (fields["status"] === "done") {
    mapped["status"] = statusIn(convention, "done")
    if (type === "run.status_changed" || type === "run.completed") mapped["terminal_reason"] = terminalReasonIn(convention, "done", null)
  }
  return mapped
}

const frame = (event: RunEvent, convention: Convention) =>
  `id: ${event.id}\nevent: ${event.type}\ndata: ${
    JSON.stringify({ type: event.type, data: runEventDataIn(convention, event.type, event.data), created_at: event.created_at })
  }\n\n`

/** Encoded frames of events read by a run's shared reader, so many streams share one copy (one per convention). */
const encodedFrames: Record<Convention, WeakMap<RunEvent, Uint8Array>> = { A: new WeakMap(), B: new WeakMap() }
const encodeFrame = (convention: Convention) => (event: RunEvent) => {
  const cache = encodedFrames[convention]
  let bytes = cache.get(event)
  if (bytes === undefined) cache.set(event, bytes = encoder.encode(frame(event, convention)))
  return bytes
}
const encodeFrames = (events: ReadonlyArray<RunEvent>, convention: Convention): Uint8Array => {
  if (events.length === 1) return encodeFrame(convention)(events[0]!)
  const parts = events.map(encodeFrame(convention))
  const chunk = new Uint8Array(parts.reduce((total, part) => total + part.length, 0))
  let offset = 0
  for (const part of parts) {
    chunk.set(part, offset)
    offset += part.length
  }
  return chunk
}

const heartbeatFrame = () => `event: stream.heartbeat\ndata: ${JSON.stringify({ type: "stream.heartbeat", data: {} })}\n\n`

/** Parses Last-Event-ID; anything that is not a non-negative integer replays from the start. */
export const parseLastEventId = (header: string | undefined): number => {
  const value = Number(header)
  return header !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : 0
}

/**
 * Destroys the response once its send buffer has stayed above the high-water mark (the client
 * reads nothing) for `stallSeconds`. Tied to the Node response, not to the body stream: a stream
 * that has ended can still sit unsent in the buffer of a client that never reads.
 */
const dropWhenStalled = (request: HttpServerRequest.HttpServerRequest, stallSeconds: number) =>
  Effect.sync(() => {
    const response = NodeHttpServerRequest.toServerResponse(request)
    let fullSince: number | undefined
    const timer = setInterval(() => {
      if (!response.writableNeedDrain) {
        fullSince = undefined
        return
      }
      const now = Date.now()
      fullSince ??= now
      if (now - fullSince >= stallSeconds * 1000) response.destroy()
    }, Math.max(100, (stallSeconds * 1000) / 4))
    timer.unref()
    response.once("close", () => clearInterval(timer))
  })

/**
 * What a stream follows: a run, or a monitor (whose events share the run events' channel, keyed
 * by the monitor id).
 */
export interface EventSource {
  readonly key: string
  readonly read: (key: string, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  /** Whether the source has ended (no event will follow the ones stored). */
  readonly ended: Effect.Effect<boolean>
  /** The event after which the stream ends. */
  readonly isLast: (event: RunEvent) => boolean
  /** How the events name a run's status (runEventDataIn); default "A", as stored. */
  readonly convention?: Convention
}

/** `convention`: the convention of the route serving the stream ("B" under /api/v1: status `succeeded`). */
export const runEventStream = (
  runId: RunId,
  lastEventId: number,
  config: Pick<AppConfigShape, "sseHeartbeatSeconds" | "sseStallSeconds">,
  convention: Convention = "A"
) =>
  Effect.gen(function*() {
    const events = yield* RunEvents
    return yield* eventStream({
      key: runId,
      read: (_key, afterId, limit) => events.after(runId, afterId, limit),
      ended: events.ended(runId),
      isLast: (event) => event.type === "run.completed",
      convention
    }, lastEventId, config)
  })

export const eventStream = (
  source: EventSource,
  lastEventId: number,
  config: Pick<AppConfigShape, "sseHeartbeatSeconds" | "sseStallSeconds">
) =>
  Effect.gen(function*() {
    const runEvents = yield* RunEvents
    const request = yield* HttpServerRequest.HttpServerRequest
    const context = yield* Effect.context<never>()
    const run = Effect.runPromiseWith(context)
    const heartbeatMs = config.sseHeartbeatSeconds * 1000
    const convention = source.convention ?? "A"
    yield* dropWhenStalled(request, config.sseStallSeconds)

    // The body is a plain Node Readable that Node pulls at the client's pace (it calls `read` when
    // its buffer has room). Live events are pushed straight from the shared buffer, with no fiber
    // or timer per event: an Effect loop per stream allocated per event for every one of many
    // streams, which kept a busy node's young generation full of objects that lived long enough
    // to be promoted (hundreds of MB of old-space garbage for 1,000 followers at 10 events/s).
    let last = lastEventId
    let finished = false
    let wanted = false // Node asked for data and nothing was pushed since
    let busy = false // a database read is in flight
    let fromDatabase = true // the next read skips the shared buffer (start, after a heartbeat)
    // Caught up with the database (a read returned less than a batch) while the shared buffer does
    // not hold our position yet: any newer event is announced after we subscribed, so the shared
    // reader wakes us; reading the database again meanwhile (two more queries per stream at connect)
    // would find nothing.
    let waitForFeed = false
    let wakes = 0 // wakeups from the shared reader, to tell whether one came during a database read
    let lastSent = Date.now()
    let pump = () => {}
    const feed = yield* runEvents.follow(source.key, source.read, () => {
      wakes++
      waitForFeed = false
      pump()
    })
    const body = new Readable({
      read() {
        wanted = true
        pump()
      },
      destroy(error, callback) {
        finished = true
        clearInterval(heartbeat)
        feed.unsubscribe()
        callback(error)
      }
    })
    const send = (chunk: Uint8Array) => {
      lastSent = Date.now()
      wanted = body.push(chunk)
    }
    const deliver = (batch: ReadonlyArray<RunEvent>, shared: boolean) => {
      // The stream ends with its last event, even when a batch read holds more after it.
      const lastAt = batch.findIndex(source.isLast)
      const events = lastAt === -1 || lastAt === batch.length - 1 ? batch : batch.slice(0, lastAt + 1)
      last = events[events.length - 1]!.id
      // Frames of the shared buffer are encoded once for every stream; others here.
      send(shared ? encodeFrames(events, convention) : encoder.encode(events.map((event) => frame(event, convention)).join("")))
      if (lastAt !== -1) {
        finished = true
        body.push(null)
      }
    }
    const readDatabase = () => {
      busy = true
      fromDatabase = false
      const wakesBefore = wakes
      run(Effect.gen(function*() {
        const events = yield* source.read(source.key, last, 200)
        if (events.length > 0) return { events, end: false }
        // Nothing after Last-Event-ID and the source has ended: the client has everything.
        if (yield* source.ended) {
          const tail = yield* source.read(source.key, last, 200)
          return { events: tail, end: tail.length === 0 }
        }
        return { events, end: false }
      })).then(
        ({ events, end }) => {
          busy = false
          if (finished) return
          if (end) {
            finished = true
            body.push(null)
            return
          }
          if (events.length > 0) deliver(events, false)
          // More may be waiting in the database (a replay of more than one batch); otherwise this
          // stream is caught up, and waits for the shared reader (or the heartbeat) instead of
          // reading the database again and again while the run is quiet.
          if (events.length >= 200) fromDatabase = true
          // (A wakeup during the read may have moved the shared buffer past us: then it is read.)
          else waitForFeed = wakes === wakesBefore
          pump()
        },
        (error) => {
          busy = false
          body.destroy(error instanceof Error ? error : new Error(String(error)))
        }
      )
    }
    pump = () => {
      while (wanted && !busy && !finished) {
        const shared = fromDatabase ? undefined : feed.after(last, 200)
        if (shared === undefined) return waitForFeed ? undefined : readDatabase()
        if (shared.length === 0) return // up to date with the shared reader; it wakes us
        deliver(shared, true)
      }
    }
    // Heartbeats: one timer per stream; after a heartbeat the stream reads the database once, in
    // case a notification was lost (the listener reconnected).
    const heartbeat = setInterval(() => {
      if (finished || busy || Date.now() - lastSent < heartbeatMs) return
      send(encoder.encode(heartbeatFrame()))
      fromDatabase = true
      pump()
    }, Math.max(50, heartbeatMs / 4))
    heartbeat.unref()

    return HttpServerResponse.raw(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "keep-alive" }
    })
  })
