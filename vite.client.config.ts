/**
 * The SDK's browser build (dist/client/browser.js, one ES module with effect inside): the
 * contract's schema modules import a few Node built-ins for server-side helpers that the client
 * never calls, so the browser build resolves them to a module whose functions throw if called.
 * The contract's prose (OpenAPI descriptions) is left out of it: the document is the server's.
 * So are the checks only the server makes (a cron expression's and a time zone's validity, Track's
 * rule language): the bundle checks the shape of what it sends, the server its meaning.
 */
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import ts from "typescript"
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

/**
 * Domain modules whose checks are the server's, read in the browser build as the stand-ins of
 * src/client/browser/: whether a cron expression parses and fires and whether a time zone exists
 * (effect's Cron and DateTime with its time-zone code), and the language of Track's trigger and
 * stop-condition rules (its parser). The SDK checks a schedule's and a rule's shape with the same
 * schemas as the server; the server answers a bad expression, zone or rule with a 422
 * `validation_error`. The Node build (tsc) keeps the domain modules as they are.
 */
const serverChecks: Record<string, string> = {
  "src/domain/schedule-validity.ts": "src/client/browser/schedule-validity.ts",
  "src/domain/track-rules.ts": "src/client/browser/track-rules.ts"
}

const serverChecksLeftOut = (): Plugin => {
  const root = path.resolve(import.meta.dirname)
  const standIns = new Map(Object.entries(serverChecks).map(([from, to]) => [path.join(root, from), path.join(root, to)]))
  return {
    name: "server-checks-left-out",
    enforce: "pre",
    // src/ imports its own modules by relative path with the .ts extension.
    resolveId: (source, importer) =>
      importer === undefined || !source.startsWith(".") ? undefined : standIns.get(path.resolve(path.dirname(importer), source))
  }
}

/**
 * A string written in the source: a literal, a template, or a concatenation of those, in which
 * a named constant may take part ("..." + RULES_DOCUMENTATION). A lone name is not prose: a
 * field called `description` may hold a schema (`description: Schema.String`).
 */
const isProse = (node: ts.Expression, inConcatenation = false): boolean =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node) ||
  (inConcatenation && ts.isIdentifier(node)) ||
  (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken && isProse(node.left, true) && isProse(node.right, true) &&
    !(ts.isIdentifier(node.left) && ts.isIdentifier(node.right))) ||
  (ts.isParenthesizedExpression(node) && isProse(node.expression, inConcatenation))

/**
 * What only the OpenAPI document (built by the server) reads, left out: the contract's prose
 * as empty strings (`description: "..."` in object literals of schema and OpenAPI annotations and
 * error classes, `.annotate(OpenApi.Description, "...")`) and the JSON Schema callbacks of checks
 * (`toJsonSchema`). The schemas, their checks and their messages stay as they are.
 */
const openApiProseOmitted = (): Plugin => ({
  name: "openapi-prose-omitted",
  enforce: "pre",
  transform: (code, id) => {
    if (!/\/src\/(domain|http\/api|client)\/[^?]*\.ts$/.test(id)) return undefined
    const source = ts.createSourceFile(id, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
    const spans: Array<[number, number, string?]> = []
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
        node.name.text === "description" && isProse(node.initializer)) {
        spans.push([node.initializer.getStart(source), node.initializer.getEnd()])
        return
      }
      // A check's JSON Schema (toJsonSchema) is for the document too: with it go the modules that build one.
      if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === "toJsonSchema") {
        spans.push([node.initializer.getStart(source), node.initializer.getEnd(), "undefined"])
        return
      }
      if (ts.isCallExpression(node) && node.arguments.length === 2 && node.arguments[0]!.getText(source) === "OpenApi.Description" &&
        isProse(node.arguments[1]!)) {
        spans.push([node.arguments[1]!.getStart(source), node.arguments[1]!.getEnd()])
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
    if (spans.length === 0) return undefined
    let out = code
    for (const [start, end, by] of spans.sort((a, b) => b[0] - a[0])) out = out.slice(0, start) + (by ?? "\"\"") + out.slice(end)
    return { code: out, map: null }
  }
})

/**
 * The contract's modules declare: their top-level constants built by a call (schemas, `described(...)`)
 * and the classes that extend a call (endpoint groups, schema classes) have no effect beyond the
 * value. The bundler cannot know that of a call, so it keeps every one, reached or not; marked pure
 * here, those the SDK does not reach leave the bundle: the groups of Convention B and the
 * stand-alone routes, and the server's own models (stored rows of runs and monitors).
 */
const contractDeclarationsPure = (): Plugin => ({
  name: "contract-declarations-pure",
  enforce: "pre",
  transform: (code, id) => {
    if (!/\/src\/(domain|http\/api)\/[^?]*\.ts$/.test(id)) return undefined
    const source = ts.createSourceFile(id, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
    const calls: Array<ts.Expression> = []
    for (const statement of source.statements) {
      if (ts.isVariableStatement(statement) && (statement.declarationList.flags & ts.NodeFlags.Const) !== 0) {
        for (const declaration of statement.declarationList.declarations) {
          if (declaration.initializer !== undefined && ts.isCallExpression(declaration.initializer)) calls.push(declaration.initializer)
        }
      }
      if (ts.isClassDeclaration(statement)) {
        for (const clause of statement.heritageClauses ?? []) {
          for (const type of clause.types) if (ts.isCallExpression(type.expression)) calls.push(type.expression)
        }
      }
    }
    if (calls.length === 0) return undefined
    let out = code
    for (const call of calls.sort((a, b) => b.getStart(source) - a.getStart(source))) {
      const [start, end] = [call.getStart(source), call.getEnd()]
      // A pure-annotated arrow call: the annotation then covers the whole chain (`make(...).add(...)`).
      out = out.slice(0, start) + "(/*#__PURE__*/ (() => " + out.slice(start, end) + ")())" + out.slice(end)
    }
    return { code: out, map: null }
  }
})

export default defineConfig({
  logLevel: "warn",
  plugins: [nodeBuiltinsUnavailable(), serverChecksLeftOut(), openApiProseOmitted(), contractDeclarationsPure()],
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
