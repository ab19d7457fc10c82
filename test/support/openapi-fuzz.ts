/**
 * Helpers for the suites that walk the service's own OpenAPI document (test/security): the
 * operations of the document, plausible values for their schemas, the body fields to mutate, and a
 * raw HTTP client that sends a path exactly as given (fetch would normalise dot segments and
 * re-encode what the fuzzer means to send malformed).
 */
import * as http from "node:http"
import { checkExchange, type Exemption } from "./contract-hook.ts"

export type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }
// The document is JSON of the OpenAPI 3.1 shape; the walkers read it loosely.
export type SchemaObject = Record<string, any>

export interface Parameter {
  readonly name: string
  readonly in: "path" | "query" | "header" | "cookie"
  readonly required: boolean
  readonly schema: SchemaObject
}

export interface Operation {
  readonly method: string
  /** The path template of the document, e.g. `/v1/projects/{pid}/api_keys/{key_id}`. */
  readonly path: string
  readonly operationId: string
  readonly parameters: ReadonlyArray<Parameter>
  readonly body: SchemaObject | undefined
  readonly secured: boolean
}

const methods = ["get", "put", "post", "delete", "patch", "head", "options"]

/** Every path × method of the document. */
export const operationsOf = (doc: SchemaObject): Array<Operation> => {
  const out: Array<Operation> = []
  for (const [path, item] of Object.entries<SchemaObject>(doc["paths"] ?? {})) {
    for (const method of methods) {
      const op = item[method]
      if (op === undefined) continue
      const parameters = [...(item["parameters"] ?? []), ...(op["parameters"] ?? [])].map((p: SchemaObject) => {
        const param = resolve(doc, p)
        return { name: param["name"], in: param["in"], required: param["required"] === true, schema: resolve(doc, param["schema"] ?? {}) }
      })
      const content = resolve(doc, op["requestBody"] ?? {})["content"] ?? {}
      const json = content["application/json"]?.["schema"]
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: op["operationId"] ?? `${method} ${path}`,
        parameters,
        body: json === undefined ? undefined : resolve(doc, json),
        secured: Array.isArray(op["security"] ?? doc["security"]) && (op["security"] ?? doc["security"]).length > 0
      })
    }
  }
  return out
}

/** Follows `$ref`s (local ones, `#/components/...`). */
export const resolve = (doc: SchemaObject, schema: SchemaObject): SchemaObject => {
  let current = schema
  for (let i = 0; i < 32 && typeof current?.["$ref"] === "string"; i++) {
    const ref = current["$ref"] as string
    current = ref.replace(/^#\//, "").split("/").reduce<any>((node, key) => node?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], doc)
  }
  return current ?? {}
}

const isNullSchema = (s: SchemaObject) => s["type"] === "null" || (Array.isArray(s["enum"]) && s["enum"].length === 1 && s["enum"][0] === null)

/** The alternatives of a schema (`anyOf`/`oneOf`), without the `null` ones, each with its `allOf` merged in. */
export const branches = (doc: SchemaObject, schema: SchemaObject): Array<SchemaObject> => {
  const s = resolve(doc, schema)
  const alternatives = s["anyOf"] ?? s["oneOf"]
  if (Array.isArray(alternatives)) {
    return alternatives.flatMap((alt: SchemaObject) => branches(doc, { ...withoutKeys(s, ["anyOf", "oneOf"]), ...resolve(doc, alt) }))
  }
  if (isNullSchema(s)) return []
  if (Array.isArray(s["allOf"])) {
    return [s["allOf"].reduce((merged: SchemaObject, part: SchemaObject) => ({ ...merged, ...resolve(doc, part) }), withoutKeys(s, ["allOf"]))]
  }
  return [s]
}

const withoutKeys = (s: SchemaObject, keys: Array<string>) => Object.fromEntries(Object.entries(s).filter(([k]) => !keys.includes(k)))

/** The first non-null alternative of a schema. */
export const mainBranch = (doc: SchemaObject, schema: SchemaObject): SchemaObject => branches(doc, schema)[0] ?? {}

export type JsonType = "null" | "boolean" | "integer" | "number" | "string" | "array" | "object"

/** The JSON types a schema accepts, or "any" when it does not say (`{}`, Schema.Unknown). */
export const acceptedTypes = (doc: SchemaObject, schema: SchemaObject): Set<JsonType> | "any" => {
  const s = resolve(doc, schema)
  const types = new Set<JsonType>()
  const alternatives = s["anyOf"] ?? s["oneOf"]
  if (Array.isArray(alternatives)) {
    for (const alt of alternatives) {
      const inner = acceptedTypes(doc, alt)
      if (inner === "any") return "any"
      inner.forEach((t) => types.add(t))
    }
    return types
  }
  const declared = s["type"]
  if (declared === undefined) {
    if (Array.isArray(s["enum"])) {
      for (const value of s["enum"]) types.add(jsonTypeOf(value as Json))
      return types
    }
    if (s["properties"] !== undefined) return new Set(["object"])
    return "any"
  }
  for (const t of Array.isArray(declared) ? declared : [declared]) types.add(t)
  if (types.has("number")) types.add("integer")
  return types
}

export const jsonTypeOf = (value: Json): JsonType =>
  value === null ? "null"
    : Array.isArray(value) ? "array"
    : typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number")
    : typeof value as "boolean" | "string" | "object"

/** A plausible value: required properties only, the smallest allowed sizes, booleans false. */
export const sample = (doc: SchemaObject, schema: SchemaObject, name = ""): Json => {
  const s = mainBranch(doc, schema)
  if (s["const"] !== undefined) return s["const"] as Json
  if (Array.isArray(s["enum"]) && s["enum"].length > 0) return s["enum"][0] as Json
  const type = Array.isArray(s["type"]) ? s["type"].find((t: string) => t !== "null") : s["type"]
  switch (type ?? (s["properties"] !== undefined ? "object" : undefined)) {
    case "string": {
      if (s["format"] === "uri") return "https://example.com/fuzz"
      if (s["format"] === "date-time") return "2024-01-01T00:00:00Z"
      const base = name === "expires" ? String(Math.floor(Date.now() / 1000) + 600) : "fuzz"
      const min = typeof s["minLength"] === "number" ? s["minLength"] : 0
      return base.length >= min ? base : base.padEnd(min, "z")
    }
    case "integer":
    case "number":
      return typeof s["minimum"] === "number" ? Math.max(s["minimum"], 1) : 1
    case "boolean":
      return false
    case "array": {
      const min = typeof s["minItems"] === "number" ? s["minItems"] : 0
      return Array.from({ length: min }, () => sample(doc, s["items"] ?? {}, name))
    }
    case "object": {
      const out: Record<string, Json> = {}
      const required: Array<string> = s["required"] ?? []
      for (const [key, prop] of Object.entries<SchemaObject>(s["properties"] ?? {})) {
        if (required.includes(key)) out[key] = sample(doc, prop, key)
      }
      return out
    }
    default:
      return "fuzz"
  }
}

export interface Field {
  /** Where the field is in the body: property names and array index 0. */
  readonly path: ReadonlyArray<string | number>
  readonly schema: SchemaObject
  readonly required: boolean
}

/** The body's fields, depth first: each property, the items of arrays, nested object properties. */
export const fieldsOf = (doc: SchemaObject, schema: SchemaObject, prefix: ReadonlyArray<string | number> = [], depth = 0): Array<Field> => {
  if (depth > 4) return []
  const s = mainBranch(doc, schema)
  const out: Array<Field> = []
  const required: Array<string> = s["required"] ?? []
  for (const [key, prop] of Object.entries<SchemaObject>(s["properties"] ?? {})) {
    const path = [...prefix, key]
    out.push({ path, schema: prop, required: required.includes(key) })
    out.push(...nested(doc, prop, path, depth))
  }
  return out
}

const nested = (doc: SchemaObject, schema: SchemaObject, path: ReadonlyArray<string | number>, depth: number): Array<Field> => {
  const s = mainBranch(doc, schema)
  if (s["properties"] !== undefined) return fieldsOf(doc, s, path, depth + 1)
  if (s["type"] === "array" && s["items"] !== undefined) {
    const itemPath = [...path, 0]
    return [{ path: itemPath, schema: s["items"], required: false }, ...nested(doc, s["items"], itemPath, depth + 1)]
  }
  return []
}

/** A marker string that `renderWith` replaces by raw JSON text. */
export const MARKER = "\u0001__fuzz_marker__\u0001"

/**
 * `base` with the value at `path` set to `value` (missing containers are created from `schema`
 * samples), serialised. When `value` is MARKER, the caller replaces it by raw text afterwards.
 */
export const setAt = (doc: SchemaObject, rootSchema: SchemaObject, base: Json, path: ReadonlyArray<string | number>, value: Json | typeof REMOVE): Json => {
  const root = structuredClone(base)
  let node: any = root
  let schema = mainBranch(doc, rootSchema)
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i]!
    const childSchema = typeof key === "number" ? schema["items"] ?? {} : schema["properties"]?.[key] ?? {}
    const nextKey = path[i + 1]!
    if (node[key] === undefined || node[key] === null || typeof node[key] !== "object") {
      node[key] = typeof nextKey === "number" ? [] : sample(doc, childSchema, String(key))
      if (node[key] === null || typeof node[key] !== "object") node[key] = typeof nextKey === "number" ? [] : {}
    }
    if (typeof nextKey === "number" && node[key].length === 0) node[key].push(sample(doc, mainBranch(doc, childSchema)["items"] ?? {}))
    node = node[key]
    schema = mainBranch(doc, childSchema)
  }
  const last = path[path.length - 1]!
  if (value === REMOVE) {
    if (Array.isArray(node)) node.splice(last as number, 1)
    else delete node[last]
  } else {
    node[last] = value
  }
  return root
}

export const REMOVE: unique symbol = Symbol("remove")

/** Serialises `value`, replacing the quoted MARKER by `raw` (raw JSON text). */
export const renderWith = (value: Json, raw?: string): string => {
  const text = JSON.stringify(value)
  if (raw === undefined) return text
  const quoted = JSON.stringify(MARKER)
  const at = text.indexOf(quoted)
  return at < 0 ? text : text.slice(0, at) + raw + text.slice(at + quoted.length)
}

export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  readonly json: unknown
}

export interface RawRequest {
  readonly method: string
  /** Sent as is: the caller percent-encodes (or deliberately mis-encodes) it. */
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
  readonly timeoutMs?: number
  /** A named exemption from the contract hook (contract-hook.ts EXEMPTIONS); checked otherwise. */
  readonly exempt?: Exemption
}

/**
 * One request over node:http with the path exactly as given. Rejects on network errors and
 * timeouts. The response is held to the service's OpenAPI document by the contract hook
 * (checkExchange; a mismatch rejects), unless the request names an exemption.
 */
export const rawRequest = (baseUrl: string, agent: http.Agent, request: RawRequest): Promise<RawResponse> =>
  new Promise((resolveOuter, rejectOuter) => {
    let deadline: NodeJS.Timeout | undefined
    const resolvePromise = (response: RawResponse) => {
      clearTimeout(deadline)
      resolveOuter(response)
    }
    const reject = (error: unknown) => {
      clearTimeout(deadline)
      rejectOuter(error)
    }
    const url = new URL(baseUrl)
    const timeoutMs = request.timeoutMs ?? 20_000
    const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, "utf8")
    const headers: Record<string, string> = { ...request.headers }
    if (body !== undefined) headers["content-length"] = String(body.length)
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method: request.method,
      path: request.path,
      headers,
      agent
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("error", reject)
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          json = undefined
        }
        const headerList = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue
          for (const one of Array.isArray(value) ? value : [value]) headerList.append(name, one)
        }
        const response = { status: res.statusCode ?? 0, headers: res.headers, text, json }
        checkExchange(baseUrl, { method: request.method, pathname: request.path, status: response.status, headers: headerList, text }, request.exempt)
          .then(() => resolvePromise(response), reject)
      })
    })
    // An absolute deadline: a stream that keeps sending heartbeats never goes idle.
    deadline = setTimeout(() => req.destroy(new Error(`no complete response within ${timeoutMs} ms`)), timeoutMs)
    req.on("error", reject)
    req.end(body)
  })

/** The error envelope of the contract: exactly `{code: string, detail: string, extra: object}`. */
export const isEnvelope = (json: unknown): boolean => {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return false
  const record = json as Record<string, unknown>
  const keys = Object.keys(record).sort()
  return keys.length === 3 && keys[0] === "code" && keys[1] === "detail" && keys[2] === "extra" &&
    typeof record["code"] === "string" && typeof record["detail"] === "string" &&
    typeof record["extra"] === "object" && record["extra"] !== null && !Array.isArray(record["extra"])
}

/** Runs `tasks` with at most `limit` in flight. */
export const runBounded = async <A>(limit: number, tasks: ReadonlyArray<() => Promise<A>>): Promise<Array<A>> => {
  const results = new Array<A>(tasks.length)
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++
      results[index] = await tasks[index]!()
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker))
  return results
}

/** A plausible id of the right prefix that no row has (the service's ids: prefix + 26 base32 chars). */
export const plausibleId = (name: string): string => {
  const prefix = name === "pid" ? "proj" : name === "sid" ? "sess" : name === "rid" ? "run" : name === "key_id" ? "key" : name === "aid" ? "art" : name === "id" ? "run" : "x"
  return `${prefix}_0000000000zzzzzzzzzzzzzzzz`
}

/** Fills a path template: `values[name]` for each `{name}` (already encoded). */
export const fillPath = (template: string, values: Record<string, string>): string =>
  template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? encodeURIComponent(plausibleId(name)))
