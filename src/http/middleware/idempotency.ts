/**
 * Idempotency-Key on writes: the first response (status, body, ids) is kept for 24 hours and
 * replayed for the same key; the same key while the first request is still running gets 409, and
 * the same key with a different request gets 422. Keys are scoped to project and API key.
 *
 * - A claim is a lease (WA_IDEMPOTENCY_LEASE_SECONDS) that the running request renews: a process
 *   that dies mid-request leaves a claim that expires within one lease and is taken over by the
 *   next request with that key, instead of answering 409 for 24 hours.
 * - Secrets are never stored: the fields a success schema marks with `secretField`
 *   (src/http/api/schemas.ts) are set to null before the response is kept, so a replay carries
 *   them as null and the secret exists only in the first response.
 * - Server errors (5xx), 429s (retry later) and interrupted requests are not kept, so a retry runs
 *   again.
 * - A create survives a crash between its commit and the keeping of its response: the create's
 *   transaction records the new resource's id on the claim (src/store/keyed-create.ts, which
 *   reads the claim from KeyedRequest), and such a claim is never released, only expired. The
 *   retry with the same request takes it over after the lease and gets that resource, rendered
 *   as a fresh response, instead of a second one. Each attempt holds the claim with its own token,
 *   so one that outlived its lease can neither record a create nor keep a response (409).
 */
import { Effect, Exit, Fiber, Layer, Schedule, Schema, SchemaAST } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import { ClaimLost, type HeldKey, IDEMPOTENCY_WINDOW_HOURS, IdempotencyKeys, type KeyedClaim, KeyedRequest } from "../../auth/idempotency-keys.ts"
import { createHash, randomUUID } from "node:crypto"
import { AppConfig } from "../../config/config.ts"
import { conflict, statusOf, validationError } from "../errors.ts"
import { SECRET_FIELD_ANNOTATION } from "../api/schemas.ts"
import { CurrentCaller, Idempotency } from "../api/security.ts"

export { IDEMPOTENCY_WINDOW_HOURS }
const writeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"])
const replayedHeaders = ["content-type", "location"]

/** Where a secret sits in a JSON body: property names, and `[]` for every item of an array. */
type SecretPath = ReadonlyArray<string>

const isSecretField = (ast: SchemaAST.AST): boolean =>
  SchemaAST.resolveAt<boolean>(SECRET_FIELD_ANNOTATION)(ast) === true ||
  (ast._tag === "Union" && ast.types.some(isSecretField))

/** The paths of every field marked with `secretField` in a schema (its wire shape). */
export const secretPaths = (schema: Schema.Top): ReadonlyArray<SecretPath> => {
  const paths: Array<SecretPath> = []
  const seen = new Set<SchemaAST.AST>()
  const walk = (ast: SchemaAST.AST, at: SecretPath): void => {
    if (seen.has(ast)) return
    seen.add(ast)
    switch (ast._tag) {
      case "Objects":
        for (const property of ast.propertySignatures) {
          const path = [...at, String(property.name)]
          if (isSecretField(property.type)) paths.push(path)
          else walk(property.type, path)
        }
        break
      case "Arrays":
        for (const item of [...ast.elements, ...ast.rest]) walk(item, [...at, "[]"])
        break
      case "Union":
        for (const member of ast.types) walk(member, at)
        break
      case "Suspend":
        walk(ast.thunk(), at)
        break
      case "Declaration":
        for (const parameter of ast.typeParameters) walk(parameter, at)
        break
    }
    // A transformed schema (a class, a renamed field) is stored in its encoded form.
    for (const link of ast.encoding ?? []) walk(link.to, at)
  }
  walk(schema.ast, [])
  return paths
}

const nullAt = (value: unknown, path: SecretPath): void => {
  if (path.length === 0 || value === null || typeof value !== "object") return
  const [head, ...rest] = path as [string, ...Array<string>]
  if (head === "[]") {
    if (Array.isArray(value)) for (const item of value) nullAt(item, rest)
    return
  }
  const record = value as Record<string, unknown>
  if (!Object.hasOwn(record, head)) return
  if (rest.length === 0) record[head] = null
  else nullAt(record[head], rest)
}

/** The secret paths of every success schema of an endpoint. */
const endpointSecretPaths = (endpoint: HttpApiEndpoint.Top): ReadonlyArray<SecretPath> =>
  [...endpoint.success].flatMap(secretPaths)

/**
 * The response body as it may be stored: every secret field set to null; undefined when the body
 * cannot be read as JSON although the schema has secrets (then nothing is stored).
 */
export const redactSecrets = (body: string, paths: ReadonlyArray<SecretPath>): string | undefined => {
  if (paths.length === 0) return body
  try {
    const parsed: unknown = JSON.parse(body)
    for (const path of paths) nullAt(parsed, path)
    return JSON.stringify(parsed)
  } catch {
    return undefined
  }
}

/** Statuses whose response is not the outcome of the request, so a retry must run it again. */
const replayable = (status: number) => status < 500 && status !== 429

export const IdempotencyLive = Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const { idempotencyLeaseSeconds } = yield* AppConfig
    const records = yield* IdempotencyKeys
    const { claim, release, renew, store } = records
    const find = (scope: CurrentCaller["Service"], key: string) => records.find(scope.space, scope.id, key)
    /** One attempt's hold on a key. */
    type Held = HeldKey & { readonly scope: CurrentCaller["Service"] }

    /** `secrets`: where the endpoint's success schema has secret fields (nulled before storing). */
    const withIdempotency = <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>, secrets: ReadonlyArray<SecretPath>) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers["idempotency-key"]
        if (key === undefined) return yield* httpEffect
        if (key.length < 1 || key.length > 255) {
          return yield* validationError("Idempotency-Key must be 1 to 255 characters", [
            { loc: ["header", "Idempotency-Key"], msg: "must be 1 to 255 characters", type: "string_length" }
          ])
        }
        const scope = yield* CurrentCaller
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        const requestHash = createHash("sha256").update(`${request.method} ${request.url}\n${body}`).digest("hex")

        const held: Held = { scope, space: scope.space, callerId: scope.id, key, attempt: randomUUID() }
        let claimed = yield* claim(held, requestHash)
        if (claimed === undefined) {
          const existing = yield* find(scope, key)
          if (existing === undefined) {
            // Released between the two statements: the request that held it failed; one more try.
            claimed = yield* claim(held, requestHash)
            if (claimed === undefined) return yield* conflict("a request with this Idempotency-Key is in flight")
          } else if (existing.request_hash !== requestHash) {
            return yield* validationError("Idempotency-Key was already used with a different request", [
              { loc: ["header", "Idempotency-Key"], msg: "reused with a different method, path or body", type: "idempotency_key_reused" }
            ])
          } else if (existing.status === null) {
            return yield* conflict("a request with this Idempotency-Key is still in flight", { idempotency_key: key })
          } else {
            return HttpServerResponse.text(existing.response_body ?? "", {
              status: existing.status,
              headers: { ...existing.response_headers, "idempotent-replayed": "true" }
            })
          }
        }
        const keyed: KeyedClaim = { space: scope.space, callerId: scope.id, key, attempt: held.attempt, createdId: claimed.resource_id }

        // The claim is renewed while the request runs; an interrupted request (client gone, shutdown)
        // frees the key, so a retry is not stuck on 409.
        const renewal = yield* renew(held).pipe(
          Effect.repeat(Schedule.spaced(`${Math.max(1, idempotencyLeaseSeconds / 3)} seconds`)),
          Effect.delay(`${Math.max(1, idempotencyLeaseSeconds / 3)} seconds`),
          Effect.forkChild
        )
        const exit = yield* Effect.exit(Effect.provideService(httpEffect, KeyedRequest, keyed)).pipe(
          Effect.onInterrupt(() => release(held)),
          Effect.ensuring(Fiber.interrupt(renewal))
        )
        if (Exit.isSuccess(exit)) {
          const response = exit.value
          const responseBody = response.body
          const stored = replayable(response.status) && responseBody._tag === "Uint8Array"
            ? redactSecrets(new TextDecoder().decode(responseBody.body), secrets)
            : undefined
          if (stored !== undefined && responseBody._tag === "Uint8Array") {
            const headers: Record<string, string> = {}
            for (const name of replayedHeaders) {
              const value = response.headers[name]
              if (value !== undefined) headers[name] = value
            }
            headers["content-type"] ??= responseBody.contentType
            // The attempt that took the key over answers it (with the resource this one made):
            // this answer, which may carry a secret minted again since, is not given.
            if (!(yield* store(held, response.status, headers, stored))) {
              return yield* conflict("a request with this Idempotency-Key is in flight", { idempotency_key: key })
            }
          } else {
            yield* release(held)
          }
          return response
        }
        // A typed 4xx is part of the outcome and replays too; anything else lets the client retry.
        const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
        const status = failure === undefined ? undefined : statusOf(failure.error)
        if (failure !== undefined && status !== undefined && replayable(status)) {
          const { code, detail, extra } = failure.error as unknown as { code: string; detail: string; extra: unknown }
          yield* store(held, status, { "content-type": "application/json" }, JSON.stringify({ code, detail, extra }))
        } else {
          yield* release(held)
        }
        // This attempt outlived its lease and another took the key over: its create was rolled back.
        if (exit.cause.reasons.some((reason) => reason._tag === "Die" && reason.defect instanceof ClaimLost)) {
          return yield* conflict("a request with this Idempotency-Key is in flight", { idempotency_key: key })
        }
        return yield* exit
      })

    // Reads never take part: their endpoints get the handler unwrapped, decided once per route.
    return Idempotency.of((httpEffect, { endpoint }) => {
      if (!writeMethods.has(endpoint.method)) return httpEffect
      const secrets = endpointSecretPaths(endpoint)
      return withIdempotency(httpEffect, secrets)
    })
  })
)
