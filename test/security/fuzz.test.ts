/**
 * Fuzzes every operation of the service's own OpenAPI document (every path × method) with
 * malformed and hostile input derived from the document: NUL bytes and lone surrogates in path,
 * query and JSON strings, 1 MB strings, JSON nested 10,000 deep, bad cursors, limits and status
 * filters, wrong types, missing and unknown fields, a ~3 MB body, malformed JSON and
 * percent-encoding, odd ids. Whatever the input, the service answers below 500, every non-2xx
 * body is the `{code, detail, extra}` envelope, and the service is still up afterwards.
 *
 * Path parameters: the real project id (with the bootstrap key) so requests reach the handlers,
 * plausible ids no row has, and hostile ids. The service runs without a model, without a usable
 * browser and with an unreachable search engine, so a hostile variation that happens to be a
 * valid create ends at once instead of starting work.
 */
import { writeFileSync } from "node:fs"
import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  acceptedTypes,
  fieldsOf,
  fillPath,
  isEnvelope,
  type Json,
  type JsonType,
  mainBranch,
  MARKER,
  type Operation,
  operationsOf,
  plausibleId,
  rawRequest,
  REMOVE,
  renderWith,
  runBounded,
  sample,
  type SchemaObject,
  setAt
} from "../support/openapi-fuzz.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"

const CONCURRENCY = 8
const MB = "x".repeat(1024 * 1024)
const DEEP = 10_000
const deepObject = '{"a":'.repeat(DEEP) + "1" + "}".repeat(DEEP)
const deepArray = "[".repeat(DEEP) + "]".repeat(DEEP)

let service: Service
let doc: SchemaObject
const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })

beforeAll(async () => {
  // No model from the developer's shell: an accidentally valid run fails at once (model_not_configured).
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CHROMIUM_PATH"]) delete process.env[name]
  service = await startService({
    env: {
      WA_RATE_LIMIT_REQUESTS: "1000000",
      // The auth cases below send hundreds of missing or wrong keys from one address; a limiter
      // answering 429 to the address would keep every later case from reaching the handlers.
      WA_AUTH_FAILURES_PER_MINUTE: "1000000",
      WA_MAX_CONCURRENT_SESSIONS: "100000",
      // No browser: a session that slips through fails to get one instead of starting Chromium.
      CHROMIUM_PATH: "/nonexistent/fuzz-no-browser",
      // WebSearch engines point at a closed port; a valid search fails fast.
      WA_DUCKDUCKGO_BASE_URL: "http://127.0.0.1:9",
      WA_SEARCH_ENGINE_TIMEOUT_MS: "1000",
      WA_WEB_SEARCH_WAIT_SECONDS: "2",
      // Runs that slipped through fail at once; the stop need not wait for them.
      WA_DRAIN_SECONDS: "2"
    }
  })
  doc = (await service.request("GET", "/openapi.json", { key: null })).json
})
afterAll(async () => {
  agent.destroy()
  await stopAndClean(service)
})

interface Case {
  readonly op: Operation
  /** Kind of input, for dedupe and the report, e.g. `body:instructions:nul` or `path.rid:nul`. */
  readonly kind: string
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
}

interface Outcome {
  readonly testCase: Case
  readonly requestId: string
  readonly status?: number
  readonly text?: string
  readonly json?: unknown
  readonly error?: string
}

// ---------------------------------------------------------------------------------------------
// Hostile values

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64url")

/** Path segment values (already encoded as they go on the wire) and their kind. */
const hostileSegments: ReadonlyArray<readonly [string, string]> = [
  ["nul", "x%00y"],
  ["nul-only", "%00"],
  ["lone-surrogate", "x%ED%A0%80y"],
  ["bad-percent", "%E0%A4%A"],
  ["bad-percent-short", "%"],
  ["bad-percent-hex", "%zz"],
  ["overlong-utf8", "%C0%AF"],
  ["invalid-utf8", "%FF%FE"],
  ["encoded-slash", "a%2Fb"],
  ["dot-dot", ".."],
  ["encoded-dot-dot", "%2e%2e"],
  ["sql", encodeURIComponent("x' OR '1'='1")],
  ["html", encodeURIComponent("<script>alert(1)</script>")],
  ["spaces", "a%20b%09c"],
  ["unicode", encodeURIComponent("ünï©ødé😀")],
  ["too-long-65", "r".repeat(65)],
  ["long-8k", "r".repeat(8 * 1024)],
  ["prefix-only", "run_"],
  ["crlf", "a%0D%0Ab"]
]

const hostileQueryValues: ReadonlyArray<readonly [string, string]> = [
  ["nul", "x%00y"],
  ["lone-surrogate", "x%ED%A0%80y"],
  ["bad-percent", "%E0%A4%A"],
  ["bad-percent-short", "%"],
  ["empty", ""],
  ["long-8k", "q".repeat(8 * 1024)],
  ["unicode", encodeURIComponent("ünï😀")]
]

const badCursors: ReadonlyArray<readonly [string, string]> = [
  ["bang", "!!!"],
  ["garbage-b64", b64("garbage \u0001\u0002 not json")],
  ["binary-b64", Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString("base64url")],
  ["wrong-shape-number", b64("{\"a\":1}")],
  ["wrong-shape-key", b64("{\"b\":\"run_x\"}")],
  ["wrong-shape-array", b64("[]")],
  ["wrong-shape-null", b64("null")],
  ["wrong-shape-string", b64("\"run_x\"")],
  ["truncated-json", b64("{\"a\":")],
  ["nul-in-id", b64("{\"a\":\"run_\\u0000x\"}")],
  ["lone-surrogate-in-id", b64("{\"a\":\"run_\\ud800x\"}")],
  ["long-id", b64(JSON.stringify({ a: "r".repeat(140) }))],
  ["proto", b64("{\"__proto__\":{\"a\":\"x\"}}")],
  ["too-long", "c".repeat(201)],
  ["plain-id", "run_0000000000zzzzzzzzzzzzzzzz"]
]

const badLimits = ["0", "-1", "101", "1e999", "abc", "1.5", "", "NaN", "Infinity", "-0", "0x10", "9".repeat(400), "1%00"]
const badStatuses = ["bogus", "", "x%00y", "x%ED%A0%80y", "s".repeat(33), "s".repeat(4096), "running%27--", "RUNNING", "running,idle"]

/** A value of each JSON type, to send where the schema wants another. */
const typedValues: ReadonlyArray<readonly [JsonType, string, Json]> = [
  ["null", "null", null],
  ["boolean", "true", true],
  ["integer", "zero", 0],
  ["integer", "minus-one", -1],
  ["number", "fraction", 1.5],
  ["string", "string", "fuzz"],
  ["array", "array", []],
  ["object", "object", {}]
]

/** Raw JSON number texts out of any sane range. */
const rawNumbers: ReadonlyArray<readonly [string, string]> = [
  ["1e999", "1e999"],
  ["-1e999", "-1e999"],
  ["huge-int", "9".repeat(400)],
  ["2^53+1", "9007199254740993"],
  ["neg-zero", "-0"],
  ["tiny", "1e-400"]
]

const malformedBodies: ReadonlyArray<readonly [string, string | Buffer]> = [
  ["truncated", "{\"a\":"],
  ["open-brace", "{"],
  ["bare-word", "nul"],
  ["single-quotes", "{'a':1}"],
  ["trailing-comma", "{\"a\":1,}"],
  ["trailing-garbage", "{} x"],
  ["two-values", "{}{}"],
  ["empty", ""],
  ["whitespace", "   \n"],
  ["bom", "\uFEFF{}"],
  ["nan", "{\"a\":NaN}"],
  ["comment", "{/* c */}"],
  ["invalid-utf8", Buffer.concat([Buffer.from("{\"a\":\""), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from("\"}")])],
  ["raw-nul", Buffer.from("{\"a\":\"x\u0000y\"}")],
  ["unterminated-string", "{\"a\":\"xxx"]
]

// ---------------------------------------------------------------------------------------------
// Cases of one operation

/** `skeleton` with its first typed top-level property set to a value of a type it does not take. */
const invalidated = (bodySchema: SchemaObject, skeleton: Json): Json => {
  for (const field of fieldsOf(doc, bodySchema)) {
    if (field.path.length !== 1) continue
    const accepted = acceptedTypes(doc, field.schema)
    if (accepted === "any") continue
    const wrong = typedValues.find(([type]) => !accepted.has(type) && !(type === "integer" && accepted.has("number")))
    if (wrong !== undefined) return setAt(doc, bodySchema, skeleton, field.path, wrong[2])
  }
  return [skeleton]
}

const casesOf = (op: Operation, projectId: string, apiKey: string): Array<Case> => {
  const cases: Array<Case> = []
  const auth = { authorization: `Bearer ${apiKey}` }
  const pathParams = op.parameters.filter((p) => p.in === "path")
  const queryParams = op.parameters.filter((p) => p.in === "query")
  const defaults: Record<string, string> = Object.fromEntries(pathParams.map((p) => [
    p.name,
    encodeURIComponent(p.name === "pid" ? projectId : plausibleId(p.name))
  ]))
  const requiredQuery = queryParams.filter((p) => p.required)
    .map((p) => `${p.name}=${encodeURIComponent(String(sample(doc, p.schema, p.name)))}`)
  const withQuery = (path: string, extra: Array<string> = []) => {
    const query = [...requiredQuery, ...extra]
    return query.length === 0 ? path : `${path}?${query.join("&")}`
  }
  const basePath = fillPath(op.path, defaults)
  const bodySchema = op.body
  const skeleton: Json | undefined = bodySchema === undefined ? undefined : sample(doc, bodySchema)
  // A create (a POST on a collection: no id in the path) with a valid body would start work. Cases
  // that are not about the body's values send it with one property of a wrong type, so nothing is
  // created; cases on an id (which does not exist) keep the valid body to reach the handler's lookup.
  const creates = op.method === "POST" && pathParams.every((p) => p.name === "pid")
  const inert: Json | undefined = bodySchema === undefined || skeleton === undefined ? undefined : creates ? invalidated(bodySchema, skeleton) : skeleton
  const jsonHeaders = { ...auth, "content-type": "application/json" }
  const baseBody = inert === undefined ? undefined : JSON.stringify(inert)
  const add = (kind: string, path: string, extra: Partial<Case> = {}) =>
    cases.push({
      op,
      kind,
      method: op.method,
      path,
      headers: baseBody === undefined ? auth : jsonHeaders,
      ...(baseBody === undefined ? {} : { body: baseBody }),
      ...extra
    })

  // Plain: plausible ids that no row has (404s must be envelopes too).
  add("plausible-ids", withQuery(basePath))

  // Path parameters: hostile values, one parameter at a time (pid too: then 403 or 404, never 500).
  for (const param of pathParams) {
    for (const [kind, value] of hostileSegments) {
      add(`path.${param.name}:${kind}`, withQuery(fillPath(op.path, { ...defaults, [param.name]: value })))
    }
    if (param.name !== "pid") add(`path.${param.name}:other-prefix`, withQuery(fillPath(op.path, { ...defaults, [param.name]: "proj_0000000000zzzzzzzzzzzzzzzz" })))
  }
  // Malformed percent-encoding and junk after the path.
  add("path:trailing-bad-percent", withQuery(`${basePath}/%E0%A4%A`))
  add("path:trailing-nul", withQuery(`${basePath}/%00`))
  add("path:double-slash", withQuery(basePath.replace(/\/([^/]*)$/, "//$1")))
  add("query:bad-percent-raw", `${basePath}?%E0%A4%A`)
  add("query:bad-percent-key", withQuery(basePath, ["%zz=1"]))
  add("query:unknown-param", withQuery(basePath, ["unknown_param=1", "__proto__[x]=1"]))

  // Query parameters.
  for (const param of queryParams) {
    const others = requiredQuery.filter((q) => !q.startsWith(`${param.name}=`))
    const at = (value: string) => {
      const query = [...others, `${param.name}=${value}`]
      return `${basePath}?${query.join("&")}`
    }
    for (const [kind, value] of hostileQueryValues) add(`query.${param.name}:${kind}`, at(value))
    add(`query.${param.name}:repeated`, `${at("1")}&${param.name}=2`)
    add(`query.${param.name}:array-syntax`, `${basePath}?${[...others, `${param.name}[]=1`].join("&")}`)
    if (param.name === "cursor") for (const [kind, value] of badCursors) add(`query.cursor:${kind}`, at(encodeURIComponent(value)))
    if (param.name === "limit") for (const value of badLimits) add(`query.limit:${value.slice(0, 12) || "empty"}`, at(value.includes("%") ? value : encodeURIComponent(value)))
    if (param.name === "status") for (const value of badStatuses) add(`query.status:${value.slice(0, 12) || "empty"}`, at(value))
    if (param.name === "expires") for (const value of ["abc", "1e999", "-1", "NaN", "0x10", "9".repeat(400)]) add(`query.expires:${value.slice(0, 8)}`, at(value))
  }

  // Headers: Last-Event-ID on the streams, odd keys (nonexistent ids keep the streams short).
  if (op.parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "last-event-id")) {
    for (const value of ["abc", "-1", "1e999", "9".repeat(400), "1.5", "", " 1", "0x10", "\u00ff\u00fe"]) {
      add(`header.last-event-id:${value.slice(0, 8) || "empty"}`, withQuery(basePath), { headers: { ...auth, "last-event-id": value } })
    }
  }
  if (op.secured) {
    for (const [kind, value] of [
      ["no-key", undefined],
      ["basic", "Basic Zm9vOmJhcg=="],
      ["bearer-empty", "Bearer "],
      ["bearer-garbage", "Bearer wa_!!!"],
      ["bearer-long", `Bearer wa_${"k".repeat(8000)}`],
      ["bearer-latin1", "Bearer wa_\u00ff\u00fe"],
      ["two-bearers", `Bearer ${apiKey}, Bearer ${apiKey}`]
    ] as const) {
      const headers: Record<string, string> = baseBody === undefined ? {} : { "content-type": "application/json" }
      if (value !== undefined) headers["authorization"] = value
      add(`auth:${kind}`, withQuery(basePath), { headers })
    }
  }
  // A method the path does not have.
  for (const method of ["PATCH", "PUT"]) {
    if (method !== op.method) add(`method:${method}`, withQuery(basePath), { method, headers: jsonHeaders, body: "{}" })
  }

  if (bodySchema === undefined || skeleton === undefined || inert === undefined) return cases

  // Bodies.
  const body = (kind: string, text: string | Buffer, headers: Record<string, string> = jsonHeaders) =>
    add(`body:${kind}`, withQuery(basePath), { headers, body: text })
  for (const [kind, text] of malformedBodies) body(`malformed-${kind}`, text)
  for (const [kind, text] of [["null", "null"], ["array", "[]"], ["string", "\"fuzz\""], ["number", "1"], ["true", "true"]] as const) {
    body(`top-level-${kind}`, text)
  }
  body("deep-object-10k", deepObject)
  body("deep-array-10k", deepArray)
  body("deep-in-unknown-field", renderWith(setAt(doc, bodySchema, inert, ["fuzz_unknown"], MARKER), deepObject))
  body("unknown-field", JSON.stringify({ ...(inert as object), fuzz_unknown: 1 }))
  const rest = JSON.stringify(inert)
  body("proto-field", `{"__proto__":{"polluted":true}${rest.length > 2 ? `,${rest.slice(1)}` : "}"}`)
  body("constructor-field", JSON.stringify({ ...(inert as object), constructor: { prototype: { polluted: true } } }))
  body("empty-object", "{}")
  body("duplicate-keys", (() => {
    const text = JSON.stringify(inert)
    const first = Object.keys(inert as object)[0]
    return first === undefined ? "{\"a\":1,\"a\":\"x\"}" : `${text.slice(0, -1)}${text.length > 2 ? "," : ""}${JSON.stringify(first)}:{"x":[1,{"y":null}]}}`
  })())
  body("oversized-3mb", JSON.stringify({ ...(inert as object), fuzz_padding: "p".repeat(3 * 1024 * 1024) }))
  body("wide-object-20k-keys", JSON.stringify({ ...(inert as object), ...Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])) }))
  body("content-type-text", JSON.stringify(inert), { ...auth, "content-type": "text/plain" })
  body("content-type-form", "a=1&b=2", { ...auth, "content-type": "application/x-www-form-urlencoded" })
  body("content-type-multipart", "--x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--x--\r\n", { ...auth, "content-type": "multipart/form-data; boundary=x" })
  body("content-type-missing", JSON.stringify(inert), auth)
  body("content-type-charset-latin1", JSON.stringify(inert), { ...auth, "content-type": "application/json; charset=latin1" })
  if (op.method === "POST" || op.method === "DELETE") {
    // Odd idempotency keys, on a body that is invalid anyway (wrong type at top level) so nothing is created.
    for (const [kind, key] of [["not-uuid", "not-a-uuid"], ["long", "i".repeat(8000)], ["latin1", "\u00ff\u00fe"], ["empty", ""], ["dots", "../../etc/passwd"]] as const) {
      add(`header.idempotency-key:${kind}`, withQuery(basePath), { headers: { ...jsonHeaders, "idempotency-key": key }, body: "[]" })
    }
  }
  // Missing required fields, each on its own.
  for (const field of fieldsOf(doc, bodySchema)) {
    if (field.required) body(`missing.${field.path.join(".")}`, JSON.stringify(setAt(doc, bodySchema, skeleton, field.path, REMOVE)))
  }

  // Every field: wrong types, hostile strings, numbers out of range, deep and wide values.
  const hasInstructions = mainBranch(doc, bodySchema)["properties"]?.["instructions"] !== undefined
  const withInstructions: Json = { ...(skeleton as object), instructions: "fuzz" }
  for (const field of fieldsOf(doc, bodySchema)) {
    const name = field.path.join(".")
    const at = (value: Json) => setAt(doc, bodySchema, skeleton, field.path, value)
    const raw = (kind: string, text: string) => body(`${name}:${kind}`, renderWith(at(MARKER), text))
    const value = (kind: string, v: Json) => body(`${name}:${kind}`, JSON.stringify(at(v)))
    const accepted = acceptedTypes(doc, field.schema)
    const main = mainBranch(doc, field.schema)
    if (accepted !== "any") {
      for (const [type, kind, v] of typedValues) {
        const fits = accepted.has(type) || (type === "integer" && accepted.has("number"))
        if (!fits) value(`wrong-type-${kind}`, v)
      }
    }
    const takesString = accepted === "any" || accepted.has("string")
    if (takesString) {
      value("nul", "fu\u0000zz")
      value("nul-only", "\u0000")
      raw("lone-surrogate-high", "\"fu\\ud800zz\"")
      raw("lone-surrogate-low", "\"\\udc00\"")
      raw("surrogate-pair-reversed", "\"\\udc00\\ud800\"")
      value("1mb", MB)
      if (Array.isArray(main["enum"])) value("not-in-enum", "bogus_enum_value")
      if (main["format"] === "uri") {
        for (const [kind, url] of [["not-a-url", "not a url"], ["javascript", "javascript:alert(1)"], ["file", "file:///etc/passwd"], ["bad-host", "http://[::1"], ["nul-host", "http://exa\u0000mple.com/"]] as const) {
          value(`uri-${kind}`, url)
        }
      }
    }
    if (accepted === "any" || accepted.has("number") || accepted.has("integer")) {
      for (const [kind, text] of rawNumbers) raw(`number-${kind}`, text)
      if (typeof main["minimum"] === "number") value("below-minimum", main["minimum"] - 1)
      if (typeof main["maximum"] === "number") value("above-maximum", main["maximum"] + 1)
    }
    if (accepted === "any" || accepted.has("object")) {
      const objects: Array<readonly [string, string]> = [
        ["deep-object-10k", deepObject],
        ["proto-object", "{\"__proto__\":{\"polluted\":true},\"constructor\":{\"prototype\":{\"polluted\":true}}}"],
        ["nul-key", "{\"a\\u0000b\":1}"],
        ["lone-surrogate-key", "{\"\\ud800\":1}"],
        ...(main["properties"] === undefined ? [["wide-object-20k", JSON.stringify(Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])))] as const] : [])
      ]
      for (const [kind, text] of objects) {
        raw(kind, text)
        // DoAnything checks `instructions` in the handler (the schema has it optional): with it, the
        // free-form value gets past the handler's checks to storage. Without a model or a browser
        // the run that may start fails at once.
        if (hasInstructions && field.path[0] !== "instructions") {
          body(`${name}:${kind}+instructions`, renderWith(setAt(doc, bodySchema, withInstructions, field.path, MARKER), text))
        }
      }
    }
    if (accepted === "any" || accepted.has("array")) {
      raw("deep-array-10k", deepArray)
      const item = sample(doc, main["items"] ?? {})
      value("array-20k-items", Array.from({ length: 20_000 }, () => item))
      value("array-of-nul", ["fu\u0000zz"])
    }
  }
  return cases
}

// ---------------------------------------------------------------------------------------------

const snippet = (text: string | undefined, max = 240) => (text ?? "").replace(/\s+/g, " ").slice(0, max)

/** Each message of a logged cause chain, with its first stack frame in the service's own code. */
const summarizeCause = (cause: string): string => {
  const out: Array<string> = []
  let frameTaken = true
  for (const raw of cause.split("\n")) {
    const line = raw.trim()
    if (line === "" || /^[{}]+$/.test(line)) continue
    if (!line.startsWith("at ")) {
      out.push(line)
      frameTaken = false
    } else if (!frameTaken && line.includes("/src/")) {
      out.push(line)
      frameTaken = true
    }
  }
  return out.join(" <- ")
}

/** The `request failed` log line of a request, if the service logged one, with its cause chain. */
const failureLog = (requestId: string): string | undefined => {
  const line = service.logs.find((l) => l.annotations?.["request_id"] === requestId && l.message !== "request")
  if (line === undefined) return undefined
  const cause = (line as unknown as { cause?: unknown }).cause
  const text = typeof cause === "string" ? summarizeCause(cause) : JSON.stringify(line)
  return `${line.message}: ${snippet(text, 700)}`
}

describe("fuzz every operation of the OpenAPI document", () => {
  it("answers hostile input below 500, in the envelope, and stays up", { timeout: 600_000 }, async () => {
    const operations = operationsOf(doc)
    expect(operations.length).toBeGreaterThan(40)
    const cases = operations.flatMap((op) => casesOf(op, service.projectId, service.apiKey))
    let counter = 0
    const started = Date.now()
    const outcomes = await runBounded(CONCURRENCY, cases.map((testCase) => async (): Promise<Outcome> => {
      const requestId = `fz-${++counter}`
      try {
        const response = await rawRequest(service.url, agent, {
          method: testCase.method,
          path: testCase.path,
          headers: { ...testCase.headers, "x-request-id": requestId },
          ...(testCase.body === undefined ? {} : { body: testCase.body }),
          timeoutMs: 20_000
        })
        return { testCase, requestId, status: response.status, text: response.text, json: response.json }
      } catch (error) {
        return { testCase, requestId, error: String(error) }
      }
    }))
    // Let the service flush its log lines for the last requests.
    await new Promise((r) => setTimeout(r, 300))
    // FUZZ_REPORT=file.jsonl writes every case with its answer, for looking beyond the failures.
    const reportFile = process.env["FUZZ_REPORT"]
    if (reportFile !== undefined && reportFile !== "") {
      writeFileSync(reportFile, outcomes.map((o) => JSON.stringify({
        method: o.testCase.method,
        operation: o.testCase.op.path,
        kind: o.testCase.kind,
        status: o.status ?? null,
        code: (o.json as { code?: unknown } | undefined)?.code ?? null,
        error: o.error ?? null,
        request_id: o.requestId
      })).join("\n") + "\n")
    }

    const fiveXx = outcomes.filter((o) => o.status !== undefined && o.status >= 500)
    const notEnvelope = outcomes.filter((o) => o.status !== undefined && o.status < 500 && (o.status < 200 || o.status >= 300) && !isEnvelope(o.json))
    // A large body the server refuses before reading it all may reset the connection; anything
    // else, and any timeout, must get a complete response.
    const refusedLarge = (o: Outcome) =>
      /oversized|1mb|20k/.test(o.testCase.kind) && /ECONNRESET|EPIPE|socket hang up/.test(o.error ?? "")
    const transport = outcomes.filter((o) => o.error !== undefined && !refusedLarge(o))

    const dedupe = (list: Array<Outcome>) => {
      const seen = new Map<string, Outcome>()
      for (const o of list) {
        const key = `${o.testCase.method} ${o.testCase.op.path} | ${o.testCase.kind}`
        if (!seen.has(key)) seen.set(key, o)
      }
      return [...seen.entries()]
    }
    const describeOutcome = ([key, o]: [string, Outcome]) => {
      const log = failureLog(o.requestId)
      return `${o.testCase.method} ${snippet(o.testCase.path, 160)} -> ${o.status ?? o.error} ${snippet(o.text)}  [${key.split(" | ")[1]}]` +
        (log === undefined ? "" : `\n      log: ${log}`)
    }

    console.log(`fuzz: tried ${outcomes.length} requests over ${operations.length} operations, 5xx: ${fiveXx.length} (${((Date.now() - started) / 1000).toFixed(1)} s)`)
    if (fiveXx.length > 0) console.log(`fuzz: 5xx responses (deduped by operation and input kind):\n  ${dedupe(fiveXx).map(describeOutcome).join("\n  ")}`)
    if (notEnvelope.length > 0) console.log(`fuzz: non-2xx responses not in the envelope:\n  ${dedupe(notEnvelope).map(describeOutcome).join("\n  ")}`)
    if (transport.length > 0) console.log(`fuzz: requests without a response:\n  ${dedupe(transport).map(describeOutcome).join("\n  ")}`)

    // Still up: liveness, and an authenticated read that reaches the database.
    const health = await service.request("GET", "/healthz", { key: null })
    const authenticated = await service.request("GET", `/v1/projects/${service.projectId}/api_keys?limit=1`)

    expect(health.status, "GET /healthz after the fuzz").toBe(200)
    expect(authenticated.status, "authenticated GET after the fuzz").toBe(200)
    expect(dedupe(fiveXx).map(describeOutcome), "responses >= 500").toEqual([])
    expect(dedupe(notEnvelope).map(describeOutcome), "non-2xx responses outside the envelope").toEqual([])
    expect(dedupe(transport).map(describeOutcome), "requests that got no response").toEqual([])
  })
})
