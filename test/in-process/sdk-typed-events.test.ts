/**
 * The SDK's event streams are typed by the contract's event schemas (issue 27 §4: the SDK uses
 * only what the document declares). Each product's stream (`client.runs.events`,
 * `research.events`, `search.events`, `monitors.events`, and the `onEvent` of their waits) yields
 * a union discriminated by `type`: the types src/domain/events.ts lists for that stream
 * (StreamEventTypes, the ones the OpenAPI document declares for it) and the heartbeat, each with
 * the payload its schema declares on the wire.
 *
 * - Types: checked by tsc (this file is part of `tsc --noEmit -p .`): the unions, a narrowed
 *   event's data, and what does not compile (a monitor event on a run's stream, a field the
 *   event does not carry).
 * - Run time: frames written as the server writes them (src/http/sse.ts: `id`, `event`,
 *   `data: {type, data, created_at}`, each payload encoded by its schema) are read by the SDK's
 *   frame parser and handed to consumers written against the typed unions; what they read
 *   decodes with the event's schema to the sample it was made from.
 */
import { Schema } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"
import {
  type DoAnythingEvent,
  type EventPayload,
  type HeartbeatEvent,
  type MonitorEvent,
  parseFrame,
  type ResearchEvent,
  type StreamEvent,
  type WebSearchEvent
} from "../../src/client/index.ts"
import { EventSchemas, type EventType, HEARTBEAT_EVENT, StreamEventTypes } from "../../src/domain/events.ts"
import type { MonitorStatus } from "../../src/domain/monitor.ts"
import type { RunStatus } from "../../src/domain/run-state.ts"

type TypesOf<K extends keyof typeof StreamEventTypes> = (typeof StreamEventTypes)[K][number] | typeof HEARTBEAT_EVENT

/** A frame as the server writes one (src/http/sse.ts), the payload encoded by its schema. */
const frame = <T extends EventType>(id: number, type: T, data: (typeof EventSchemas)[T]["Type"]): string => {
  const schema = EventSchemas[type] as unknown as Schema.Codec<unknown, unknown>
  const wire = Schema.encodeUnknownSync(schema)(data)
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify({ type, data: wire, created_at: "2026-01-01T00:00:00.000Z" })}`
}

const heartbeat = `event: ${HEARTBEAT_EVENT}\ndata: ${JSON.stringify({ type: HEARTBEAT_EVENT, data: {} })}`

/** What followEvents does with a frame of a typed stream. */
const read = <E extends StreamEvent>(raw: string): E => {
  const event = parseFrame(raw)
  if (event === undefined) throw new Error(`no event in ${raw}`)
  return event as E
}

/** Decodes an event's data with the schema of its type (what the document declares for it). */
const decoded = (event: { readonly type: string; readonly data: unknown }) =>
  Schema.decodeUnknownSync(EventSchemas[event.type as EventType] as unknown as Schema.Codec<unknown, unknown>)(event.data, { onExcessProperty: "error" })

describe("the SDK's typed event streams", () => {
  it("each product's stream is the union of the types the document lists for it, and the heartbeat", () => {
    expectTypeOf<DoAnythingEvent["type"]>().toEqualTypeOf<TypesOf<"do_anything">>()
    expectTypeOf<ResearchEvent["type"]>().toEqualTypeOf<TypesOf<"deep_research">>()
    expectTypeOf<WebSearchEvent["type"]>().toEqualTypeOf<TypesOf<"web_search">>()
    expectTypeOf<MonitorEvent["type"]>().toEqualTypeOf<TypesOf<"track">>()
    expectTypeOf<Extract<DoAnythingEvent, { type: "run.cost_update" }>["data"]>().toEqualTypeOf<EventPayload<"run.cost_update">>()
    expectTypeOf<HeartbeatEvent["data"]>().toEqualTypeOf<{}>()

    // A type not on the stream does not compile, nor does a field the event does not carry.
    const onRun = (event: DoAnythingEvent) => {
      // @ts-expect-error a monitor's event is not on a run's stream
      if (event.type === "monitor.created") return event
      // @ts-expect-error run.search.progress is WebSearch's, not DoAnything's
      if (event.type === "run.search.progress") return event
      // @ts-expect-error run.completed carries no prompt
      if (event.type === "run.completed") return event.data.prompt
      return undefined
    }
    expect(onRun).toBeTypeOf("function")
  })

  it("a consumer reads a DoAnything stream's data by its type, and it decodes with the event's schema", () => {
    const samples = {
      status: { run_id: "run_1", from: null, status: "running" },
      input: { input_request_id: "ir_1", request_id: "ir_1", prompt: "Which size?", schema: { type: "string" } },
      cost: { step: 2, increment_usd: "0.010000", llm_cost_usd: "0.008000", browser_cost_usd: "0.002000", total_cost_usd: "0.030000" },
      completed: { run_id: "run_1", status: "done", terminal_reason: "done", output: { price: 12 }, error: null }
    } as const
    const frames = [
      frame(1, "run.status_changed", samples.status),
      heartbeat,
      frame(2, "run.input_request", samples.input),
      frame(3, "run.cost_update", samples.cost),
      frame(4, "run.completed", samples.completed)
    ]
    // A consumer written against the union: each branch reads fields its type carries, typed.
    const lines: Array<string> = []
    let status: RunStatus | undefined
    let spent: string | undefined
    for (const event of frames.map((raw) => read<DoAnythingEvent>(raw))) {
      switch (event.type) {
        case "run.status_changed":
          status = event.data.status
          lines.push(`${event.data.run_id}: ${event.data.from ?? "created"} -> ${event.data.status}`)
          break
        case "run.input_request":
          expectTypeOf(event.data.prompt).toEqualTypeOf<string>()
          lines.push(`${event.data.input_request_id} asks: ${event.data.prompt}`)
          break
        case "run.cost_update":
          spent = event.data.total_cost_usd
          lines.push(`step ${event.data.step ?? "?"} cost ${event.data.increment_usd}`)
          break
        case "run.completed":
          status = event.data.status
          lines.push(`ended ${event.data.status} (${event.data.terminal_reason}), error ${event.data.error?.code ?? "none"}`)
          break
        case HEARTBEAT_EVENT:
          expect(event.id).toBeUndefined()
          lines.push("heartbeat")
          break
        default:
          lines.push(`other ${event.type}`)
      }
      if (event.type !== HEARTBEAT_EVENT) {
        expect(typeof event.id).toBe("number")
        expect(event.created_at).toBe("2026-01-01T00:00:00.000Z")
        expect(decoded(event)).toEqual(event.data)
      }
    }
    expect(lines).toEqual([
      "run_1: created -> running",
      "heartbeat",
      "ir_1 asks: Which size?",
      "step 2 cost 0.010000",
      "ended done (done), error none"
    ])
    expect(status).toBe("done")
    expect(spent).toBe("0.030000")
    expect(decoded(read<DoAnythingEvent>(frames[3]!))).toEqual(samples.cost)
  })

  it("a monitor stream's data is typed too: the status change that ends it, a tick's slot (a date-time string on the wire)", () => {
    const tick = { run_id: "tick_1", n: 3, trigger: "schedule", slot_at: "2026-01-01T09:00:00.000Z", resumed: false } as const
    const change = { from: "active", to: "completed", reason: "stop condition met" } as const
    const events = [frame(7, "monitor.tick.started", tick), frame(8, "monitor.status_changed", change)].map((raw) => read<MonitorEvent>(raw))
    const ends: Array<MonitorStatus> = []
    for (const event of events) {
      if (event.type === "monitor.tick.started") {
        expectTypeOf(event.data.slot_at).toEqualTypeOf<string | null>()
        expect(event.data.slot_at).toBe(tick.slot_at)
      }
      if (event.type === "monitor.status_changed") ends.push(event.data.to)
      expect(decoded(event)).toEqual(event.data)
    }
    expect(ends).toEqual(["completed"])
  })

  it("a payload that does not match its type's schema fails to decode: the decode above can fail", () => {
    const bad = read<DoAnythingEvent>(`id: 9\nevent: run.cost_update\ndata: ${JSON.stringify({ type: "run.cost_update", data: { increment_usd: 1 } })}`)
    expect(() => decoded(bad)).toThrow()
  })
})
