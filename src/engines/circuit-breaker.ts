/**
 * One circuit per engine, kept inside the WebSearch service instance (never module-level, so
 * two instances, or two tests, never share state). Closed: calls pass. After `failures`
 * consecutive failures it opens: calls are refused without reaching the engine. After
 * `cooldownMs` it is half-open: calls pass as a trial; a success closes it, a failure opens it
 * again for another cool-down.
 */
import { Clock, Effect } from "effect"

export type CircuitState = "closed" | "open" | "half_open"

interface Circuit {
  consecutiveFailures: number
  /** Set while open: when the cool-down ends. */
  openUntil: number | undefined
}

export interface CircuitBreakers {
  /** True when a call may go to the engine now. */
  readonly admit: (key: string) => Effect.Effect<boolean>
  readonly recordSuccess: (key: string) => Effect.Effect<void>
  readonly recordFailure: (key: string) => Effect.Effect<void>
  readonly state: (key: string) => Effect.Effect<CircuitState>
}

export const makeCircuitBreakers = (options: { readonly failures: number; readonly cooldownMs: number }): CircuitBreakers => {
  const circuits = new Map<string, Circuit>()
  const circuit = (key: string): Circuit => {
    let found = circuits.get(key)
    if (found === undefined) {
      found = { consecutiveFailures: 0, openUntil: undefined }
      circuits.set(key, found)
    }
    return found
  }
  const stateAt = (c: Circuit, now: number): CircuitState =>
    c.openUntil === undefined ? "closed" : now < c.openUntil ? "open" : "half_open"

  return {
    admit: (key) => Effect.map(Clock.currentTimeMillis, (now) => stateAt(circuit(key), now) !== "open"),
    recordSuccess: (key) =>
      Effect.sync(() => {
        const c = circuit(key)
        c.consecutiveFailures = 0
        c.openUntil = undefined
      }),
    recordFailure: (key) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const c = circuit(key)
        const wasHalfOpen = stateAt(c, now) === "half_open"
        c.consecutiveFailures += 1
        if (wasHalfOpen || c.consecutiveFailures >= options.failures) c.openUntil = now + options.cooldownMs
      }),
    state: (key) => Effect.map(Clock.currentTimeMillis, (now) => stateAt(circuit(key), now))
  }
}
