/**
 * Structured logs: one JSON object per line on stdout. Lines are batched and written at most every
 * 20 ms instead of one synchronous write per line, which cost about a tenth of the CPU of a busy
 * API node; the batch is flushed when the layer's scope closes, so shutdown loses nothing.
 *
 * `LogLines` is that batch. The Effect logger writes into it, and so does the access log
 * (src/http/middleware/request-context.ts), which formats its line itself: it is written for every
 * request, and going through Effect's logger (a log effect, an annotation scope, the generic
 * formatter) cost several per cent of an authenticated read.
 */
import { Context, Effect, Layer, Logger, type LogLevel, References } from "effect"

const BATCH_WINDOW_MS = 20

/**
 * A log sink that goes away (`wa serve | head -5`: the reader closed the pipe) makes the next write
 * fail with EPIPE, emitted as an 'error' event that, unheard, would end the process. The service
 * outlives its log reader: the error is heard, and from then on its lines are dropped.
 * Installed once per process (the layer may be built more than once in a test process).
 */
const watchedSinks = new WeakSet<NodeJS.WriteStream>()
const surviveClosedSink = (stream: NodeJS.WriteStream) => {
  if (watchedSinks.has(stream)) return
  watchedSinks.add(stream)
  // The failed write destroyed the stream: `destroyed` is what tells later writes to stop.
  stream.on("error", () => {})
}

/** The lines waiting for stdout; a write is scheduled when the first line of a batch arrives. */
export class LogLines extends Context.Service<LogLines, {
  readonly push: (line: string) => void
}>()("wa/observability/LogLines") {
  static readonly layer = Layer.effect(
    LogLines,
    Effect.gen(function*() {
      surviveClosedSink(process.stdout)
      // Node and Effect write there too (warnings, a defect at exit); a closed stderr must not end the service either.
      surviveClosedSink(process.stderr)
      let batch: Array<string> = []
      let timer: ReturnType<typeof setTimeout> | undefined
      const flush = () => {
        timer = undefined
        if (batch.length === 0) return
        const lines = batch
        batch = []
        if (!process.stdout.destroyed) process.stdout.write(lines.join("\n") + "\n")
      }
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (timer !== undefined) clearTimeout(timer)
          flush()
        })
      )
      return LogLines.of({
        push: (line) => {
          batch.push(line)
          // An idle service schedules nothing: the timer exists only while lines wait.
          timer ??= setTimeout(flush, BATCH_WINDOW_MS)
        }
      })
    })
  )
}

const isPlain = (value: unknown) =>
  value === null || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))

/** Whether every value of `record` is plain, so `formatPlainLine` renders it as formatJson would. */
const isPlainRecord = (record: Readonly<Record<string, unknown>>) => {
  for (const key in record) if (!isPlain(record[key])) return false
  return true
}

/** A log line whose annotations are plain values (strings, finite numbers, booleans, null). */
export const formatPlainLine = (
  message: string,
  logLevel: LogLevel.LogLevel,
  date: Date,
  annotations: Readonly<Record<string, unknown>>,
  fiberId: number
) =>
  JSON.stringify({
    message,
    level: logLevel.toUpperCase(),
    timestamp: date.toISOString(),
    annotations,
    spans: {},
    fiberId: `#${fiberId}`
  })

/** What the access log says of a request. */
export interface AccessLine {
  readonly requestId: string
  readonly method: string
  readonly path: string
  readonly status: number
  readonly durationMs: number
}

/**
 * The access log's line, exactly as formatPlainLine renders `request` with the annotations
 * request_id, method, path, status and duration_ms, written out as a string: it is made for every
 * request, and building the annotations object to stringify it cost more than the rest of the line.
 */
export const formatAccessLine = (logLevel: LogLevel.LogLevel, date: Date, fiberId: number, access: AccessLine) =>
  `{"message":"request","level":"${logLevel.toUpperCase()}","timestamp":"${date.toISOString()}","annotations":{` +
  `"request_id":${JSON.stringify(access.requestId)},"method":${JSON.stringify(access.method)},"path":${JSON.stringify(access.path)},` +
  `"status":${access.status},"duration_ms":${JSON.stringify(access.durationMs)}},"spans":{},"fiberId":"#${fiberId}"}`

/**
 * Logger.formatJson, with a fast path for the common line: a string message, no cause, no spans,
 * and plain annotations. That line is the same JSON without formatJson's generic walk (redaction
 * views, cycle checks); any other line goes through formatJson.
 */
const fastJson = Logger.make<unknown, string>((options) => {
  const { message, fiber, cause, date, logLevel } = options
  const text = Array.isArray(message) ? (message.length === 1 ? message[0] : undefined) : message
  if (typeof text !== "string" || cause.reasons.length > 0) return Logger.formatJson.log(options)
  const spans = fiber.getRef(References.CurrentLogSpans)
  if (spans.length > 0) return Logger.formatJson.log(options)
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  if (!isPlainRecord(annotations)) return Logger.formatJson.log(options)
  return formatPlainLine(text, logLevel, date, annotations, fiber.id)
})

/** The Effect logger: JSON lines into LogLines. */
export const JsonLoggerLive: Layer.Layer<never, never, LogLines> = Logger.layer([
  LogLines.useSync((lines) => Logger.make<unknown, void>((options) => lines.push(fastJson.log(options))))
])
