/**
 * The contract hook (issue 27 §4): every HTTP response a process-level test receives from the
 * service is held to the OpenAPI document the same service serves at /openapi.json, through
 * `checkExchange`: the `request` and `fetch` helpers of test/support/service.ts, `contractFetch`
 * (a `fetch` bound to a service URL: scale-out nodes, the load balancer, the SDK's transport), the
 * fuzzers' `rawRequest` (test/support/openapi-fuzz.ts) and the event-stream reader `readSse`
 * (test/support/sse.ts: status, content type and headers; its events against their schemas),
 * `checkRawHttp` for HTTP written by hand on a socket, the checking reverse proxy the CLI, MCP
 * and `wa eval` subprocesses are pointed at (contract-proxy.ts) and the watch on a driven
 * browser's responses (contract-browser.ts). Only the named EXEMPTIONS (malformed framing on raw
 * sockets) are not checked. For the operation the request matched (method and path
 * template; /v1 and /api/v1 are separate paths of the document) it checks:
 *
 * - the status is declared for the operation (or its `default`);
 * - the content type is one the status declares (none declared: no body);
 * - a JSON body validates against the declared schema (ajv, JSON Schema 2020-12, the dialect of
 *   OpenAPI 3.1, with ajv-formats for `date-time`, `uri`, ...);
 * - every header the status declares as required is sent, every declared header sent validates
 *   against its schema, and every header sent that is not plain HTTP (STANDARD_HEADERS) is
 *   declared.
 *
 * A non-JSON body (event streams, HTML, files, metrics) is held to its status and content type
 * only. A path the document does not have is a mismatch too (the document declares every API
 * path the service serves), unless it is one of the non-API pages in NON_API_PAGES, or the
 * server's own answer that there is no such route (404 `not_found`, 405 `method_not_allowed` on
 * a path whose other methods exist), which must still be the error envelope.
 *
 * Modes (`WA_CONTRACT_HOOK`): `enforce` (the default under vitest) throws from `request`, so the
 * test that caused the mismatch fails; `report` appends each mismatch as a JSON line to
 * `WA_CONTRACT_HOOK_FILE` (default /tmp/contract-mismatches.jsonl) and lets the test go on; `off`
 * (the default outside vitest: bench scripts) checks nothing.
 */
import { appendFileSync } from "node:fs"
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"

type Doc = Record<string, any>

export type ContractHookMode = "enforce" | "report" | "off"

export const contractHookMode = (): ContractHookMode => {
  const value = process.env["WA_CONTRACT_HOOK"]
  if (value === "enforce" || value === "report" || value === "off") return value
  return process.env["VITEST"] !== undefined ? "enforce" : "off"
}

export const reportFile = () => process.env["WA_CONTRACT_HOOK_FILE"] ?? "/tmp/contract-mismatches.jsonl"

/**
 * Pages the service serves that are not API operations, so not in the document: the document
 * itself, the bundled reference UI (/docs and its scripts), the console's single-page app and its
 * assets, the take-control WebSocket (an upgrade, not a REST answer) and the delegation consent
 * page with its sign-in form (HTML forms a person submits, with their redirects).
 */
export const NON_API_PAGES: ReadonlyArray<RegExp> = [
  /^\/openapi\.json$/,
  /^\/docs(\/.*)?$/,
  /^\/console(\/.*)?$/,
  /^\/v1\/control\/[^/]+\/ws$/,
  /^\/v1\/delegations\/consent(\/sign-in)?$/
]

/**
 * Response headers of HTTP itself (framing, caching, content negotiation, security policy of the
 * browser, proxies), which the document need not declare; any other header the service sends must
 * be declared for the response.
 */
export const STANDARD_HEADERS: ReadonlySet<string> = new Set([
  "accept-ranges", "age", "cache-control", "connection", "content-disposition", "content-encoding", "content-language",
  "content-length", "content-range", "content-security-policy", "cross-origin-opener-policy", "cross-origin-resource-policy",
  "cross-origin-embedder-policy", "date", "etag", "expires", "keep-alive", "last-modified", "permissions-policy", "pragma",
  "referrer-policy", "strict-transport-security", "transfer-encoding", "vary", "x-accel-buffering", "x-content-type-options",
  "x-frame-options", "content-type",
  // A reverse proxy in front of the service (the nginx of infra/docker) names itself.
  "server"
])

/**
 * Mismatches known and not fixed yet, each to be fixed (in the document or the server), then
 * removed from here. `operation` is `METHOD /template` (`*`: any operation); `status` the answer's
 * status; `problem` a substring of the problem the hook reports.
 */
export const KNOWN_MISMATCHES: ReadonlyArray<{ readonly operation: string; readonly status: number; readonly problem: string; readonly why: string }> = []

export interface Exchange {
  readonly method: string
  /** The path as requested, with its query. */
  readonly pathname: string
  readonly status: number
  readonly headers: Headers
  /**
   * The body, or undefined when it was not read: an event stream, whose status, content type and
   * headers are checked here and whose events test/support/sse.ts checks against their schemas.
   */
  readonly text: string | undefined
}

export interface Mismatch {
  readonly method: string
  readonly path: string
  /** `METHOD /template` of the document, or undefined when no path matched. */
  readonly operation: string | undefined
  readonly status: number
  readonly problems: ReadonlyArray<string>
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"]

const baseMediaType = (value: string) => value.split(";")[0]!.trim().toLowerCase()
const isJsonMediaType = (value: string) => {
  const base = baseMediaType(value)
  return base === "application/json" || base.endsWith("+json")
}
const pointerSegment = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1")

/**
 * The refusals given before a route is chosen, on any path (src/http/middleware/request-guard.ts,
 * request-context.ts): 400 `bad_request` for a NUL byte or bad percent-encoding in the URL, 414
 * `uri_too_long` for a segment past the router's limit. On a path (or method) the document does not
 * have they must still be the envelope with that code.
 */
const beforeRouting = (status: number): string | undefined =>
  status === 400 ? "bad_request" : status === 414 ? "uri_too_long" : undefined

interface Template {
  readonly path: string
  readonly segments: ReadonlyArray<string | undefined> // undefined: a {param}
}

/** One document, compiled: its path templates and its schemas (compiled once each, on first use). */
export class ContractDocument {
  readonly #doc: Doc
  readonly #ajv: Ajv2020
  readonly #templates: ReadonlyArray<Template>
  readonly #validators = new Map<string, ValidateFunction>()
  static #next = 0
  readonly #id: string

  constructor(doc: Doc) {
    this.#doc = doc
    this.#id = `openapi-${ContractDocument.#next++}.json`
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
    const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => void
    addFormats(this.#ajv)
    // The whole document is one schema resource, so `#/components/schemas/...` refs resolve from
    // any response schema, which is compiled by its JSON pointer into the document.
    this.#ajv.addSchema({ ...doc, $id: this.#id })
    this.#templates = Object.keys(doc["paths"] ?? {}).map((path) => ({
      path,
      segments: path.split("/").map((s) => (/^\{[^}]+\}$/.test(s) ? undefined : s))
    }))
  }

  /**
   * The document's path template a concrete path falls under (literal segments win over params,
   * among the templates that have the method when one does).
   * Repeated slashes count as one, as the server's router has them (HttpRouter's
   * ignoreDuplicateSlashes): `//healthz` is `/healthz`.
   */
  matchPath(pathname: string, method?: string): string | undefined {
    const segments = pathname.split("?")[0]!.replace(/\/{2,}/g, "/").split("/")
    const candidates = this.#templates.filter((t) =>
      t.segments.length === segments.length && t.segments.every((s, i) => s === undefined ? segments[i] !== "" : s === segments[i])
    )
    candidates.sort((a, b) => {
      for (let i = 0; i < a.segments.length; i++) {
        const la = a.segments[i] !== undefined, lb = b.segments[i] !== undefined
        if (la !== lb) return la ? -1 : 1
      }
      return 0
    })
    // The router's tree is per method: a literal template without this method does not hide a
    // parameter template with it (PATCH /profiles/login is PATCH /profiles/{profile_id}).
    const verb = method?.toLowerCase()
    const withMethod = verb === undefined ? undefined
      : candidates.find((t) => this.#doc["paths"][t.path]?.[verb] !== undefined || (verb === "head" && this.#doc["paths"][t.path]?.["get"] !== undefined))
    return (withMethod ?? candidates[0])?.path
  }

  #validator(pointer: string): ValidateFunction {
    let validate = this.#validators.get(pointer)
    if (validate === undefined) {
      validate = this.#ajv.compile({ $ref: `${this.#id}#${pointer}` })
      this.#validators.set(pointer, validate)
    }
    return validate
  }

  #resolve(node: any): any {
    for (let i = 0; i < 16 && typeof node?.["$ref"] === "string"; i++) {
      node = (node["$ref"] as string).replace(/^#\//, "").split("/")
        .reduce<any>((at, key) => at?.[key.replaceAll("~1", "/").replaceAll("~0", "~")], this.#doc)
    }
    return node
  }

  /** Follows a `$ref` and says where it ended (a JSON pointer into the document). */
  #resolveAt(node: any, at: string): [any, string] {
    for (let i = 0; i < 16 && typeof node?.["$ref"] === "string"; i++) {
      at = (node["$ref"] as string).replace(/^#/, "")
      node = this.#resolve({ $ref: node["$ref"] as string })
    }
    return [node ?? {}, at]
  }

  #errorEnvelope(text: string | undefined, code: string): Array<string> {
    if (text === undefined) return []
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      return [`the body is not the error envelope (not JSON): ${text.slice(0, 120)}`]
    }
    const ok = body !== null && typeof body === "object" && typeof body.code === "string" && typeof body.detail === "string" &&
      body.extra !== null && typeof body.extra === "object" && !Array.isArray(body.extra)
    if (!ok) return [`the body is not the error envelope {code, detail, extra}: ${text.slice(0, 200)}`]
    return body.code === code ? [] : [`the envelope's code is ${JSON.stringify(body.code)}, not ${code}`]
  }

  /** The problems of one exchange (empty: it agrees with the document), and the operation it matched. */
  check(exchange: Exchange): { operation: string | undefined; problems: Array<string> } {
    const method = exchange.method.toLowerCase()
    const path = exchange.pathname.split("?")[0]!
    // A page first: /v1/delegations/consent would otherwise fall under /v1/delegations/{grant_id}.
    if (NON_API_PAGES.some((page) => page.test(path))) return { operation: undefined, problems: [] }
    const template = this.matchPath(path, method)
    if (template === undefined) {
      // The server's answer that it serves no such path is fine, in the envelope.
      if (exchange.status === 404) return { operation: undefined, problems: this.#errorEnvelope(exchange.text, "not_found") }
      const refusal = beforeRouting(exchange.status)
      if (refusal !== undefined) return { operation: undefined, problems: this.#errorEnvelope(exchange.text, refusal) }
      return { operation: undefined, problems: [`the path is not in the document (answered ${exchange.status})`] }
    }
    const item = this.#doc["paths"][template]
    const opMethod = method === "head" && item["head"] === undefined ? "get" : method
    const operation = `${exchange.method.toUpperCase()} ${template}`
    const op = item[opMethod]
    if (op === undefined || !METHODS.includes(opMethod)) {
      if (exchange.status === 405) return { operation, problems: this.#errorEnvelope(exchange.text, "method_not_allowed") }
      const refusal = beforeRouting(exchange.status)
      if (refusal !== undefined) return { operation, problems: this.#errorEnvelope(exchange.text, refusal) }
      return { operation, problems: [`the method is not in the document for this path (answered ${exchange.status})`] }
    }
    const responses = op["responses"] ?? {}
    const statusKey = String(exchange.status)
    const key = responses[statusKey] !== undefined ? statusKey
      : responses[`${statusKey[0]}XX`] !== undefined ? `${statusKey[0]}XX`
      : responses["default"] !== undefined ? "default"
      : undefined
    if (key === undefined) {
      return { operation, problems: [`status ${exchange.status} is not declared (declared: ${Object.keys(responses).join(", ")}); body: ${(exchange.text ?? "(not read)").slice(0, 200)}`] }
    }
    const problems: Array<string> = []
    const [declared, pointer] = this.#resolveAt(responses[key], `/paths/${pointerSegment(template)}/${opMethod}/responses/${key}`)

    // Headers: the required ones are sent, the declared ones sent are valid, and every header sent
    // that is not plain HTTP (STANDARD_HEADERS) is declared.
    const declaredHeaders = new Set<string>()
    for (const [name, header] of Object.entries<any>(declared["headers"] ?? {})) {
      declaredHeaders.add(name.toLowerCase())
      const [resolved, at] = this.#resolveAt(header, `${pointer}/headers/${pointerSegment(name)}`)
      const value = exchange.headers.get(name)
      if (value === null) {
        if (resolved["required"] === true) problems.push(`the required header ${name} is missing`)
        continue
      }
      const schema = this.#resolve(resolved["schema"] ?? {})
      const asJson = schema["type"] === "integer" || schema["type"] === "number" ? Number(value) : value
      const validate = this.#validator(`${at}/schema`)
      if (!validate(asJson)) problems.push(`the header ${name}: ${JSON.stringify(value)} ${formatErrors(validate.errors)}`)
    }
    for (const [name] of exchange.headers) {
      if (!declaredHeaders.has(name) && !STANDARD_HEADERS.has(name)) problems.push(`the header ${name} is sent but not declared`)
    }

    // Body: none declared means none sent; else one of the declared types, JSON valid against its schema.
    const content: Record<string, any> = declared["content"] ?? {}
    const types = Object.keys(content)
    const sentType = exchange.headers.get("content-type")
    const text = exchange.text
    const hasBody = text === undefined ? sentType !== null : text.length > 0
    if (types.length === 0) {
      if (hasBody) problems.push(`a body is sent (${sentType ?? "no content type"}) where the document declares none: ${(text ?? "(not read)").slice(0, 120)}`)
      return { operation, problems }
    }
    if (!hasBody && (method === "head" || text === undefined)) return { operation, problems }
    if (sentType === null) {
      problems.push(`no content type (declared: ${types.join(", ")})`)
      return { operation, problems }
    }
    const matched = types.find((t) => t === "*/*" || baseMediaType(t) === baseMediaType(sentType) ||
      (t.endsWith("/*") && baseMediaType(sentType).startsWith(t.slice(0, -1))))
    if (matched === undefined) {
      problems.push(`content type ${sentType} is not declared (declared: ${types.join(", ")})`)
      return { operation, problems }
    }
    if (text === undefined || !isJsonMediaType(matched) || content[matched]?.["schema"] === undefined) return { operation, problems }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      problems.push(`the body is not JSON: ${text.slice(0, 120)}`)
      return { operation, problems }
    }
    const validate = this.#validator(`${pointer}/content/${pointerSegment(matched)}/schema`)
    if (!validate(body)) problems.push(`the body ${formatErrors(validate.errors)}`)
    return { operation, problems }
  }
}

const formatErrors = (errors: ReadonlyArray<ErrorObject> | null | undefined, max = 5): string => {
  if (errors === null || errors === undefined || errors.length === 0) return "does not validate"
  // anyOf/oneOf failures list each branch's error then their own; the leaves say the most.
  const shown = errors.filter((e) => e.keyword !== "anyOf" && e.keyword !== "oneOf").slice(0, max)
  const list = (shown.length > 0 ? shown : errors.slice(0, max)).map((e) => {
    const params = e.keyword === "additionalProperties" ? ` (${String(e.params["additionalProperty"])})`
      : e.keyword === "enum" ? ` (${JSON.stringify(e.params["allowedValues"])})`
      : ""
    return `${e.instancePath === "" ? "(root)" : e.instancePath} ${e.message ?? e.keyword}${params}`
  })
  return `does not validate: ${list.join("; ")}${errors.length > max ? ` (+${errors.length - max} more)` : ""}`
}

const documents = new Map<string, Promise<ContractDocument>>()

/** The document a service serves, fetched once per service URL. */
export const documentOf = (baseUrl: string): Promise<ContractDocument> => {
  let loaded = documents.get(baseUrl)
  if (loaded === undefined) {
    loaded = fetch(`${baseUrl}/openapi.json`, { signal: AbortSignal.timeout(30_000) }).then(async (response) => {
      if (response.status !== 200) throw new Error(`GET ${baseUrl}/openapi.json answered ${response.status}`)
      return new ContractDocument(await response.json() as Doc)
    })
    // A failed load (the service was stopping) is tried again by the next response.
    loaded.catch(() => documents.delete(baseUrl))
    documents.set(baseUrl, loaded)
  }
  return loaded
}

/** `operation` `*`: every operation (a mismatch of a layer all of them share). */
const isKnown = (mismatch: Mismatch, problem: string) =>
  KNOWN_MISMATCHES.some((known) =>
    (known.operation === "*" || known.operation === mismatch.operation) && known.status === mismatch.status && problem.includes(known.problem)
  )

/** The mismatch of one exchange against a document, without the known ones; undefined when it agrees. */
export const mismatchOf = (doc: ContractDocument, exchange: Exchange): Mismatch | undefined => {
  const { operation, problems } = doc.check(exchange)
  const mismatch: Mismatch = { method: exchange.method.toUpperCase(), path: exchange.pathname, operation, status: exchange.status, problems }
  const left = problems.filter((problem) => !isKnown(mismatch, problem))
  return left.length === 0 ? undefined : { ...mismatch, problems: left }
}

export const describeMismatch = (mismatch: Mismatch) =>
  `contract hook: ${mismatch.method} ${mismatch.path} answered ${mismatch.status}, which the OpenAPI document does not allow` +
  `${mismatch.operation !== undefined ? ` for ${mismatch.operation}` : ""}:\n  - ${mismatch.problems.join("\n  - ")}`

const currentTest = async (): Promise<{ file?: string; test?: string }> => {
  try {
    const { expect } = await import("vitest")
    const state = expect.getState()
    return { ...(state.testPath !== undefined ? { file: state.testPath } : {}), ...(state.currentTestName !== undefined ? { test: state.currentTestName } : {}) }
  } catch {
    return {}
  }
}

/**
 * The one hook every response of the service goes through (`service.request`, `service.fetch` and
 * `contractFetch`, the fuzzers' `rawRequest`, `readSse`): checks it against the document of the
 * service at `baseUrl` and, in enforce mode, throws on a mismatch, so the test that made the
 * request fails; in report mode appends it to the report. A named `exemption` (EXEMPTIONS) skips it.
 */
export const checkExchange = async (baseUrl: string, exchange: Exchange, exemption?: Exemption): Promise<void> => {
  const mode = contractHookMode()
  if (mode === "off" || isExempt(exemption)) return
  let doc: ContractDocument
  try {
    doc = await documentOf(baseUrl)
  } catch (error) {
    // The service answered this request and then went away (a test stopping or killing it): the
    // response cannot be checked, which is not the response's fault.
    if (mode === "report") appendFileSync(reportFile(), JSON.stringify({ unchecked: true, method: exchange.method, path: exchange.pathname, status: exchange.status, error: String(error), ...await currentTest() }) + "\n")
    return
  }
  const mismatch = mismatchOf(doc, exchange)
  if (mismatch === undefined) return
  if (mode === "report") {
    appendFileSync(reportFile(), JSON.stringify({ ...mismatch, ...await currentTest() }) + "\n")
    return
  }
  throw new Error(describeMismatch(mismatch))
}

/**
 * The named exemptions: responses a process-level test gets from the service that the hook does
 * not check, each with its reason. Every other way a test gets a response (`service.request`,
 * `service.fetch` / `contractFetch`, the fuzzers' `rawRequest`, `readSse`, the SDK given
 * `service.fetch`, `checkRawHttp`, contract-proxy.ts, contract-browser.ts) goes through
 * `checkExchange`. A caller names its exemption (`exempt:` of
 * `rawRequest`, `checkExchange`'s `exemption`), so an exempt exchange is visible where it is made.
 */
export const EXEMPTIONS = {
  /**
   * Bytes written on a raw socket that are not a well-framed HTTP request (a request line or
   * headers never finished, a body shorter than its Content-Length, headers past the limit): the
   * answer, if any, is Node's HTTP parser's (400/408/431 with no body, or a closed socket), given
   * before any route is matched, so no operation of the document can describe it.
   * test/security/request-limits.test.ts (headers never finished; a body that stops arriving).
   */
  "malformed-framing": "not a well-framed HTTP request: Node's parser answers before any route, no operation describes it"
} as const satisfies Record<string, string>

export type Exemption = keyof typeof EXEMPTIONS

/** Whether a check is skipped by a named exemption (checkExchange). */
const isExempt = (exemption: Exemption | undefined): boolean => exemption !== undefined && EXEMPTIONS[exemption] !== undefined

const isEventStream = (response: Response) => baseMediaType(response.headers.get("content-type") ?? "") === "text/event-stream"

/**
 * Checks a `fetch` Response of the service at `baseUrl` (checkExchange): its final URL's
 * path (a followed redirect is checked as the GET it ended with), status, headers and body. The
 * body is read from a clone, so the caller still reads it; an event stream's body is not read (its
 * events are checked by test/support/sse.ts). A response from another origin (a fixture site, a
 * fault proxy in front of the service) is not the service's and is not checked.
 */
export const checkResponse = async (baseUrl: string, method: string, requested: URL, response: Response): Promise<void> => {
  if (contractHookMode() === "off") return
  const final = response.redirected && response.url !== "" ? new URL(response.url) : requested
  if (final.origin !== new URL(baseUrl).origin) return
  await checkExchange(baseUrl, {
    method: response.redirected && method.toUpperCase() !== "HEAD" ? "GET" : method.toUpperCase(),
    pathname: final.pathname + final.search,
    status: response.status,
    headers: response.headers,
    text: isEventStream(response) ? undefined : await response.clone().text()
  })
}

/**
 * A `fetch` bound to the service at `baseUrl` whose every response goes through the hook
 * (checkResponse) before it is returned: a path (`/v1/...`) is resolved against `baseUrl`, a full
 * URL is fetched as is (checked when it is the service's). The same signature as `fetch`, so it is
 * also the SDK's `fetch` option.
 */
export const contractFetch = (baseUrl: string): typeof globalThis.fetch =>
  (async (input: string | URL | Request, init?: RequestInit) => {
    const request = input instanceof Request ? input : undefined
    const url = new URL(request?.url ?? (typeof input === "string" && input.startsWith("/") ? baseUrl + input : String(input)))
    const response = await fetch(request ?? url, init)
    await checkResponse(baseUrl, init?.method ?? request?.method ?? "GET", url, response)
    return response
  }) as typeof globalThis.fetch

/**
 * Checks a response read off a raw socket (`HTTP/1.1 <status> ...`, its headers, its body as far as
 * it came) to `method path` on the service at `baseUrl`: a chunked body is decoded when complete;
 * an event stream's body is not read (as checkResponse). For tests that write HTTP by hand; one
 * whose request is not well-framed HTTP names its exemption.
 */
export const checkRawHttp = async (baseUrl: string, method: string, path: string, raw: string, exemption?: Exemption): Promise<void> => {
  if (contractHookMode() === "off" || isExempt(exemption)) return
  const end = raw.indexOf("\r\n\r\n")
  const head = (end < 0 ? raw : raw.slice(0, end)).split("\r\n")
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "")
  if (status === null) throw new Error(`contract hook: ${method} ${path}: the answer is not HTTP: ${raw.slice(0, 120)}`)
  const headers = new Headers()
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":")
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
  }
  let text: string | undefined = end < 0 ? "" : raw.slice(end + 4)
  if (baseMediaType(headers.get("content-type") ?? "") === "text/event-stream") text = undefined
  else if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") {
    let body = ""
    let at = 0
    for (;;) {
      const lineEnd = text.indexOf("\r\n", at)
      if (lineEnd < 0) break
      const size = parseInt(text.slice(at, lineEnd), 16)
      if (!(size > 0)) break
      body += text.slice(lineEnd + 2, lineEnd + 2 + size)
      at = lineEnd + 2 + size + 2
    }
    text = body
  }
  // Framing is the socket's, not the document's.
  headers.delete("transfer-encoding")
  await checkExchange(baseUrl, { method, pathname: path, status: Number(status[1]), headers, text })
}
