/**
 * The transport headers of the contract, added to the generated OpenAPI document (issue 27): the
 * middlewares that honour them are not schemas, so the generator cannot see them.
 *
 * - `Idempotency-Key` (request header) on every operation that carries the Idempotency middleware
 *   (src/http/middleware/idempotency.ts): 1..255 characters, a replay answers the first response.
 * - Numeric query parameters (`limit`, `page`, `page_size`, ...) as what they decode to, an integer
 *   with its bounds (the generator shows the string of the URL), and `limit`'s default.
 * - `Retry-After` on every 429 (always sent: every 429 of the service carries
 *   `extra.retry_after_seconds`, see src/http/middleware/request-context.ts), and `RateLimit` /
 *   `RateLimit-Policy` (sent when the refusal comes from a limiter with a window or a cap).
 * - The response headers every answer may carry, declared on every response (as
 *   `#/components/headers/...`): `X-Request-Id` on all of them (the request-context middleware
 *   sets it, echoing a well-formed incoming one), `RateLimit` / `RateLimit-Policy` on the
 *   operations behind the rate limiter, `Idempotent-Replayed: true` on the operations that
 *   honour Idempotency-Key (a replayed answer).
 * - The refusals of the request guard (src/http/middleware/request-guard.ts) and of the body
 *   parser, which answer before any endpoint's schema: 400 `bad_request` on every operation (a
 *   NUL byte or bad percent-encoding in the URL; a body that is not JSON) and 413
 *   `payload_too_large` on every operation that takes a body (test/support/contract-hook.ts
 *   holds every response of the process-level suites to the document).
 * - The refusals of the router and the decoders, also before any endpoint: 414 `uri_too_long` on
 *   every operation with a path parameter (a segment past the router's maxParamLength), 415
 *   `unsupported_media_type` on every operation that takes a body (a content type it does not
 *   parse), 422 `validation_error` on every operation with parameters or a body (the schema of a
 *   path, query or body refused), wherever the endpoint does not declare them already.
 */
import { Schema } from "effect"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { DEFAULT_LIMIT } from "../../domain/pagination.ts"
import { Idempotency, RateLimit } from "./security.ts"

type Spec = Record<string, any>

const idempotencyKeyParameter = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description: "Makes the write safe to retry: the first response to a key is kept for 24 hours and replayed to a repeat " +
    "of the same request (with Idempotent-Replayed: true); the same key with a different request is 422, and while the " +
    "first is still running 409. 5xx and 429 answers are not kept. Keys are per project and caller.",
  schema: { type: "string", minLength: 1, maxLength: 255 }
}

const tooManyRequestsHeaders = {
  "Retry-After": {
    required: true,
    description: "Seconds to wait before retrying (the envelope's extra.retry_after_seconds)",
    schema: { type: "integer", minimum: 0 }
  },
  "RateLimit": {
    required: false,
    description: "limit=<n>, remaining=0, reset=<seconds> (IETF RateLimit header fields draft); sent by the rate limiter and the concurrency caps",
    schema: { type: "string" }
  },
  "RateLimit-Policy": {
    required: false,
    description: "<limit>;w=<window seconds>; sent by the request rate limiter",
    schema: { type: "string" }
  }
}

const envelopeSchema = {
  type: "object",
  properties: { code: { type: "string" }, detail: { type: "string" }, extra: { type: "object" } },
  required: ["code", "detail", "extra"],
  additionalProperties: false
}

const badRequestResponse = {
  description: "bad_request: the request is malformed (a NUL byte or bad percent-encoding in the URL, a body that is not valid JSON)",
  content: { "application/json": { schema: { $ref: "#/components/schemas/BadRequestEncoded" } } }
}

const uriTooLongResponse = {
  description: "uri_too_long: a segment of the path is longer than this service accepts; refused by the router",
  content: { "application/json": { schema: { $ref: "#/components/schemas/UriTooLongEncoded" } } }
}

const unsupportedMediaTypeResponse = {
  description: "unsupported_media_type: the body's Content-Type is not one the operation reads (application/json unless stated)",
  content: { "application/json": { schema: { $ref: "#/components/schemas/UnsupportedMediaTypeEncoded" } } }
}

const validationErrorResponse = {
  description: "validation_error: schema failure of the path, query or body; extra.errors[] lists {loc, msg, type}",
  content: { "application/json": { schema: { $ref: "#/components/schemas/ValidationErrorEncoded" } } }
}

const payloadTooLargeResponse = {
  description: "payload_too_large: the request body is larger than the service accepts (extra.limit_bytes); refused before it is read",
  content: { "application/json": { schema: { $ref: "#/components/schemas/PayloadTooLargeEncoded" } } }
}

/** Response headers declared once and referred to from every response that may carry them. */
const responseHeaders = {
  "X-Request-Id": {
    required: true,
    description: "The request's id, in the access log line too: the client's own X-Request-Id when well-formed, else a new UUID",
    schema: { type: "string", minLength: 1 }
  },
  "Idempotent-Replayed": {
    required: false,
    description: "true: this is the kept answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] }
  },
  "RateLimit": {
    required: false,
    description: "limit=<n>, remaining=<n>, reset=<seconds> of the caller's request window (IETF RateLimit header fields draft)",
    schema: { type: "string" }
  },
  "RateLimit-Policy": {
    required: false,
    description: "<limit>;w=<window seconds> of the caller's request window",
    schema: { type: "string" }
  }
}
const headerRef = (name: keyof typeof responseHeaders) => ({ $ref: `#/components/headers/${name}` })

const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** `METHOD /path/{param}` of each endpoint that carries `middleware` (and, when given, has one of `methods`). */
const operationsWith = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  tag: unknown,
  methods?: ReadonlySet<string>
): ReadonlySet<string> => {
  const out = new Set<string>()
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => {
      if ((middleware as ReadonlySet<unknown>).has(tag) && (methods === undefined || methods.has(endpoint.method))) {
        out.add(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`)
      }
    }
  })
  return out
}

/**
 * Per operation, the JSON Schema of each numeric query parameter's decoded value (`{type:
 * "integer", minimum, maximum}`), from the endpoint's own query schema.
 */
const numericQueryParameters = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => {
  const out = new Map<string, Record<string, Record<string, unknown>>>()
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      if (endpoint.query === undefined) return
      const properties: Record<string, any> = Schema.toJsonSchemaDocument(Schema.toType(endpoint.query)).schema["properties"] ?? {}
      const numeric: Record<string, Record<string, unknown>> = {}
      for (const [name, schema] of Object.entries(properties)) {
        const branches: Array<Record<string, unknown>> = Array.isArray(schema.anyOf) ? schema.anyOf : [schema]
        const values = branches.filter((b) => b["type"] !== "null")
        if (values.length === 1 && (values[0]!["type"] === "integer" || values[0]!["type"] === "number")) numeric[name] = values[0]!
      }
      out.set(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`, numeric)
    }
  })
  return out
}

/** The `OpenApi.Transform` of the whole API (its middlewares are read when the document is generated). */
export const transportHeaders = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => (spec: Spec): Spec => {
  // Idempotency-Key (and its replays): the writes behind the middleware.
  const idempotent = operationsWith(api, Idempotency, writeMethods)
  const rateLimited = operationsWith(api, RateLimit)
  const numeric = numericQueryParameters(api)
  const components: Record<string, any> = spec["components"] ??= {}
  const schemas: Record<string, unknown> = components["schemas"] ??= {}
  schemas["BadRequestEncoded"] ??= envelopeSchema
  schemas["PayloadTooLargeEncoded"] ??= envelopeSchema
  schemas["UriTooLongEncoded"] ??= envelopeSchema
  schemas["UnsupportedMediaTypeEncoded"] ??= envelopeSchema
  schemas["ValidationErrorEncoded"] ??= envelopeSchema
  components["headers"] = { ...responseHeaders, ...components["headers"] }
  for (const [path, operations] of Object.entries<Record<string, any>>(spec["paths"] ?? {})) {
    for (const [method, operation] of Object.entries<Record<string, any>>(operations)) {
      if (typeof operation !== "object" || operation === null || operation["responses"] === undefined) continue
      const numbers = numeric.get(`${method} ${path}`) ?? {}
      for (const parameter of (operation["parameters"] ?? []) as Array<Record<string, any>>) {
        const decoded = parameter["in"] === "query" ? numbers[parameter["name"]] : undefined
        if (decoded === undefined) continue
        const shown = parameter["schema"] ?? {}
        const fallback = parameter["name"] === "limit" ? DEFAULT_LIMIT : undefined
        const defaultValue = shown["default"] ?? fallback
        parameter["schema"] = { ...decoded, ...(defaultValue === undefined ? {} : { default: defaultValue }) }
      }
      if (idempotent.has(`${method} ${path}`)) {
        const parameters: Array<Record<string, unknown>> = operation["parameters"] ?? []
        if (!parameters.some((p) => String(p["name"]).toLowerCase() === "idempotency-key")) {
          operation["parameters"] = [...parameters, idempotencyKeyParameter]
        }
      }
      operation["responses"]["400"] ??= badRequestResponse
      if (operation["requestBody"] !== undefined) operation["responses"]["413"] ??= payloadTooLargeResponse
      const parameterPlaces = ((operation["parameters"] ?? []) as Array<Record<string, any>>).map((parameter) => parameter["in"])
      if (parameterPlaces.includes("path")) operation["responses"]["414"] ??= uriTooLongResponse
      if (operation["requestBody"] !== undefined) operation["responses"]["415"] ??= unsupportedMediaTypeResponse
      if (operation["requestBody"] !== undefined || parameterPlaces.includes("path") || parameterPlaces.includes("query")) {
        operation["responses"]["422"] ??= validationErrorResponse
      }
      const tooMany = operation["responses"]["429"]
      if (tooMany !== undefined) tooMany["headers"] = { ...tooManyRequestsHeaders, ...tooMany["headers"] }
      for (const [status, response] of Object.entries<Record<string, any>>(operation["responses"])) {
        const headers: Record<string, unknown> = { "X-Request-Id": headerRef("X-Request-Id") }
        if (idempotent.has(`${method} ${path}`)) headers["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
        if (rateLimited.has(`${method} ${path}`) && status !== "429") {
          headers["RateLimit"] = headerRef("RateLimit")
          headers["RateLimit-Policy"] = headerRef("RateLimit-Policy")
        }
        // A copy: one response object may be shared by several operations (the 400, 413, 414, 415, 422 above).
        operation["responses"][status] = { ...response, headers: { ...headers, ...response["headers"] } }
      }
    }
  }
  return spec
}
