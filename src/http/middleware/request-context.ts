/**
 * The outermost middleware of every request: request id (X-Request-Id accepted when sane, else
 * generated, echoed back), one structured access-log line, and the error envelope for failures the
 * router and the schema layer raise before a handler runs (unknown route 404, wrong method 405,
 * malformed JSON 400, schema failure 422, defects 500).
 */
import { Cause, Context, Effect, LogLevel, References, type Types } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import * as SchemaIssue from "effect/SchemaIssue"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../../config/config.ts"
import { envelopeBody, jsonResponse as json, type FieldError } from "../errors.ts"
import { guardRequest } from "./request-guard.ts"
import { htmlDefaults } from "../page-security.ts"
import { type AccessLine, formatAccessLine, LogLines } from "../../observability/logger.ts"

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

const locPrefix = { Params: "path", Query: "query", Headers: "header", Payload: "body", Body: "response", ResponseHeaders: "response" } as const

const issueType = (issue: SchemaIssue.Issue): string => {
  switch (issue._tag) {
    case "MissingKey": return "missing"
    case "UnexpectedKey": return "extra_forbidden"
    case "InvalidType": return "type_error"
    case "Filter": return "value_error"
    default: return "invalid_value"
  }
}

/** Flattens a schema issue into the `{loc, msg, type}` list of `extra.errors`. */
export const fieldErrors = (kind: keyof typeof locPrefix, issue: SchemaIssue.Issue): Array<FieldError> => {
  const types = new Map<string, string>()
  const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
    leafHook: (leaf) => {
      const message = SchemaIssue.defaultLeafHook(leaf)
      types.set(message, issueType(leaf))
      return message
    },
    checkHook: (check) => {
      const message = SchemaIssue.defaultCheckHook(check)
      if (message !== undefined) types.set(message, "value_error")
      return message
    }
  })
  return formatter(issue).issues.map((item) => ({
    loc: [locPrefix[kind], ...(item.path ?? []).map((segment) => {
      const key = typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
      return typeof key === "number" ? key : String(key)
    })],
    msg: item.message,
    type: types.get(item.message) ?? "type_error"
  }))
}

const isMalformedJson = (error: HttpApiSchemaError) =>
  error.kind === "Payload" && error.cause.issue._tag === "InvalidValue" &&
  SchemaIssue.defaultLeafHook(error.cause.issue).includes("valid JSON")

/** Path patterns of the API, to tell "no such path" (404) from "wrong method" (405). */
const routeTable = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => {
  const routes: Array<{ method: string; pattern: RegExp }> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+")
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`) })
    }
  })
  return routes
}

const errorResponse = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest,
  routes: ReadonlyArray<{ readonly method: string; readonly pattern: RegExp }>
) =>
  Effect.gen(function*() {
    const failure = cause.reasons.find((reason) => reason._tag === "Fail")
    const error = failure?._tag === "Fail" ? failure.error : undefined
    if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound") {
      const path = request.url.split("?")[0] ?? "/"
      // The router gave up on a path segment past MAX_PATH_PARAM_LENGTH: the path is too long, not the method wrong.
      if (error.reason.description?.includes("maxParamLength") === true) {
        return json(414, envelopeBody("uri_too_long", "a segment of the path is longer than this service accepts"))
      }
      const allowed = routes.filter((route) => route.pattern.test(path)).map((route) => route.method)
      if (allowed.length > 0) {
        return json(405, envelopeBody("method_not_allowed", `${request.method} is not allowed on ${path}`, { allowed_methods: allowed }), {
          allow: [...new Set(allowed)].join(", ")
        })
      }
      return json(404, envelopeBody("not_found", `no route for ${request.method} ${path}`))
    }
    const defect = cause.reasons.find((reason) => reason._tag === "Die")
    const thrown = defect?._tag === "Die" ? defect.defect : undefined
    if (HttpApiSchemaError.is(thrown) && thrown.kind !== "Body" && thrown.kind !== "ResponseHeaders") {
      if (isMalformedJson(thrown)) return json(400, envelopeBody("bad_request", "the request body is not valid JSON"))
      const errors = fieldErrors(thrown.kind, thrown.cause.issue)
      return json(422, envelopeBody("validation_error", `invalid ${locPrefix[thrown.kind]}: ${errors.map((e) => `${e.loc.join(".")}: ${e.msg}`).join("; ")}`, { errors }))
    }
    if (Cause.hasInterruptsOnly(cause)) return json(503, envelopeBody("internal_error", "the request was interrupted"))
    yield* Effect.logError("request failed", cause)
    return json(500, envelopeBody("internal_error", "internal error; retry with backoff"))
  })

const defaultCodes: Record<number, string> = {
  400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
  409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type", 422: "validation_error",
  429: "rate_limit_exceeded"
}

/** Error responses that are not in the envelope yet (framework bodies, empty bodies) get it. */
const ensureEnvelope = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status < 400) return response
  const body = response.body
  const isJson = body._tag === "Uint8Array" && body.contentType.includes("json")
  if (isJson) {
    if (response.status !== 429) return response
    // A 429 carries Retry-After (and, from the rate limiter, its RateLimit headers), taken from the
    // envelope, because typed errors are encoded after the middleware that refused the request.
    try {
      const parsed = JSON.parse(new TextDecoder().decode(body.body)) as {
        extra?: { retry_after_seconds?: number; limit?: number; window_seconds?: number }
      }
      const extra = parsed.extra ?? {}
      const headers: Record<string, string> = {}
      if (extra.retry_after_seconds !== undefined) headers["retry-after"] = String(extra.retry_after_seconds)
      if (extra.limit !== undefined && extra.window_seconds !== undefined) {
        headers["ratelimit-policy"] = `${extra.limit};w=${extra.window_seconds}`
        headers["ratelimit"] = `limit=${extra.limit}, remaining=0, reset=${extra.retry_after_seconds ?? extra.window_seconds}`
      } else if (extra.limit !== undefined && extra.retry_after_seconds !== undefined) {
        // A concurrency cap (runs or sessions under way): no window, room comes back as they end.
        headers["ratelimit"] = `limit=${extra.limit}, remaining=0, reset=${extra.retry_after_seconds}`
      }
      return HttpServerResponse.setHeaders(response, headers)
    } catch {
      return response
    }
  }
  const text = body._tag === "Uint8Array" ? new TextDecoder().decode(body.body).trim() : ""
  const code = defaultCodes[response.status] ?? "internal_error"
  // The framework's headers stay (Allow, Retry-After, ...), but not its body's type and length: the body is JSON now.
  const { "content-type": _type, "content-length": _length, ...kept } = response.headers
  return json(response.status, envelopeBody(code, text === "" ? code.replaceAll("_", " ") : text), kept)
}

const onlyRequestId = (annotations: Readonly<Record<string, unknown>>) => {
  for (const key in annotations) if (key !== "request_id") return false
  return true
}

const accessAnnotations = (access: AccessLine) => ({
  method: access.method,
  path: access.path,
  status: access.status,
  duration_ms: access.durationMs
})

export const requestContextMiddleware = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => {
  const routes = routeTable(api)
  return HttpRouter.middleware(Effect.gen(function*() {
    const { maxBodyBytes } = yield* AppConfig
    const lines = yield* LogLines
    // Plain combinators rather than generators: this wraps every request the service answers.
    return (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const incoming = request.headers["x-request-id"]
        const requestId = incoming !== undefined && requestIdPattern.test(incoming) ? incoming : randomUUID()
        const started = performance.now()
        const finish = (response: HttpServerResponse.HttpServerResponse) =>
          Effect.withFiber((fiber) => {
            const answered = HttpServerResponse.setHeader(htmlDefaults(ensureEnvelope(response)), "x-request-id", requestId)
            const level = answered.status >= 500 ? "Error" : "Info"
            if (!LogLevel.isGreaterThanOrEqualTo(level, fiber.getRef(References.MinimumLogLevel))) return Effect.succeed(answered)
            const access = {
              requestId,
              method: request.method,
              path: request.url.split("?")[0] ?? "",
              status: answered.status,
              durationMs: Math.round((performance.now() - started) * 10) / 10
            }
            // The access log line goes straight into the log batch (see src/observability/logger.ts).
            // The request id is the usual only annotation; a line with others takes the logger's way.
            const annotations = fiber.getRef(References.CurrentLogAnnotations)
            if (!onlyRequestId(annotations)) return Effect.as(Effect.logWithLevel(level)("request").pipe(Effect.annotateLogs(accessAnnotations(access))), answered)
            lines.push(formatAccessLine(level, new Date(), fiber.id, access))
            return Effect.succeed(answered)
          })
        const handled: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled> = Effect.matchCauseEffect(
          guardRequest(request, maxBodyBytes, httpEffect),
          {
            onFailure: (cause) => Effect.flatMap(errorResponse(cause, request, routes), finish),
            onSuccess: finish
          }
        )
        return Effect.annotateLogs(handled, { request_id: requestId })
      })
  }), { global: true })
}
