/**
 * Server-sent events of a run: replays every event after Last-Event-ID, then follows live events,
 * sends `stream.heartbeat` when idle, and ends after the run's terminal event. The stream pulls at
 * the consumer's pace: live events come from the run's shared reader (RunEventBus.follow: one
 * database read per wakeup for all the streams of the run in this process, each event encoded
 * once), and a stream behind that reader's short buffer (replay, a slow consumer) reads the database
 * itself, so a slow consumer costs no memory; it resumes with Last-Event-ID. After a heartbeat the
 * stream reads the database once more, in case a notification was lost. A client that stops reading
 * altogether (its send buffer stays full for WA_SSE_STALL_SECONDS) is disconnected, so it holds no
 * connection, fiber or subscription forever.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Queue, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { AppConfigShape } from "../config/config.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type RunEvent, RunStore } from "../store/runs.ts"

const encoder = new TextEncoder()

const frame = (event: RunEvent) =>
  `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify({ type: event.type, data: event.data, created_at: event.created_at })}\n\n`

/** Encoded frames of events read by a run's shared reader, so many streams share one copy. */
const encodedFrames = new WeakMap<RunEvent, Uint8Array>()
const encodeFrame = (event: RunEvent) => {
  let bytes = encodedFrames.get(event)
  if (bytes === undefined) encodedFrames.set(event, bytes = encoder.encode(frame(event)))
  return bytes
}
const encodeFrames = (events: ReadonlyArray<RunEvent>): Uint8Array => {
  if (events.length === 1) return encodeFrame(events[0]!)
  const parts = events.map(encodeFrame)
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

export const runEventStream = (
  runId: string,
  lastEventId: number,
  config: Pick<AppConfigShape, "sseHeartbeatSeconds" | "sseStallSeconds">
) =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const bus = yield* RunEventBus
    const request = yield* HttpServerRequest.HttpServerRequest
    const heartbeatMs = config.sseHeartbeatSeconds * 1000
    yield* dropWhenStalled(request, config.sseStallSeconds)
    const body = Stream.unwrap(Effect.gen(function*() {
      const feed = yield* bus.follow(runId, store.eventsAfter)
      // Heartbeats: one long-lived timer per stream wakes it a few times per heartbeat period, and
      // it sends one when it has sent nothing for that long. Cheaper than a timeout on every wait,
      // which allocated a timer and a racing fiber per event for each of many streams.
      let lastSent = Date.now()
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const timer = setInterval(feed.poke, Math.max(50, heartbeatMs / 4))
          timer.unref()
          return timer
        }),
        (timer) => Effect.sync(() => clearInterval(timer))
      )
      return Stream.unfold({ last: lastEventId, finished: false, poll: false }, (state) =>
        Effect.gen(function*() {
          if (state.finished) return undefined
          let poll = state.poll
          while (true) {
            // Taken before reading: a wakeup that comes while the reads below wait is not lost.
            const version = feed.version()
            const shared = poll ? undefined : feed.after(state.last, 200)
            const events = shared ?? (yield* store.eventsAfter(runId, state.last, 200))
            if (events.length > 0) {
              const finished = events.some((event) => event.type === "run.completed")
              // Frames of the shared buffer are encoded once for every stream; others here.
              const chunk = shared !== undefined ? encodeFrames(events) : encoder.encode(events.map(frame).join(""))
              lastSent = Date.now()
              return [chunk, { last: events[events.length - 1]!.id, finished, poll: false }] as const
            }
            if (shared === undefined) {
              // Nothing after Last-Event-ID and the run is over: the client has everything.
              const run = yield* store.getRun(runId)
              if (run === undefined || isTerminal(run.status)) {
                const tail = yield* store.eventsAfter(runId, state.last, 1)
                if (tail.length === 0) return undefined
                poll = true
                continue
              }
            }
            // Up to date (with the database, or with the shared reader, which wakes us when it has more).
            poll = false
            while (true) {
              yield* Queue.take(feed.wakeups)
              if (Date.now() - lastSent >= heartbeatMs) {
                lastSent = Date.now()
                return [encoder.encode(heartbeatFrame()), { ...state, poll: true }] as const
              }
              if (feed.version() !== version) break // new events (not just the heartbeat timer)
            }
          }
        }))
    }))
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "keep-alive" }
    })
  })
