/**
 * Spans for every method of a service object, named `Service.method`, so a trace shows each store
 * call under the request or run that made it. For services whose methods are plain functions
 * returning effects (the stores); product services declare theirs with `Effect.fn` instead.
 */
import { Effect, References } from "effect"

/**
 * A span's call-site stack trace is an Error made at every call (about a tenth of a request's CPU
 * with a dozen store calls per request); the span's name already says which method it is.
 */
const noStackTrace = { captureStackTrace: false } as const

/**
 * With tracing off (src/observability/tracing.ts) the call runs as it is: Effect.withSpan would
 * still make a no-op span and copy the fiber's context twice to provide it.
 */
const spanned = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => fiber.getRef(References.TracerEnabled) ? Effect.withSpan(effect, name, noStackTrace) : effect)

/**
 * A span around an inner operation that is not a service method (a method's span is Effect.fn or
 * withMethodSpans), e.g. one dispatch of the scheduler with its attributes. Pipeable like
 * Effect.withSpan; with tracing off the effect runs as it is and `attributes` is not called.
 */
export const withSpanIfTracing = (name: string, attributes?: () => Record<string, unknown>) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) =>
    !fiber.getRef(References.TracerEnabled)
      ? effect
      : Effect.withSpan(effect, name, attributes === undefined ? noStackTrace : { ...noStackTrace, attributes: attributes() })
  )

export const withMethodSpans = <S extends object>(serviceName: string, service: S): S => {
  const traced: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(service)) {
    traced[name] = typeof value !== "function"
      ? value
      : (...args: Array<unknown>) => {
        const result = (value as (...args: Array<unknown>) => unknown)(...args)
        return Effect.isEffect(result) ? spanned(result, `${serviceName}.${name}`) : result
      }
  }
  return traced as S
}
