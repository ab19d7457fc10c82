/**
 * The error envelope on the server side: the envelope classes are the contract's
 * (src/domain/api-errors.ts, re-exported here for the handlers), plus the responses built outside
 * HttpApi (router-level and pre-routing refusals).
 */
import { HttpServerResponse } from "effect/http"

export * from "../domain/api-errors.ts"

/** A JSON response built outside HttpApi (router-level and pre-routing refusals). */
export const jsonResponse = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers })

export const envelopeBody = (code: string, detail: string, extra: Record<string, unknown> = {}) => ({ code, detail, extra })
