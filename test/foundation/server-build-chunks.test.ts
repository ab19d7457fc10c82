/**
 * A rebuild of the server bundle keeps the previous build's chunks (build/server.ts): a service
 * started from that build imports its chunks lazily, by their hashed names, after the swap.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { carryPreviousChunks } from "../../build/server.ts"

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A build folder with an entry, a migrations folder and the given chunks. */
const build = (root: string, name: string, chunks: Record<string, string>) => {
  const dir = path.join(root, name)
  mkdirSync(path.join(dir, "migrations"), { recursive: true })
  writeFileSync(path.join(dir, "main.js"), `// ${name}`)
  writeFileSync(path.join(dir, "migrations", "0001_init.js"), `// ${name}`)
  for (const [file, text] of Object.entries(chunks)) writeFileSync(path.join(dir, file), text)
  return dir
}

describe("a rebuild of the server bundle", () => {
  it("keeps the chunks the previous build made, and only those", () => {
    const root = mkdtempSync(path.join(tmpdir(), "wa-chunks-"))
    dirs.push(root)
    const first = build(root, "first", { "Router-AAAA.js": "first router", "Shared-SSSS.js": "shared" })
    expect(carryPreviousChunks(path.join(root, "none"), first)).toBe(0)

    const second = build(root, "second", { "Router-BBBB.js": "second router", "Shared-SSSS.js": "shared" })
    expect(carryPreviousChunks(first, second)).toBe(1)
    // A service started from the first build still finds its router chunk; the entry is the new one.
    expect(readFileSync(path.join(second, "Router-AAAA.js"), "utf8")).toBe("first router")
    expect(readFileSync(path.join(second, "main.js"), "utf8")).toBe("// second")

    // Two rebuilds later the first build's chunk is gone: only the previous build's own are kept.
    const third = build(root, "third", { "Router-CCCC.js": "third router", "Shared-SSSS.js": "shared" })
    expect(carryPreviousChunks(second, third)).toBe(1)
    expect(existsSync(path.join(third, "Router-BBBB.js"))).toBe(true)
    expect(existsSync(path.join(third, "Router-AAAA.js"))).toBe(false)
  })
})
