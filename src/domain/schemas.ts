/** Schema helpers shared by every layer: bounded strings, nullable fields, timestamps, callback URLs. */
import { Effect, Schema } from "effect"
import { CALLBACK_URL_MAX_LENGTH, callbackUrlFormProblem } from "./callback-url.ts"

export const MaxString = (max: number) => Schema.String.check(Schema.isMaxCodePoints(max))

/**
 * A field that may be omitted and then takes `value`: the one value is both what decoding fills
 * in and the `default` the OpenAPI document shows.
 */
export const WithDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  Schema.withDecodingDefaultKey<S>(Effect.succeed(value))(schema.annotate({ default: value }) as S)

/** An optional field that also accepts null (the spec's "string or null"). */
export const OptionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** Timestamps on the wire: RFC 3339 strings. */
export const Timestamp = Schema.String.annotate({ format: "date-time" })

/**
 * A `callback_url`: an absolute http(s) URL with a host, at most 2083 characters, no credentials.
 * The address is checked when the request arrives (`validateCallbackUrl`, it needs DNS and the config).
 */
export const CallbackUrl = MaxString(CALLBACK_URL_MAX_LENGTH).check(
  Schema.makeFilter((url: string) => callbackUrlFormProblem(url) ?? true, {
    expected: "an absolute http or https URL",
    toJsonSchema: () => [{ pattern: "^[hH][tT][tT][pP][sS]?://" }, true]
  })
).annotate({ format: "uri" })
