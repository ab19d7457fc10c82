/**
 * Checks every request gets before routing, so hostile input is refused with the envelope instead
 * of reaching a handler or PostgreSQL:
 * - the path and query must be well-formed percent-encoding without NUL (400);
 * - a body larger than the limit is refused with 413, from its Content-Length before anything is
 *   read, otherwise as soon as the bytes read pass the limit;
 * - a JSON body may nest at most MAX_JSON_DEPTH levels, and no string or key in it may hold NUL or
 *   a lone UTF-16 surrogate (PostgreSQL refuses both, which would surface as a 500): 422.
 * The body read here is cached on the request, so the handler's decoding reuses it.
 */
import { ByteSize, Effect } from "effect"
import { HttpIncomingMessage, type HttpServerRequest, type HttpServerResponse } from "effect/http"
import { envelopeBody, jsonResponse as json, type FieldError } from "../errors.ts"

export const MAX_JSON_DEPTH = 64

const bodyMethods = new Set(["POST", "PUT", "PATCH", "DELETE"])

/**
 * Routes whose body the handler streams with a limit of its own (workspace file uploads, limited
 * by WA_WORKSPACE_MAX_FILE_BYTES): not read here, and not under WA_MAX_BODY_BYTES.
 */
const streamedUploads: ReadonlyArray<{ readonly method: string; readonly path: RegExp }> = [
  { method: "PUT", path: /^\/v1\/projects\/[^/?]+\/workspaces\/[^/?]+\/files\/[^/?]+$/ }
]

export const isStreamedUpload = (method: string, url: string): boolean => {
  const path = url.split("?")[0] ?? ""
  return streamedUploads.some((route) => route.method === method && route.path.test(path))
}

const hasBadCharacter = (value: string) => value.includes("\u0000") || !value.isWellFormed()

/** Why the request target is refused, or undefined when it is fine. */
export const checkRequestTarget = (url: string): string | undefined => {
  // Fast path (nearly every request): printable ASCII without '%' decodes to itself, so it holds
  // neither NUL nor a lone surrogate; nothing to split or decode.
  let plain = true
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i)
    if (c < 0x21 || c > 0x7e || c === 0x25) {
      plain = false
      break
    }
  }
  if (plain) return undefined
  const queryAt = url.indexOf("?")
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  const parts = [path, ...(queryAt === -1 ? [] : url.slice(queryAt + 1).split(/[&=]/))]
  for (const part of parts) {
    let decoded: string
    try {
      decoded = decodeURIComponent(part.replaceAll("+", " "))
    } catch {
      return "the URL has malformed percent-encoding"
    }
    if (hasBadCharacter(decoded)) return "the URL contains a NUL byte or an invalid character"
  }
  return undefined
}

/** The nesting depth of JSON text, counted without parsing it (strings skipped). */
export const jsonDepth = (text: string): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) {
      inString = true
    } else if (c === 123 || c === 91) {
      if (++depth > deepest) deepest = depth
    } else if (c === 125 || c === 93) {
      depth--
    }
  }
  return deepest
}

/** The first string or key holding NUL or a lone surrogate, with its location. */
export const findBadString = (value: unknown, loc: Array<string | number> = []): FieldError | undefined => {
  if (typeof value === "string") {
    return hasBadCharacter(value) ? { loc: ["body", ...loc], msg: "contains a NUL character or a lone UTF-16 surrogate", type: "invalid_character" } : undefined
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findBadString(value[i], [...loc, i])
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (hasBadCharacter(key)) return { loc: ["body", ...loc, key], msg: "the key contains a NUL character or a lone UTF-16 surrogate", type: "invalid_character" }
      const found = findBadString(item, [...loc, key])
      if (found !== undefined) return found
    }
  }
  return undefined
}

const tooLarge = (limit: number) =>
  json(413, envelopeBody("payload_too_large", `the request body is larger than ${limit} bytes`, { limit_bytes: limit }), {
    // The rest of an oversized body is not read; the connection cannot carry another request.
    connection: "close"
  })

/** True when a body read failed because it passed the size limit (HttpServerError reason BodyTooLarge). */
const causedByOverflow = (error: { readonly reason: unknown }): boolean =>
  (error.reason as { readonly reason?: unknown } | undefined)?.reason === "BodyTooLarge"

const invalid = (detail: string, errors: ReadonlyArray<FieldError>) =>
  json(422, envelopeBody("validation_error", detail, { errors }))

/**
 * Runs the checks; answers the refusal, or runs `next` with the body (if any) read and cached
 * under the size limit.
 */
export const guardRequest = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  maxBodyBytes: number,
  next: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  // Decided before any effect is built: most requests (reads, empty bodies) go straight on.
  const targetProblem = checkRequestTarget(request.url)
  if (targetProblem !== undefined) return Effect.succeed(json(400, envelopeBody("bad_request", targetProblem)))
  if (!bodyMethods.has(request.method) || isStreamedUpload(request.method, request.url)) return next
  const declared = Number(request.headers["content-length"])
  if (Number.isFinite(declared) && declared > maxBodyBytes) return Effect.succeed(tooLarge(maxBodyBytes))
  if (request.headers["content-length"] === undefined && request.headers["transfer-encoding"] === undefined) return next
  return readAndCheckBody(request, maxBodyBytes, next)
}

const readAndCheckBody = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  maxBodyBytes: number,
  next: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.gen(function*() {
    // Read once under the limit; the request caches it for the handler's decoding. On overflow the
    // Node request drains instead of being destroyed (its default), so the 413 reaches the client.
    const nodeRequest = request as unknown as { destroyOnOverflow?: boolean }
    if ("destroyOnOverflow" in nodeRequest) nodeRequest.destroyOnOverflow = false
    const text = yield* request.text.pipe(
      Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(maxBodyBytes)),
      Effect.result
    )
    if (text._tag === "Failure") {
      return causedByOverflow(text.failure)
        ? tooLarge(maxBodyBytes)
        : json(400, envelopeBody("bad_request", "the request body could not be read"))
    }
    const contentType = request.headers["content-type"] ?? ""
    if (text.success !== "" && contentType.includes("json")) {
      if (jsonDepth(text.success) > MAX_JSON_DEPTH) {
        return invalid(`the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, [
          { loc: ["body"], msg: `nested deeper than ${MAX_JSON_DEPTH} levels`, type: "too_deep" }
        ])
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(text.success)
      } catch {
        return yield* next // malformed JSON: the handler's decoding answers 400 with the usual detail
      }
      const bad = findBadString(parsed)
      if (bad !== undefined) return invalid(`${bad.loc.join(".")}: ${bad.msg}`, [bad])
    }
    return yield* next
  })
