/**
 * Each domain error declares its code and HTTP status once, on its own class (issue 27 §1), and
 * one mapper (src/http/domain-errors.ts) turns it into the envelope of that status. Every error
 * class src/domain/errors.ts exports is walked, on samples of its fields (both conventions): the
 * envelope's status and code are the declared ones, its body is a valid envelope of that status,
 * and under /api/v1 (Convention B) a run's `done` shows as `succeeded`. A class that declares
 * nothing fails the walk (the mapper would pass it through as it is).
 */
import { describe, expect, it } from "vitest"
import { Arbitrary, Effect, Schema } from "effect"
import * as Errors from "../../src/domain/errors.ts"
import { type HttpErrorOf, httpErrors, isOnTheWire, toHttpError } from "../../src/http/domain-errors.ts"
import { Conflict, NotFound, PaymentRequired, statusOf, TooManyRequests, ValidationError } from "../../src/http/errors.ts"

type Json = any

/** The error classes the module exports (its schemas; the module exports no other values). */
const errorClasses = Object.entries(Errors).filter(([, value]) => Schema.isSchema(value)) as Array<[string, Schema.Codec<unknown>]>

const samplesOf = (schema: Schema.Codec<unknown>) => Effect.runPromise(Arbitrary.sampleEffect(Arbitrary.schema(schema), { count: 25, seed: 27 }))

/** The envelope classes by status, to check a mapped error's body against its status's schema. */
const envelopeSchemaOf = (error: unknown): Schema.Codec<unknown> => (error as { constructor: Schema.Codec<unknown> }).constructor

// The type an effect's error becomes is the envelope class of the declared status.
type Equals<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false
const typeLevel: [
  Equals<HttpErrorOf<Errors.RunNotFound>, NotFound>,
  Equals<HttpErrorOf<Errors.RunCapReached | Errors.SessionCapReached>, TooManyRequests>,
  Equals<HttpErrorOf<Errors.InsufficientCredits>, PaymentRequired>,
  Equals<HttpErrorOf<Errors.MissingFields | Errors.SessionClosed>, ValidationError | Conflict>,
  Equals<HttpErrorOf<Errors.SkillNotFound | NotFound>, NotFound>
] = [true, true, true, true, true]

describe("domain errors on the wire", () => {
  it("finds the error classes of src/domain/errors.ts", () => {
    expect(typeLevel).toEqual([true, true, true, true, true])
    expect(errorClasses.length).toBeGreaterThan(30)
    expect(errorClasses.map(([name]) => name)).toEqual(expect.arrayContaining(["RunNotFound", "RunCapReached", "InsufficientCredits", "SkillNotFound"]))
  })

  it("maps every class to the envelope of its declared status, with its declared code", async () => {
    for (const [name, schema] of errorClasses) {
      const samples = await samplesOf(schema)
      expect(samples.length, name).toBeGreaterThan(0)
      for (const sample of samples) {
        expect(isOnTheWire(sample), `${name} declares its httpStatus, code and wire body`).toBe(true)
        const declared = sample as Errors.OnTheWire
        for (const convention of ["A", "B"] as const) {
          const envelope: Json = toHttpError(sample, convention)
          expect(statusOf(envelope), `${name} (${convention}) answers its declared status`).toBe(declared.httpStatus)
          expect(envelope.code, `${name} (${convention}) answers its declared code`).toBe(declared.code)
          expect(typeof envelope.detail, name).toBe("string")
          // The body is one its status's envelope schema accepts (a 422's extra carries errors[]).
          const encoded = Schema.encodeUnknownSync(envelopeSchemaOf(envelope))(envelope) as Json
          expect(encoded.code, name).toBe(declared.code)
          if (declared.httpStatus === 422) expect(Array.isArray(envelope.extra.errors), `${name}: extra.errors[]`).toBe(true)
          if (convention === "B" && "status" in envelope.extra && typeof (sample as Json).status === "string") {
            expect(envelope.extra.status, `${name}: a run's done is succeeded under /api/v1`).not.toBe("done")
          }
        }
      }
    }
  })

  it("shows a run status in the convention of the route, in extra.status and in the detail", () => {
    const error = new Errors.ParentRunNotReady({ runId: "r1", status: "done", operation: "followup", needs: "done" })
    const a: Json = toHttpError(error, "A")
    const b: Json = toHttpError(error, "B")
    expect(a).toBeInstanceOf(Conflict)
    expect([a.code, a.extra]).toEqual(["conflict", { run_id: "r1", status: "done" }])
    expect(a.detail).toBe("the run is done; a follow-up needs a run that finished successfully (done)")
    expect(b.extra).toEqual({ run_id: "r1", status: "succeeded" })
    expect(b.detail).toBe("the run is succeeded; a follow-up needs a run that finished successfully (succeeded)")
  })

  it("keeps the codes that depend on the error's fields and the Retry-After hint of the run cap", () => {
    const skills: Json = toHttpError(new Errors.UnknownNames({ field: "skills", what: "skill", unknown: ["a"], allowed: [] }))
    expect([statusOf(skills), skills.code, skills.extra.names]).toEqual([422, "unknown_skills", ["a"]])
    const actions: Json = toHttpError(new Errors.UnknownNames({ field: "actions", what: "action", unknown: ["a"], allowed: ["b"] }))
    expect([statusOf(actions), actions.code, actions.extra]).toEqual([422, "validation_error", {
      errors: [{ loc: ["body", "actions"], msg: "unknown action a; valid actions: b", type: "enum" }]
    }])
    const part: Json = toHttpError(new Errors.MonitorPartNotFound({ what: "snapshot", id: "s1", monitorId: "m1" }))
    expect([statusOf(part), part.code, part.detail]).toEqual([404, "snapshot_not_found", "no snapshot s1 of monitor m1"])
    const cap: Json = toHttpError(new Errors.RunCapReached({ active: 3, limit: 3 }))
    expect([statusOf(cap), cap.code, cap.extra]).toEqual([429, "too_many_concurrent_runs", { limit: 3, active: 3, scope: "project", retry_after_seconds: 2 }])
  })

  it("passes through what declares nothing: an envelope, another error, a class without a declaration", async () => {
    class Undeclared extends Schema.TaggedError<Undeclared>()("Undeclared", { id: Schema.String }) {}
    const undeclared = new Undeclared({ id: "x" })
    expect(isOnTheWire(undeclared)).toBe(false)
    expect(toHttpError(undeclared)).toBe(undeclared)
    expect(statusOf(toHttpError(undeclared))).toBeUndefined()
    const envelope = new NotFound({ code: "not_found", detail: "no such thing", extra: {} })
    expect(toHttpError(envelope)).toBe(envelope)
    const failure = await Effect.runPromise(Effect.flip(httpErrors(Effect.fail(new Errors.SessionNotFound({ sessionId: "s9" })))))
    expect(failure).toBeInstanceOf(NotFound)
    expect([failure.code, failure.detail]).toEqual(["session_not_found", "no session s9 in this project"])
  })
})
