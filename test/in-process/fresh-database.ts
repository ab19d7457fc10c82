/**
 * A database of the test file's own on the in-process tier's PostgreSQL (global-setup.ts), and a
 * data dir beside it; both are removed (connections and all) when the scope closes.
 */
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import pg from "pg"
import { inject } from "vitest"

const adminQuery = (url: string, statement: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  })

/** The URL of a fresh database named `wa_test_<prefix>_...`. */
export const freshDatabase = (prefix = "") =>
  Effect.gen(function*() {
    const admin = inject("inProcessPostgresUrl")
    const name = `wa_test_${prefix === "" ? "" : `${prefix}_`}${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    yield* Effect.acquireRelease(
      adminQuery(admin, `CREATE DATABASE ${name}`),
      () => adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const url = new URL(admin)
    url.pathname = `/${name}`
    return url.toString()
  })

/** A temporary data dir, removed with the scope. */
export const freshDataDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(path.join(tmpdir(), `${prefix}-`))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
