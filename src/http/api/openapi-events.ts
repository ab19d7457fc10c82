/**
 * The event streams of the contract, added to the generated OpenAPI document (issue 27 §2): the
 * payload of every event type (src/domain/events.ts) under components.schemas, and on every event
 * stream operation the event types it carries.
 *
 * Components:
 * - `EventData.<type>`: the event's `data` as a `/v1` stream (Convention A) sends it, e.g.
 *   `EventData.run.completed`; `EventData.flat.<type>` where a `/api/v1` stream (Convention B)
 *   differs (`run.status_changed`, `run.completed`: `succeeded` and terminal_reason `done`).
 * - `Event.<type>` (and `Event.flat.<type>`): the envelope a frame's `data:` line holds,
 *   `{type, data, created_at}`; `Event.stream.heartbeat` the idle stream's `{type, data: {}}`.
 *
 * Operations (GET .../events of DoAnything, DeepResearch, WebSearch and Track, both conventions):
 * the `text/event-stream` response keeps `schema: {type: string}` and gains two extensions:
 * - `x-event-types`: the list of the event types the stream can carry;
 * - `x-item-schema`: each SSE event `{id, event, data}`, `data` being JSON (`contentMediaType`)
 *   whose `contentSchema` is a `oneOf` of the stream's envelopes, discriminated by `type` (which
 *   equals the frame's `event`).
 *
 * Why this form: the document is OpenAPI 3.1, where `schema` describes the whole body, and the body
 * of an event stream is one text, not a JSON value: a `oneOf` of objects there would be false (and
 * a validator holding the body to the document, as the contract hook does, would refuse every
 * stream). OpenAPI 3.2 added `itemSchema` for exactly this case (a sequence of items in one body,
 * `text/event-stream` items being `{event, data, id, retry}`), but a 3.1 Media Type Object allows
 * only its own fields and `x-` extensions, so a 3.1 document with `itemSchema` fails the linters;
 * `x-item-schema` has the same shape, to be renamed `itemSchema` when the generator emits 3.2.
 * `x-event-types` serves tools that only want the names (the console, SDK generators mapping names
 * to handlers).
 *
 * The recording replay's `GET /v1/recordings/{aid}/events` is a JSON document of rrweb events, not
 * an event stream: it is left as it is.
 */
import { JsonSchema, type Schema, SchemaRepresentation } from "effect"
import {
  EventSchemas,
  FlatRunEventSchemas,
  HEARTBEAT_EVENT,
  RunEventSchemas,
  StreamEventTypes,
  type StreamKind
} from "../../domain/events.ts"

type Spec = Record<string, any>
type Convention = "A" | "B"

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** JSON Schemas (OpenAPI 3.1 dialect) of the schemas, in order; unknown fields refused, as the server sends none. */
export const jsonSchemas = (schemas: ReadonlyArray<Schema.Top>) => {
  const document = SchemaRepresentation.toRepresentations(schemas.map((schema) => schema.ast) as [Schema.Top["ast"], ...Array<Schema.Top["ast"]>])
  const multi = JsonSchema.toMultiDocumentOpenApi3_1(SchemaRepresentation.toJsonSchemaMultiDocument(document, { onExcessProperty: "error" }))
  return { schemas: multi.schemas as ReadonlyArray<Record<string, unknown>>, definitions: multi.definitions as Record<string, unknown> }
}

/** The component names of an event type's payload and envelope in a convention. */
export const eventComponentNames = (type: string, convention: Convention, flatTypes: ReadonlySet<string>) => {
  const flat = convention === "B" && flatTypes.has(type)
  return { data: flat ? `EventData.flat.${type}` : `EventData.${type}`, envelope: flat ? `Event.flat.${type}` : `Event.${type}` }
}

const envelope = (type: string, data: Record<string, unknown>, stored: boolean) => ({
  type: "object",
  description: stored
    ? `The JSON of a \`${type}\` frame's data line (the frame's \`event\` is \`${type}\`, its \`id\` the event's number in the stream).`
    : `The JSON of a \`${type}\` frame's data line: sent by an idle stream, with no \`id\`.`,
  properties: {
    type: { type: "string", enum: [type] },
    data,
    ...(stored ? { created_at: { type: "string", format: "date-time" } } : {})
  },
  required: stored ? ["type", "data", "created_at"] : ["type", "data"],
  additionalProperties: false
})

/** The stream of an event-stream operation's path, or undefined (not an event stream of a product). */
export const streamOfPath = (path: string): { readonly kind: StreamKind; readonly convention: Convention } | undefined => {
  if (!path.endsWith("/events")) return undefined
  const convention: Convention = path.startsWith("/api/v1/") ? "B" : "A"
  const kind: StreamKind | undefined = path.includes("/do_anything/")
    ? "do_anything"
    : path.includes("/deep_research/")
    ? "deep_research"
    : path.includes("/web_search/")
    ? "web_search"
    : path.includes("/track/")
    ? "track"
    : undefined
  return kind === undefined ? undefined : { kind, convention }
}

/** The `OpenApi.Transform` adding the event payloads and each stream's event types. */
export const eventStreams = (spec: Spec): Spec => {
  const components: Record<string, unknown> = (spec["components"] ??= {})["schemas"] ??= {}
  const types = Object.keys(EventSchemas)
  const runTypes = Object.keys(RunEventSchemas) as Array<keyof typeof RunEventSchemas>
  const all = jsonSchemas([
    ...types.map((type) => (EventSchemas as Record<string, Schema.Top>)[type]!),
    ...runTypes.map((type) => FlatRunEventSchemas[type])
  ])
  for (const [name, definition] of Object.entries(all.definitions)) if (!(name in components)) components[name] = definition
  const byType = new Map(types.map((type, index) => [type, all.schemas[index]!]))
  // Payloads of Convention B that differ from Convention A's get their own components.
  const flatTypes = new Set<string>()
  runTypes.forEach((type, index) => {
    const flat = all.schemas[types.length + index]!
    if (JSON.stringify(flat) !== JSON.stringify(byType.get(type))) {
      flatTypes.add(type)
      const names = eventComponentNames(type, "B", flatTypes)
      components[names.data] = flat
      components[names.envelope] = envelope(type, ref(names.data), true)
    }
  })
  for (const type of types) {
    const names = eventComponentNames(type, "A", flatTypes)
    components[names.data] = byType.get(type)
    components[names.envelope] = envelope(type, ref(names.data), true)
  }
  const heartbeat = `Event.${HEARTBEAT_EVENT}`
  components[heartbeat] = envelope(HEARTBEAT_EVENT, { type: "object", properties: {}, additionalProperties: false }, false)

  for (const [path, operations] of Object.entries<Record<string, any>>(spec["paths"] ?? {})) {
    const stream = streamOfPath(path)
    const content = operations["get"]?.["responses"]?.["200"]?.["content"]?.["text/event-stream"]
    if (stream === undefined || content === undefined) continue
    const carried: ReadonlyArray<string> = StreamEventTypes[stream.kind]
    const envelopes = [...carried.map((type) => eventComponentNames(type, stream.convention, flatTypes).envelope), heartbeat]
    const names = [...carried, HEARTBEAT_EVENT]
    content["x-event-types"] = names
    content["x-item-schema"] = {
      type: "object",
      description: `One event of the stream: \`event\` names its type, \`data\` is the JSON envelope of that type${
        stream.convention === "B" ? " (statuses as /api/v1 names them: succeeded, with terminal_reason done)" : ""
      }. A reconnect with Last-Event-ID resumes after \`id\`.`,
      properties: {
        id: { type: "string", pattern: "^[0-9]+$", description: "The event's number, increasing within the stream (absent on heartbeats)" },
        event: { type: "string", enum: names },
        data: {
          type: "string",
          contentMediaType: "application/json",
          contentSchema: {
            oneOf: envelopes.map(ref),
            discriminator: { propertyName: "type", mapping: Object.fromEntries(names.map((type, index) => [type, ref(envelopes[index]!).$ref])) }
          }
        }
      },
      required: ["event", "data"]
    }
  }
  return spec
}
