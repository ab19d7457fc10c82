/**
 * The query every cursor-paginated list takes: `limit` 1..100 (default 20) and an opaque `cursor`.
 * The cursor codec and the page builder are the server's (src/http/pagination.ts).
 */
import { Schema } from "effect"

export const PageQuery = {
  limit: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))),
  cursor: Schema.optional(Schema.String.check(Schema.isMaxCodePoints(200)))
}

/**
 * The page query of a list ordered by a name up to 255 characters (a workspace's files): its
 * cursor encodes that name, so it may be longer than an id's.
 */
export const NamePageQuery = {
  limit: PageQuery.limit,
  cursor: Schema.optional(Schema.String.check(Schema.isMaxCodePoints(2048)))
}

export const DEFAULT_LIMIT = 20
