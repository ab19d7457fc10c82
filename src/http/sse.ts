/**
 * Server-sent events of a run: replays every event after Last-Event-ID, then follows live events,
 * sends `stream.heartbeat` when idle, and ends after the run's terminal event. The stream pulls
 * from the database at the consumer's pace, so a slow consumer costs no memory; it resumes with
 * Last-Event-ID. A client that stops reading altogether (its send buffer stays full for
 * WA_SSE_STALL_SECONDS) is disconnected, so it holds no connection, fiber or subscription forever.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Option, Queue, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { AppConfigShape } from "../config/config.ts"
import { RunEventBus } from "../events/run-event-bus.ts"
import { isTerminal } from "../domain/run-state.ts"
import { type RunEvent, RunStore } from "../store/runs.ts"

const encoder = new TextEncoder()

const frame = (event: RunEvent) =>
  `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify({ type: event.type, data: event.data, created_at: event.created_at })}\n\n`

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
    const heartbeat = `${config.sseHeartbeatSeconds} seconds` as const
    yield* dropWhenStalled(request, config.sseStallSeconds)
    const body = Stream.unwrap(Effect.gen(function*() {
      const wakeups = yield* bus.wakeups(runId)
      return Stream.unfold({ last: lastEventId, finished: false }, (state) =>
        Effect.gen(function*() {
          if (state.finished) return undefined
          while (true) {
            const events = yield* store.eventsAfter(runId, state.last, 200)
            if (events.length > 0) {
              const finished = events.some((event) => event.type === "run.completed")
              const chunk = encoder.encode(events.map(frame).join(""))
              return [chunk, { last: events[events.length - 1]!.id, finished }] as const
            }
            // Nothing after Last-Event-ID and the run is over: the client has everything.
            const run = yield* store.getRun(runId)
            if (run === undefined || isTerminal(run.status)) {
              const tail = yield* store.eventsAfter(runId, state.last, 1)
              if (tail.length === 0) return undefined
              continue
            }
            const woke = yield* Queue.take(wakeups).pipe(Effect.timeoutOption(heartbeat))
            if (Option.isNone(woke)) return [encoder.encode(heartbeatFrame()), state] as const
          }
        }))
    }))
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "keep-alive" }
    })
  })
