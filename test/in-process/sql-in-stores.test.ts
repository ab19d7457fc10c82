/**
 * One persistence convention (issue 26 §2): SQL is written only in stores. A module of src/ that
 * writes a statement (a `sql` template, `sql<Row>`, `sql.unsafe`) is a store: it lives in
 * src/store/ or src/billing/store/, is a migration, or is named `store.ts` or `*-store.ts` beside its service
 * (Track's monitor-store.ts). Services, entities, executors and handlers ask a store. And a store
 * reads rows one way: decoded through a Schema (src/domain/rows.ts), never asserted with a type
 * argument (`sql<{ n: number }>`); a row read as `Record<string, unknown>` is decoded after.
 */
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const root = path.resolve(import.meta.dirname, "../../src")

const modules = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return modules(full)
    return entry.name.endsWith(".ts") ? [full] : []
  })

const isStore = (file: string) => {
  const relative = path.relative(root, file).split(path.sep).join("/")
  return relative.startsWith("store/") || relative.startsWith("billing/store/") || /(^|\/)([a-z-]*-)?store\.ts$/.test(relative)
}

/** A statement: a tagged template or a typed one on the SQL client, or its raw form. */
const statement = /\bsql(<[^>]*>)?`|\bsql\.unsafe\(/

describe("SQL lives in stores", () => {
  it("no module outside a store writes a statement", () => {
    const offenders = modules(root).filter((file) => !isStore(file) && statement.test(readFileSync(file, "utf8")))
    expect(offenders.map((file) => path.relative(root, file))).toEqual([])
  })

  it("no store asserts the type of the rows it reads", () => {
    const asserted = /\bsql<(?!Record<string, unknown>>)[^`]*>`/g
    const offenders = modules(root).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(asserted)].map((match) => `${path.relative(root, file)}: ${match[0].slice(0, 80)}`)
    )
    expect(offenders).toEqual([])
    expect("yield* sql<{ n: number }>`SELECT 1 AS n`".match(asserted)).not.toBeNull()
    expect("yield* sql<Record<string, unknown>>`SELECT * FROM runs`".match(asserted)).toBeNull()
  })

  it("the check sees a statement where there is one", () => {
    expect(statement.test("const rows = yield* sql<{ id: string }>`SELECT id FROM runs`")).toBe(true)
    expect(statement.test("yield* sql`UPDATE sessions SET status = 'closed'`")).toBe(true)
    expect(statement.test("const sql = yield* SqlClient.SqlClient")).toBe(false)
    expect(modules(root).filter(isStore).length).toBeGreaterThan(20)
  })
})
