/** Store methods run inside spans named after the service and method, so traces show them. */
import { Effect, Option, References } from "effect"
import { describe, expect, it } from "vitest"
import { withMethodSpans } from "../../src/observability/spans.ts"

describe("withMethodSpans", () => {
  it("runs each method's effect in a span named Service.method and leaves other members alone", async () => {
    const service = withMethodSpans("RunStore", {
      getRun: (id: string) => Effect.currentSpan.pipe(Effect.map((span) => `${span.name}:${id}`)),
      version: 3,
      plain: () => "not an effect"
    })
    expect(await Effect.runPromise(service.getRun("run_1"))).toBe("RunStore.getRun:run_1")
    expect(service.version).toBe(3)
    expect(service.plain()).toBe("not an effect")
  })

  it("adds no span with tracing off (WA_OTLP_TRACES_URL unset): the method runs as it is", async () => {
    const service = withMethodSpans("RunStore", {
      getRun: () => Effect.option(Effect.currentSpan).pipe(Effect.map(Option.map((span) => span.name)))
    })
    const off = await Effect.runPromise(service.getRun().pipe(Effect.provideService(References.TracerEnabled, false)))
    expect(off).toEqual(Option.none())
    const on = await Effect.runPromise(service.getRun())
    expect(on).toEqual(Option.some("RunStore.getRun"))
  })
})
