/**
 * The SDK's browser build (dist/client/browser.js, one ES module with effect inside): the
 * contract's schema modules import a few Node built-ins for server-side helpers that the client
 * never calls, so the browser build resolves them to a module whose functions throw if called.
 */
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { defineConfig, type Plugin } from "vite"

/** The names src/ imports from each `node:*` module, so the stand-in module can export them. */
const importedNodeNames = (): Map<string, Set<string>> => {
  const names = new Map<string, Set<string>>()
  const pattern = /import\s+(?:type\s+)?(?:\w+\s*,\s*)?(?:\{([^}]*)\}|\*\s+as\s+\w+|\w+)\s*from\s*"(node:[\w/]+)"/g
  const root = path.resolve(import.meta.dirname, "src")
  for (const file of readdirSync(root, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts")) continue
    for (const match of readFileSync(path.join(root, file), "utf8").matchAll(pattern)) {
      const set = names.get(match[2]!) ?? new Set<string>()
      for (const part of (match[1] ?? "").split(",")) {
        const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!.trim()
        if (/^\w+$/.test(name)) set.add(name)
      }
      names.set(match[2]!, set)
    }
  }
  return names
}

/** `node:*` as a module whose every export throws when called (the client never calls them). */
const nodeBuiltinsUnavailable = (): Plugin => {
  const names = importedNodeNames()
  return {
    name: "node-builtins-unavailable",
    enforce: "pre",
    resolveId: (id) => (id.startsWith("node:") ? `\0unavailable:${id}` : undefined),
    load: (id) => {
      if (!id.startsWith("\0unavailable:")) return undefined
      const module = id.slice("\0unavailable:".length)
      const exported = [...(names.get(module) ?? [])].filter((name) => name !== "default")
      return [
        `const unavailable = () => { throw new Error(${JSON.stringify(module)} + " is not available in a browser") }`,
        `const stub = new Proxy(unavailable, { get: () => unavailable })`,
        ...exported.map((name) => `export const ${name} = stub`),
        `export default stub`
      ].join("\n")
    }
  }
}

export default defineConfig({
  logLevel: "warn",
  plugins: [nodeBuiltinsUnavailable()],
  build: {
    outDir: "dist/client",
    emptyOutDir: false,
    minify: true,
    sourcemap: false,
    target: "es2022",
    rolldownOptions: {
      // Property reads of a stand-in namespace (path.join, ...) sit in server-only functions.
      onLog: (level, log, handler) => {
        if (log.code === "IMPORT_IS_UNDEFINED") return
        handler(level, log)
      }
    },
    lib: { entry: "src/client/index.ts", formats: ["es"], fileName: () => "browser.js" }
  }
})
