/** Schema helpers shared by the contract: bounded strings, nullable fields, timestamps. */
import { Schema } from "effect"

export const MaxString = (max: number) => Schema.String.check(Schema.isMaxLength(max))

/** An optional field that also accepts null (the spec's "string or null"). */
export const OptionalNullable = <S extends Schema.Top>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** Timestamps on the wire: RFC 3339 strings. */
export const Timestamp = Schema.String.annotate({ format: "date-time" })

export const ProjectIdParam = { pid: Schema.String.check(Schema.isMaxLength(64)) }
