/**
 * Every event a stream can carry is documented (issue 27 §2): the OpenAPI document at
 * /openapi.json (`OpenApi.fromApi(WebAgentApi)`) has a payload and an envelope schema for every
 * event type of the domain map (src/domain/events.ts, the one source the emitters are typed by),
 * each event-stream operation lists the types its product's stream carries and references their
 * envelopes, and the documented JSON Schemas accept exactly what the domain schemas accept (samples
 * of every payload pass both; an unknown field or another convention's status is refused by both).
 *
 * The events the running service sends are held to the same schemas by the test SSE reader
 * (test/support/sse.ts), in every process-level suite that reads a stream.
 */
import { describe, expect, it } from "vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { OpenApi } from "effect/http-api"
import { Ajv2020 } from "ajv/dist/2020.js"
import { WebAgentApi } from "../../src/http/api/api.ts"
import {
  EventSchemas,
  EventTypes,
  FlatRunEventSchemas,
  HEARTBEAT_EVENT,
  MonitorEventTypes,
  RunEventTypes,
  StreamEventTypes,
  type StreamKind,
  eventDataSchema
} from "../../src/domain/events.ts"
import type { RunStore } from "../../src/store/runs.ts"
import type { MonitorStore } from "../../src/track/monitor-store.ts"
import type { RunId } from "../../src/domain/run.ts"
import { MonitorId } from "../../src/domain/monitor.ts"

type Json = any
const doc: Json = OpenApi.fromApi(WebAgentApi)
const components: Record<string, Json> = doc.components.schemas
const strict = { errors: "all", onExcessProperty: "error" } as const

/** The event-stream operations: GET .../events answering text/event-stream. */
const streamOperations = Object.entries<Json>(doc.paths).flatMap(([path, operations]) => {
  const content = operations.get?.responses?.["200"]?.content?.["text/event-stream"]
  return content === undefined ? [] : [{ path, content }]
})

const kindOf = (path: string): StreamKind =>
  path.includes("/do_anything/") ? "do_anything" : path.includes("/deep_research/") ? "deep_research" : path.includes("/web_search/") ? "web_search" : "track"

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, validateFormats: false })
ajv.addSchema({ ...doc, $id: "openapi" })
const validatorOf = (path: string) =>
  ajv.compile({ $ref: `openapi#/paths/${path.replace(/~/g, "~0").replace(/\//g, "~1")}/get/responses/200/content/text~1event-stream/x-item-schema/properties/data/contentSchema` })

describe("event schemas in the OpenAPI document", () => {
  it("has a payload and an envelope schema for every event type the code can emit", () => {
    expect(EventTypes.length).toBe(RunEventTypes.length + MonitorEventTypes.length)
    for (const type of EventTypes) {
      expect(components[`EventData.${type}`], `EventData.${type}`).toBeDefined()
      const envelope = components[`Event.${type}`]
      expect(envelope, `Event.${type}`).toBeDefined()
      expect(envelope.properties.type.enum).toEqual([type])
      expect(envelope.properties.data).toEqual({ $ref: `#/components/schemas/EventData.${type}` })
      expect(envelope.required).toEqual(["type", "data", "created_at"])
    }
    // Convention B's own payloads: succeeded for done.
    for (const type of ["run.status_changed", "run.completed"]) {
      expect(components[`EventData.flat.${type}`].properties.status.enum).toContain("succeeded")
      expect(components[`EventData.flat.${type}`].properties.status.enum).not.toContain("done")
      expect(components[`EventData.${type}`].properties.status.enum).toContain("done")
    }
    expect(components[`Event.${HEARTBEAT_EVENT}`].required).toEqual(["type", "data"])
    // Nothing documented that the code does not know.
    const documented = Object.keys(components).filter((name) => name.startsWith("EventData.") && !name.startsWith("EventData.flat."))
    expect(documented.map((name) => name.slice("EventData.".length)).sort()).toEqual([...EventTypes].sort())
  })

  it("lists on every event-stream operation the types that stream carries, each referencing its envelope", () => {
    const paths = streamOperations.map((operation) => operation.path)
    // DoAnything, DeepResearch, WebSearch and Track, under /v1 and /api/v1.
    for (const product of ["do_anything", "deep_research", "web_search", "track"]) {
      expect(paths.some((path) => path.startsWith("/v1/") && path.includes(`/${product}/`)), `${product} under /v1`).toBe(true)
      expect(paths.some((path) => path.startsWith("/api/v1/") && path.includes(`/${product}/`)), `${product} under /api/v1`).toBe(true)
    }
    const carried = new Set<string>()
    for (const { path, content } of streamOperations) {
      const kind = kindOf(path)
      const flat = path.startsWith("/api/v1/")
      const expected = [...StreamEventTypes[kind], HEARTBEAT_EVENT]
      expect(content["x-event-types"], path).toEqual(expected)
      expect(content.schema, path).toEqual({ type: "string" })
      expect(content["x-item-schema"].properties.event.enum, path).toEqual(expected)
      const oneOf: Array<Json> = content["x-item-schema"].properties.data.contentSchema.oneOf
      const mapping: Record<string, string> = content["x-item-schema"].properties.data.contentSchema.discriminator.mapping
      expect(Object.keys(mapping), path).toEqual(expected)
      expect(oneOf.map((branch) => branch.$ref), path).toEqual(Object.values(mapping))
      for (const [type, ref] of Object.entries(mapping)) {
        const name = ref.replace("#/components/schemas/", "")
        expect(components[name], `${path}: ${ref}`).toBeDefined()
        expect(components[name].properties.type.enum, `${path}: ${ref}`).toEqual([type])
        if (flat && (type === "run.status_changed" || type === "run.completed")) expect(name).toBe(`Event.flat.${type}`)
      }
      for (const type of StreamEventTypes[kind]) carried.add(type)
    }
    // Every type the code can emit is carried by some stream.
    expect([...carried].sort()).toEqual([...EventTypes].sort())
  })

  it("documents what the domain schemas accept: samples of every payload pass both, an unknown field neither", async () => {
    for (const { path } of streamOperations) {
      const kind = kindOf(path)
      const convention = path.startsWith("/api/v1/") ? "B" : "A"
      const validate = validatorOf(path)
      for (const type of StreamEventTypes[kind]) {
        const schema = eventDataSchema(type, convention)!
        const samples = await Effect.runPromise(Arbitrary.sampleEffect(Arbitrary.schema(schema as Schema.Codec<unknown>), { count: 15, seed: 27 }))
        let checked = 0
        for (const sample of samples) {
          // As the wire has it (JSON): a sample whose JSON the domain refuses is not a wire payload.
          const data = JSON.parse(JSON.stringify(sample) ?? "null")
          if (Schema.decodeUnknownExit(schema as Schema.Codec<unknown>)(data, strict)._tag === "Failure") continue
          const envelope = { type, data, created_at: new Date().toISOString() }
          expect(validate(envelope), `${path} ${type}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(data)}`).toBe(true)
          checked++
          if (typeof data === "object" && data !== null && !Array.isArray(data)) {
            const extra = { ...envelope, data: { ...data, undocumented_field: 1 } }
            expect(validate(extra), `${path} ${type} with an unknown field`).toBe(false)
            expect(Schema.decodeUnknownExit(schema as Schema.Codec<unknown>)(extra.data, strict)._tag).toBe("Failure")
          }
        }
        expect(checked, `${path} ${type}: samples checked`).toBeGreaterThan(0)
      }
      expect(validate({ type: HEARTBEAT_EVENT, data: {} })).toBe(true)
    }
  })

  it("refuses another convention's status on a stream", () => {
    const a = streamOperations.find(({ path }) => path.startsWith("/v1/") && kindOf(path) === "do_anything")!.path
    const b = streamOperations.find(({ path }) => path.startsWith("/api/v1/") && kindOf(path) === "do_anything")!.path
    const event = (status: string) => ({
      type: "run.completed",
      created_at: new Date().toISOString(),
      data: { run_id: "run_1", status, terminal_reason: "done", output: null, error: null }
    })
    expect(validatorOf(a)(event("done"))).toBe(true)
    expect(validatorOf(a)(event("succeeded"))).toBe(false)
    expect(validatorOf(b)(event("succeeded"))).toBe(true)
    expect(validatorOf(b)(event("done"))).toBe(false)
    expect(Schema.decodeUnknownExit(EventSchemas["run.completed"])(event("succeeded").data)._tag).toBe("Failure")
    expect(Schema.decodeUnknownExit(FlatRunEventSchemas["run.completed"])(event("succeeded").data)._tag).toBe("Success")
  })

  it("types the emitters: a payload that does not match its type's schema does not compile", () => {
    // Checked by tsc (npx tsc --noEmit -p .): each @ts-expect-error must see an error. Never called.
    const runs = (append: RunStore["Service"]["appendEvent"], runId: RunId) => [
      append(runId, "run.message", { role: "agent", content: "ok" }),
      // @ts-expect-error an unknown role
      append(runId, "run.message", { role: "robot", content: "no" }),
      // @ts-expect-error a field run.completed does not have
      append(runId, "run.completed", { run_id: runId, status: "done", terminal_reason: "done", output: null, error: null, extra: 1 }),
      // @ts-expect-error an event type that does not exist
      append(runId, "run.exploded", {})
    ]
    const monitors = (append: MonitorStore["Service"]["appendEvent"]) => [
      append(MonitorId.make("mon_1"), "monitor.tick.skipped", { run_id: "tick_1", reason: "overlap" }),
      // @ts-expect-error a run event on a monitor's stream
      append(MonitorId.make("mon_1"), "run.message", { role: "agent", content: "no" })
    ]
    expect(typeof runs).toBe("function")
    expect(typeof monitors).toBe("function")
  })
})
