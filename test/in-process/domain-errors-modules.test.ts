/**
 * The errors of the product folders declare their wire form on their own class too (issue 27 §1),
 * and the one mapper of src/http/domain-errors.ts (which imports none of them: it reads the
 * declaration structurally) turns them into the envelope. Every error class src/accounts/errors.ts
 * and src/delegation/errors.ts export is walked, and the classes the handlers of secrets, webhook
 * endpoints, workspace files, the Stripe webhook and skills used to map one by one: the envelope's
 * status and code are the declared ones and its body is a valid envelope of that status. A class
 * that declares nothing fails the walk. The wire form the handlers answered with before the fold
 * is pinned on examples.
 */
import { describe, expect, it } from "vitest"
import { Arbitrary, Effect, Schema } from "effect"
import * as AccountErrors from "../../src/accounts/errors.ts"
import { StripeNotConfigured, StripeSignatureInvalid } from "../../src/billing/stripe.ts"
import * as DelegationErrors from "../../src/delegation/errors.ts"
import { SkillRefused } from "../../src/do-anything/skills.ts"
import type { OnTheWire } from "../../src/domain/errors.ts"
import { type HttpErrorOf, httpErrors, isOnTheWire, toHttpError } from "../../src/http/domain-errors.ts"
import { BadRequest, Conflict, Forbidden, NotFound, statusOf, TooManyRequests, Unauthorized, ValidationError } from "../../src/http/errors.ts"
import { SecretLimitReached, SecretNameTaken } from "../../src/secrets/secret-store.ts"
import { FileTooLarge, InvalidFileName } from "../../src/store/workspace-store.ts"
import { WebhookEndpointLimitReached } from "../../src/webhooks/webhook-endpoints.ts"
import { DeliveryNotRetryable } from "../../src/webhooks/callbacks.ts"
import { SafetyBoundaryViolated } from "../../src/safety/service.ts"

type Json = any

const schemasOf = (module: Record<string, unknown>) =>
  Object.entries(module).filter(([, value]) => Schema.isSchema(value)) as Array<[string, Schema.Codec<unknown>]>

/** The errors modules (every class they export), then the classes of other modules the handlers map. */
const errorClasses: Array<[string, Schema.Codec<unknown>]> = [
  ...schemasOf(AccountErrors),
  ...schemasOf(DelegationErrors),
  ...schemasOf({ SecretNameTaken, SecretLimitReached, WebhookEndpointLimitReached, DeliveryNotRetryable, SafetyBoundaryViolated, FileTooLarge, StripeNotConfigured, StripeSignatureInvalid, InvalidFileName, SkillRefused })
]

const samplesOf = (schema: Schema.Codec<unknown>) => Effect.runPromise(Arbitrary.sampleEffect(Arbitrary.schema(schema), { count: 25, seed: 27 }))

const envelopeSchemaOf = (error: unknown): Schema.Codec<unknown> => (error as { constructor: Schema.Codec<unknown> }).constructor

type Equals<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false
const typeLevel: [
  Equals<HttpErrorOf<AccountErrors.AccountError>, Unauthorized | TooManyRequests | NotFound | Forbidden | Conflict | ValidationError>,
  Equals<HttpErrorOf<DelegationErrors.DelegationInvalid>, BadRequest | ValidationError>,
  Equals<HttpErrorOf<SecretNameTaken | WebhookEndpointLimitReached>, Conflict>,
  Equals<HttpErrorOf<SkillRefused>, NotFound | Conflict | ValidationError>,
  Equals<HttpErrorOf<StripeNotConfigured | StripeSignatureInvalid>, NotFound | BadRequest>
] = [true, true, true, true, true]

const wireOf = (error: unknown) => {
  const envelope: Json = toHttpError(error)
  return [statusOf(envelope), envelope.code, envelope.detail, envelope.extra]
}

describe("errors of accounts, delegation, secrets, webhooks, workspaces, Stripe and skills on the wire", () => {
  it("finds the classes", () => {
    expect(typeLevel).toEqual([true, true, true, true, true])
    expect(errorClasses.map(([name]) => name)).toEqual(expect.arrayContaining([
      "SsoFailed", "InvalidCredentials", "LoginThrottled", "AccountResourceNotFound", "RoleForbidden", "AccountConflict", "AccountLimitReached", "AccountInvalidField",
      "SignatureRejected", "DelegationNotFound", "DelegationConflict", "DelegationInvalid", "DelegationForbidden",
      "SecretNameTaken", "InvalidFileName", "SkillRefused", "DeliveryNotRetryable", "SafetyBoundaryViolated", "FileTooLarge"
    ]))
    expect(errorClasses.length).toBe(23)
  })

  it("maps every class to the envelope of its declared status, with its declared code", async () => {
    for (const [name, schema] of errorClasses) {
      const samples = await samplesOf(schema)
      expect(samples.length, name).toBeGreaterThan(0)
      for (const sample of samples) {
        expect(isOnTheWire(sample), `${name} declares its httpStatus, code and wire body`).toBe(true)
        const declared = sample as OnTheWire
        const envelope: Json = toHttpError(sample)
        expect(statusOf(envelope), `${name} answers its declared status`).toBe(declared.httpStatus)
        expect(envelope.code, `${name} answers its declared code`).toBe(declared.code)
        const encoded = Schema.encodeUnknownSync(envelopeSchemaOf(envelope))(envelope) as Json
        expect(encoded.code, name).toBe(declared.code)
        if (declared.httpStatus === 422) expect(Array.isArray(envelope.extra.errors), `${name}: extra.errors[]`).toBe(true)
      }
    }
  })

  it("answers as the handlers did before the fold", async () => {
    expect(wireOf(new AccountErrors.LoginThrottled({ scope: "address", retryAfterSeconds: 30, limit: 5 }))).toEqual([
      429, "rate_limit_exceeded", "too many sign-in attempts from this address; retry after 30 s", { scope: "address", limit: 5, retry_after_seconds: 30 }
    ])
    expect(wireOf(new AccountErrors.AccountResourceNotFound({ what: "bug_report", id: "b1" }))).toEqual([404, "bug_report_not_found", "no bug report b1 visible to you", {}])
    expect(wireOf(new AccountErrors.AccountResourceNotFound({ what: "invitation", id: "t" }))[2]).toBe("no invitation with this token")
    expect(wireOf(new AccountErrors.RoleForbidden({ detail: "admins only", requiredRole: "admin" }))).toEqual([403, "forbidden", "admins only", { required_role: "admin" }])
    expect(wireOf(new AccountErrors.AccountConflict({ code: "last_admin", detail: "keep one admin" }))).toEqual([409, "last_admin", "keep one admin", {}])
    expect(wireOf(new AccountErrors.AccountLimitReached({ what: "tenants", limit: 3 }))).toEqual([409, "limit_exceeded", "the limit of 3 tenants is reached", { limit: 3 }])
    expect(wireOf(new AccountErrors.AccountInvalidField({ field: "role", detail: "give role" }))).toEqual([
      422, "validation_error", "give role", { errors: [{ loc: ["body", "role"], msg: "give role", type: "value_error" }] }
    ])
    expect(wireOf(new DelegationErrors.DelegationInvalid({ code: "validation_error", field: "scopes.0", detail: "unknown scope" }))).toEqual([
      422, "validation_error", "unknown scope", { errors: [{ loc: ["body", "scopes", 0], msg: "unknown scope", type: "value_error" }] }
    ])
    expect(wireOf(new DelegationErrors.DelegationInvalid({ code: "invalid_redirect_uri", field: "redirectUri", detail: "not registered" }))).toEqual([
      400, "invalid_redirect_uri", "not registered", { field: "redirectUri" }
    ])
    expect(wireOf(new DelegationErrors.DelegationNotFound({ what: "access_key", id: "k1" }))).toEqual([404, "access_key_not_found", "no access key k1 visible to you", {}])
    expect(wireOf(new DelegationErrors.SignatureRejected({ code: "signature_expired", detail: "stale" }))).toEqual([401, "signature_expired", "stale", {}])
    expect(wireOf(new SecretNameTaken({ name: "pw" }))).toEqual([
      409, "secret_name_taken", "this project already has a secret named pw; update it (PATCH) or delete it first", { name: "pw" }
    ])
    expect(wireOf(new SecretLimitReached({ limit: 100 }))).toEqual([409, "secret_limit_reached", "this project already has 100 secrets; delete one first", { limit: 100 }])
    expect(wireOf(new WebhookEndpointLimitReached({ limit: 10 }))).toEqual([
      409, "webhook_endpoint_limit_reached", "this project already has 10 webhook endpoints; delete one first", { limit: 10 }
    ])
    expect(wireOf(new StripeNotConfigured({ variable: "WA_STRIPE_WEBHOOK_SECRET" }))).toEqual([
      404, "not_found", "Stripe webhooks are not configured on this service (WA_STRIPE_WEBHOOK_SECRET)", {}
    ])
    expect(wireOf(new StripeSignatureInvalid({ reason: "no match" }))).toEqual([400, "bad_request", "the Stripe signature does not verify: no match", { param: "Stripe-Signature" }])
    expect(wireOf(new InvalidFileName({ name: "..", reason: "not a name" }))).toEqual([
      422, "validation_error", "invalid file name: not a name", { errors: [{ loc: ["path", "name"], msg: "not a name", type: "value_error" }] }
    ])
    expect(wireOf(new SkillRefused({ status: 422, code: "invalid_steps", detail: "bad step", extra: { step: 1 }, loc: ["steps"] }))).toEqual([
      422, "invalid_steps", "bad step", { step: 1, errors: [{ loc: ["body", "steps"], msg: "bad step", type: "value_error" }] }
    ])
    expect(wireOf(new SkillRefused({ status: 409, code: "skill_conflict", detail: "busy", extra: { a: 1 } }))).toEqual([409, "skill_conflict", "busy", { a: 1 }])
    const failure = await Effect.runPromise(Effect.flip(httpErrors(Effect.fail(new AccountErrors.SsoFailed({ detail: "provider said no" })))))
    expect(failure).toBeInstanceOf(Unauthorized)
    expect([failure.code, failure.detail]).toEqual(["sso_failed", "provider said no"])
  })
})
