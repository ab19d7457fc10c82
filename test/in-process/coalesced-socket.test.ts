/**
 * The SQL client's sockets (src/store/coalesced-socket.ts): the endpoint read from the database
 * URL, writes of one event-loop turn leaving as one, and the service's SQL client answering many
 * concurrent statements correctly over them on a real PostgreSQL.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import * as Net from "node:net"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, inject, it } from "vitest"
import { connectCoalesced, type DatabaseEndpoint, databaseEndpoint } from "../../src/store/coalesced-socket.ts"
import { DatabaseInfo, sqlClientLayer } from "../../src/store/database.ts"

describe("databaseEndpoint", () => {
  it("is the embedded server's Unix socket when it has one", () => {
    expect(databaseEndpoint("postgres://wa@127.0.0.1:5555/wa", "/data/postgres/.s.PGSQL.5555")).toEqual({ path: "/data/postgres/.s.PGSQL.5555" })
  })

  it("is the URL's host and port, 5432 when the URL names none", () => {
    expect(databaseEndpoint("postgres://u:p@db.internal:6543/app?sslmode=require", undefined)).toEqual({ host: "db.internal", port: 6543 })
    expect(databaseEndpoint("postgresql://u@127.0.0.1/app", undefined)).toEqual({ host: "127.0.0.1", port: 5432 })
    expect(databaseEndpoint("postgres://u@[::1]:7000/app", undefined)).toEqual({ host: "::1", port: 7000 })
  })

  it("is left to the client when the URL does not say it alone", () => {
    expect(databaseEndpoint("postgres://u@/app?host=/var/run/postgresql", undefined)).toBeUndefined()
    expect(databaseEndpoint("postgres://u@127.0.0.1/app?port=6000", undefined)).toBeUndefined()
    expect(databaseEndpoint("not a url", undefined)).toBeUndefined()
  })
})

/** A loopback server that collects what it receives, and a coalesced connection to it. */
const connectToCollector = async (listen: (server: Net.Server) => Promise<DatabaseEndpoint>) => {
  let received = ""
  const server = Net.createServer((socket) => socket.on("data", (chunk) => (received += chunk)))
  const endpoint = await listen(server)
  const socket = connectCoalesced(endpoint)
  await new Promise<void>((resolve) => socket.once("connect", resolve))
  // What the stream layer hands to the kernel: one call per write that leaves the process.
  const internals = socket as unknown as { _write: (...args: Array<unknown>) => void; _writev: (chunks: Array<unknown>, cb: unknown) => void }
  const calls: Array<number> = []
  const write = internals._write.bind(socket)
  const writev = internals._writev.bind(socket)
  internals._write = (...args) => (calls.push(1), write(...args))
  internals._writev = (chunks, cb) => (calls.push(chunks.length), writev(chunks, cb))
  const close = () => new Promise<void>((resolve) => (socket.destroy(), server.close(() => resolve())))
  return { socket, calls, received: () => received, close }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe.each([
  ["TCP", (server: Net.Server) =>
    new Promise<DatabaseEndpoint>((resolve) => server.listen(0, "127.0.0.1", () => resolve({ host: "127.0.0.1", port: (server.address() as Net.AddressInfo).port })))],
  ["a Unix socket", (server: Net.Server) => {
    const dir = mkdtempSync(path.join(tmpdir(), "wa-sock-"))
    server.once("close", () => rmSync(dir, { recursive: true, force: true }))
    const socketPath = path.join(dir, ".s.PGSQL.1")
    return new Promise<DatabaseEndpoint>((resolve) => server.listen(socketPath, () => resolve({ path: socketPath })))
  }]
] as const)("coalesced writes over %s", (_name, listen) => {
  it("writes of one event-loop turn leave as one write, in order; a later turn's write leaves on its own", async () => {
    const peer = await connectToCollector(listen)
    try {
      peer.socket.write("Parse;")
      peer.socket.write("Bind;")
      peer.socket.write("Sync;")
      expect(peer.calls).toEqual([]) // held until the turn ends
      await nextTurn()
      expect(peer.calls).toEqual([3])
      peer.socket.write("Query;")
      await nextTurn()
      expect(peer.calls).toEqual([3, 1])
      await expect.poll(peer.received).toBe("Parse;Bind;Sync;Query;")
    } finally {
      await peer.close()
    }
  })
})

const Database = Layer.effect(
  DatabaseInfo,
  Effect.sync(() => DatabaseInfo.of({ embedded: false, url: Redacted.make(inject("inProcessPostgresUrl")), socketPath: undefined }))
)

layer(sqlClientLayer.pipe(Layer.provide(Database)))("the SQL client over coalesced sockets", (it) => {
  it.effect("answers 300 concurrent statements, each with its own result", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const answers = yield* Effect.forEach(
        Array.from({ length: 300 }, (_, i) => i),
        (i) => sql<{ n: number; label: string }>`SELECT ${i}::int AS n, ${`row-${i}`}::text AS label`.pipe(Effect.map((rows) => rows[0])),
        { concurrency: "unbounded" }
      )
      expect(answers).toEqual(Array.from({ length: 300 }, (_, i) => ({ n: i, label: `row-${i}` })))
    }))
})
