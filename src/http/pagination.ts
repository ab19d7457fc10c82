/**
 * Cursor pagination shared by every list: `limit` 1..100 (default 20), an opaque `next_cursor`.
 * Lists are ordered newest first by id (ids sort by creation time), and the cursor is the last id
 * returned, so rows inserted while a client pages never shift or repeat what it reads.
 */
import { Effect } from "effect"
import { badRequest } from "./errors.ts"

// The query schema is the contract's (src/domain/pagination.ts).
import { DEFAULT_LIMIT } from "../domain/pagination.ts"
export { DEFAULT_LIMIT, PageQuery } from "../domain/pagination.ts"

/**
 * The one cursor codec: base64url of `{<key>: position}`, opaque to clients. Decoding checks the
 * position with `valid` (only what this server issues gets through: anything else would reach the
 * database as text, and a NUL in it is a 500 there); a cursor the server did not make is a 400
 * naming the parameter. Each list kind has its own key, so a cursor of one kind is refused by
 * another.
 */
export const cursorCodec = <A>(key: string, valid: (position: unknown) => position is A) => ({
  encode: (position: A): string => Buffer.from(JSON.stringify({ [key]: position })).toString("base64url"),
  decode: (cursor: string | undefined) =>
    Effect.suspend(() => {
      if (cursor === undefined) return Effect.succeed(undefined)
      try {
        const parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Record<string, unknown>
        if (typeof parsed === "object" && parsed !== null && valid(parsed[key])) return Effect.succeed(parsed[key] as A)
      } catch {
        // fall through
      }
      return Effect.fail(badRequest("cursor is not a cursor this server issued", { param: "cursor" }))
    })
})

/** Lists of resources by id: the cursor is the last id returned (a prefix, then 26 base32 characters). */
const idCursor = cursorCodec("a", (position): position is string => typeof position === "string" && /^[a-z]{1,8}_[0-9a-z]{26}$/.test(position))

export const encodeCursor = idCursor.encode

/** Decodes a cursor; a cursor the server did not make is a 400 naming the parameter. */
export const decodeCursor = idCursor.decode

/** Turns `limit + 1` rows into a page: the extra row only says there is more. */
export const toPage = <A extends { readonly id: string }>(rows: ReadonlyArray<A>, limit: number) => {
  const items = rows.slice(0, limit)
  const hasMore = rows.length > limit
  return {
    items,
    next_cursor: hasMore && items.length > 0 ? encodeCursor(items[items.length - 1]!.id) : null
  }
}

/** Lists ordered by a name (a workspace's files): the cursor is the last name returned (1..255 characters). */
export const nameCursor = cursorCodec("n", (position): position is string =>
  typeof position === "string" && position.length > 0 && [...position].length <= 255 && !position.includes("\u0000"))

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
