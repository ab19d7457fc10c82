/**
 * A loopback receiver of signed deliveries: it records every request it accepts (headers and
 * body), can refuse the next N with 500, and verifies a delivery's Standard Webhooks signature with
 * the `standardwebhooks` library, as a customer's receiver would.
 *
 * Every body it receives is held to the OpenAPI document's `webhooks` section (issue 27 §2), the
 * document the service serves at /openapi.json (generated here from the same contract): the body
 * must validate (ajv, JSON Schema 2020-12) against the request body of one of the section's
 * entries, and its headers against that entry's header parameters (`checkWebhookDelivery`). A
 * mismatch is recorded, and from then on every read of `received` throws it, as does `close`: the
 * test that reads the deliveries (or closes the receiver) fails, naming the body.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js"
import addFormatsModule from "ajv-formats"
import { OpenApi } from "effect/http-api"
import { WebAgentApi } from "../../src/http/api/api.ts"

export interface Received {
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  /** The `webhooks` entries of the document the body is valid against (two where they agree, e.g. a failed DeepResearch run under /v1 and /api/v1). */
  readonly kinds: ReadonlyArray<string>
}

export interface WebhookReceiver {
  /** Base URL without trailing slash. */
  readonly url: string
  /** The deliveries accepted so far, oldest first. Reading it throws once a body did not match the document. */
  readonly received: Array<Received>
  /** Answers the next `n` deliveries with 500 (not recorded). */
  readonly refuseNext: (n: number) => void
  /** How many refusals are still to come. */
  readonly refusalsLeft: () => number
  /** Stops the receiver; throws if a body it received did not match the document. */
  readonly close: () => Promise<void>
}

type Doc = Record<string, any>

interface WebhookEntry {
  readonly kind: string
  readonly type: string | undefined
  readonly body: ValidateFunction
  readonly headers: ReadonlyArray<{ readonly name: string; readonly required: boolean; readonly validate: ValidateFunction }>
}

let compiled: { readonly entries: ReadonlyArray<WebhookEntry> } | undefined

/** The document's `webhooks` entries, compiled once: each entry's body and header validators. */
const webhookEntries = (): ReadonlyArray<WebhookEntry> => {
  if (compiled !== undefined) return compiled.entries
  const doc = OpenApi.fromApi(WebAgentApi) as unknown as Doc
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv2020) => void
  addFormats(ajv)
  const id = "webhook-receiver-openapi.json"
  ajv.addSchema({ ...doc, $id: id })
  const section: Record<string, any> = doc["webhooks"] ?? {}
  const entries = Object.entries(section).map(([kind, item]): WebhookEntry => {
    const op = item["post"]
    const pointer = `/webhooks/${kind.replaceAll("~", "~0").replaceAll("/", "~1")}/post`
    const bodyRef: string | undefined = op["requestBody"]?.["content"]?.["application/json"]?.["schema"]?.["$ref"]
    const body = doc["components"]["schemas"][String(bodyRef).replace("#/components/schemas/", "")]
    return {
      kind,
      type: body?.["properties"]?.["type"]?.["enum"]?.[0],
      body: ajv.compile({ $ref: `${id}#${pointer}/requestBody/content/application~1json/schema` }),
      headers: (op["parameters"] ?? []).filter((p: any) => p["in"] === "header").map((p: any, index: number) => ({
        name: String(p["name"]).toLowerCase(),
        required: p["required"] === true,
        validate: ajv.compile({ $ref: `${id}#${pointer}/parameters/${index}/schema` })
      }))
    }
  })
  if (entries.length === 0) throw new Error("the OpenAPI document has no webhooks section")
  compiled = { entries }
  return entries
}

const formatErrors = (errors: ReadonlyArray<ErrorObject> | null | undefined, max = 6): string =>
  (errors ?? []).filter((e) => e.keyword !== "anyOf" && e.keyword !== "oneOf").slice(0, max).map((e) => {
    const extra = e.keyword === "additionalProperties" ? ` (${String(e.params["additionalProperty"])})`
      : e.keyword === "enum" ? ` (${JSON.stringify(e.params["allowedValues"])})`
      : ""
    return `${e.instancePath === "" ? "(root)" : e.instancePath} ${e.message ?? e.keyword}${extra}`
  }).join("; ") || "does not validate"

/**
 * Holds a delivery to the document's `webhooks` section: the body is JSON valid against one
 * entry's request body, and the headers against that entry's header parameters (`headers`
 * undefined: a receiver that kept the body only; its headers are not checked). Gives the entries
 * it matches, or the problems (the entries of the body's `type` and why each refuses it).
 */
export const checkWebhookDelivery = (headers: Record<string, string | ReadonlyArray<string> | undefined> | undefined, text: string):
  { readonly kinds: ReadonlyArray<string>; readonly problems: ReadonlyArray<string> } =>
{
  const entries = webhookEntries()
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    return { kinds: [], problems: [`the body is not JSON: ${text.slice(0, 120)}`] }
  }
  const headerProblems = (entry: WebhookEntry) =>
    headers === undefined ? [] : entry.headers.flatMap((header) => {
      const value = headers[header.name]
      if (value === undefined) return header.required ? [`the header ${header.name} is missing`] : []
      const single = Array.isArray(value) ? value.join(", ") : String(value)
      return header.validate(single) ? [] : [`the header ${header.name}: ${JSON.stringify(single)} ${formatErrors(header.validate.errors)}`]
    })
  const kinds = entries.filter((entry) => entry.body(body)).map((entry) => entry.kind)
  if (kinds.length > 0) {
    const problems = headerProblems(entries.find((entry) => entry.kind === kinds[0])!)
    return { kinds: problems.length === 0 ? kinds : [], problems }
  }
  const ofType = entries.filter((entry) => entry.type === body?.type)
  if (ofType.length === 0) {
    return { kinds: [], problems: [`type ${JSON.stringify(body?.type)} is not the type of any webhook of the document (${[...new Set(entries.map((e) => e.type))].join(", ")})`] }
  }
  return {
    kinds: [],
    problems: ofType.map((entry) => {
      entry.body(body)
      return `not a ${entry.kind} body: ${formatErrors(entry.body.errors)}`
    })
  }
}

const describe = (problems: ReadonlyArray<{ readonly path: string; readonly body: string; readonly problems: ReadonlyArray<string> }>) =>
  `webhook receiver: ${problems.length} delivery body(ies) the OpenAPI document's webhooks section does not allow:\n` +
  problems.map((p) => `POST ${p.path} ${p.body.slice(0, 300)}\n  - ${p.problems.join("\n  - ")}`).join("\n")

export const startWebhookReceiver = async (): Promise<WebhookReceiver> => {
  // Compiled before the first delivery, so a broken document fails here, in the test's setup.
  webhookEntries()
  const received: Array<Received> = []
  const mismatches: Array<{ path: string; body: string; problems: ReadonlyArray<string> }> = []
  let refuse = 0
  const server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      if (refuse > 0) {
        refuse--
        response.writeHead(500).end()
        return
      }
      const { kinds, problems } = checkWebhookDelivery(request.headers, body)
      if (problems.length > 0) mismatches.push({ path: request.url ?? "/", body, problems })
      received.push({ headers: request.headers, body, kinds })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  // Every read of `received` (its length, an index, filter, ...) throws once a body mismatched.
  const guarded = new Proxy(received, {
    get: (target, property, receiver) => {
      if (mismatches.length > 0) throw new Error(describe(mismatches))
      return Reflect.get(target, property, receiver)
    }
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: guarded,
    refuseNext: (n) => {
      refuse = n
    },
    refusalsLeft: () => refuse,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      if (mismatches.length > 0) throw new Error(describe(mismatches))
    }
  }
}

/** The delivery's payload if its signature is valid for `secret`; throws otherwise. */
export const verifiedDelivery = (secret: string, delivery: Pick<Received, "headers" | "body">) =>
  new Webhook(secret).verify(delivery.body, {
    "webhook-id": String(delivery.headers["webhook-id"]),
    "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
    "webhook-signature": String(delivery.headers["webhook-signature"])
  }) as { type: string; data: any }
