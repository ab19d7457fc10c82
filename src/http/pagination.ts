/**
 * Cursor pagination shared by every list: `limit` 1..100 (default 20), an opaque `next_cursor`.
 * Lists are ordered newest first by id (ids sort by creation time), and the cursor is the last id
 * returned, so rows inserted while a client pages never shift or repeat what it reads.
 */
import { Effect, Schema } from "effect"
import { badRequest } from "./errors.ts"

export const PageQuery = {
  limit: Schema.optional(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))),
  cursor: Schema.optional(Schema.String.check(Schema.isMaxCodePoints(200)))
}

export const DEFAULT_LIMIT = 20

const cursorIdPattern = /^[a-z]{1,8}_[0-9a-z]{26}$/

export const encodeCursor = (lastId: string): string => Buffer.from(JSON.stringify({ a: lastId })).toString("base64url")

/** Decodes a cursor; a cursor the server did not make is a 400 naming the parameter. */
export const decodeCursor = (cursor: string | undefined) =>
  Effect.suspend(() => {
    if (cursor === undefined) return Effect.succeed(undefined)
    try {
      const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { a?: unknown }
      // Only an id of ours (prefix, then 26 base32 characters) is a cursor; anything else would
      // reach the database as text (a NUL in it is a 500 there).
      if (typeof parsed.a === "string" && cursorIdPattern.test(parsed.a)) return Effect.succeed(parsed.a)
    } catch {
      // fall through
    }
    return Effect.fail(badRequest("cursor is not a cursor this server issued", { param: "cursor" }))
  })

/** Turns `limit + 1` rows into a page: the extra row only says there is more. */
export const toPage = <A extends { readonly id: string }>(rows: ReadonlyArray<A>, limit: number) => {
  const items = rows.slice(0, limit)
  const hasMore = rows.length > limit
  return {
    items,
    next_cursor: hasMore && items.length > 0 ? encodeCursor(items[items.length - 1]!.id) : null
  }
}

/**
 * A cursor page of a list: decodes the cursor (400 when it is not ours), loads `limit + 1` rows
 * newest first before it, and renders the page's items.
 */
export const cursorPage = <A extends { readonly id: string }, B, E, R>(
  query: { readonly limit?: number | undefined; readonly cursor?: string | undefined },
  load: (limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<A>, E, R>,
  view: (item: A) => B
) =>
  Effect.gen(function*() {
    const limit = query.limit ?? DEFAULT_LIMIT
    const beforeId = yield* decodeCursor(query.cursor)
    const page = toPage(yield* load(limit + 1, beforeId), limit)
    return { items: page.items.map(view), next_cursor: page.next_cursor }
  })
