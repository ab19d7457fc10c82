/**
 * Project secrets: values a run types into pages without the model ever seeing them.
 *
 * - `ProjectSecrets`: create, list, get (metadata), update (value, origins, description) and
 *   delete, with the rules the schema cannot express: origins parsed and normalised
 *   (origins.ts), a TOTP value parsed and kept as its otpauth URI (totp.ts). Values are
 *   write-only: nothing here returns one.
 * - `SecretVaultLive`: the agent's SecretVault (src/agent/tools.ts). A run that names secrets
 *   gets them opened once, when it starts; `reveal` gives a value (a TOTP secret's current code)
 *   only for a field on one of the secret's origins, and `redact` replaces every value, and
 *   every code handed out, by its placeholder in anything that leaves the browser.
 */
import { Context, Effect, Layer } from "effect"
import { InvalidField } from "../domain/errors.ts"
import { type RunSecrets, SecretsUnavailable, SecretVault } from "../agent/tools.ts"
import { MAX_ORIGINS, MAX_VALUE_LENGTH } from "./limits.ts"
import { formatOrigin, originAllowed, parseOrigin } from "./origins.ts"
import {
  type NewSecret,
  type SecretChanges,
  type SecretKind,
  SecretLimitReached,
  SecretNameTaken,
  type OpenedSecret,
  type SecretRow,
  SecretStore
} from "./secret-store.ts"
import { parseTotp, totpCode } from "./totp.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import type { SecretId } from "../domain/id-schemas.ts"

export { SecretLimitReached, SecretNameTaken, type SecretKind, type SecretRow } from "./secret-store.ts"
export * from "./limits.ts"

export interface CreateSecret {
  readonly name: string
  readonly kind: SecretKind
  readonly value: string
  readonly origins: ReadonlyArray<string>
  readonly description: string | null
}

export interface UpdateSecret {
  readonly value?: string
  readonly origins?: ReadonlyArray<string>
  readonly description?: string | null
}

const invalid = (field: ReadonlyArray<string>, msg: string) =>
  new InvalidField({ field, detail: `${field.join(".")} ${msg}`, msg, type: "value_error" })

/** The origins normalised and without repeats; the first bad entry otherwise. */
const checkOrigins = (origins: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (origins.length === 0) return yield* invalid(["origins"], "must list at least one origin where the secret may be typed")
    if (origins.length > MAX_ORIGINS) return yield* invalid(["origins"], `must list at most ${MAX_ORIGINS} origins`)
    const out: Array<string> = []
    for (const [index, entry] of origins.entries()) {
      const parsed = parseOrigin(entry)
      if (typeof parsed === "string") return yield* invalid(["origins", String(index)], parsed)
      const formatted = formatOrigin(parsed)
      if (!out.includes(formatted)) out.push(formatted)
    }
    return out
  })

/** The value as it is sealed, for its kind (never echoed in an error). */
const checkValue = (kind: SecretKind, value: string) =>
  Effect.gen(function*() {
    if (value.length === 0) return yield* invalid(["value"], "must not be empty")
    if ([...value].length > MAX_VALUE_LENGTH) return yield* invalid(["value"], `must be at most ${MAX_VALUE_LENGTH} characters`)
    if (kind === "secret") return { value, totp: null }
    const parsed = parseTotp(value)
    if (typeof parsed === "string") return yield* invalid(["value"], parsed)
    return { value: parsed.uri, totp: { digits: parsed.digits, period: parsed.period, algorithm: parsed.algorithm } }
  })

export class ProjectSecrets extends Context.Service<ProjectSecrets, {
  readonly create: (projectId: ProjectId, input: CreateSecret) => Effect.Effect<SecretRow, InvalidField | SecretNameTaken | SecretLimitReached>
  readonly list: (projectId: ProjectId, limit: number, beforeId?: string) => Effect.Effect<ReadonlyArray<SecretRow>>
  readonly find: (projectId: ProjectId, id: SecretId) => Effect.Effect<SecretRow | undefined>
  /** undefined when there is no such secret. */
  readonly update: (projectId: ProjectId, id: SecretId, input: UpdateSecret) => Effect.Effect<SecretRow | undefined, InvalidField>
  readonly delete: (projectId: ProjectId, id: SecretId) => Effect.Effect<boolean>
}>()("wa/secrets/ProjectSecrets") {
  static readonly layer = Layer.effect(
    ProjectSecrets,
    Effect.gen(function*() {
      const store = yield* SecretStore
      return ProjectSecrets.of({
        ...withMethodSpans("ProjectSecrets", { list: store.list, find: store.find, delete: store.delete }),
        create: Effect.fn("ProjectSecrets.create")(function*(projectId: ProjectId, input: CreateSecret) {
          const origins = yield* checkOrigins(input.origins)
          const { value, totp } = yield* checkValue(input.kind, input.value)
          const secret: NewSecret = { name: input.name, kind: input.kind, value, origins, description: input.description, totp }
          return yield* store.create(projectId, secret)
        }),
        update: Effect.fn("ProjectSecrets.update")(function*(projectId: ProjectId, id: SecretId, input: UpdateSecret) {
          const existing = yield* store.find(projectId, id)
          if (existing === undefined) return undefined
          const changes: { -readonly [K in keyof SecretChanges]: SecretChanges[K] } = {}
          if (input.origins !== undefined) changes.origins = yield* checkOrigins(input.origins)
          if (input.value !== undefined) changes.value = yield* checkValue(existing.kind, input.value)
          if (input.description !== undefined) changes.description = input.description
          return yield* store.update(projectId, id, changes)
        })
      })
    })
  ).pipe(Layer.provide(SecretStore.layer))
}

/** Values shorter than this are not searched for in text (they would match everywhere); their fields are masked all the same. */
const MIN_REDACTED_LENGTH = 4

/** The forms a value takes in text: as is, URL-encoded (a GET form, a URL), JSON-escaped. */
const formsOf = (value: string): ReadonlyArray<string> => {
  const forms = new Set([value, encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2), JSON.stringify(value).slice(1, -1)])
  return [...forms].filter((form) => form.length >= MIN_REDACTED_LENGTH)
}

/** A run's view of its opened secrets (see RunSecrets). */
export const makeRunSecrets = (opened: ReadonlyArray<OpenedSecret>, now: () => number = Date.now): RunSecrets => {
  const byName = new Map(opened.map((secret) => [secret.name, secret]))
  const patterns = new Map(opened.map((secret) => [secret.name, secret.origins.map((o) => parseOrigin(o)).filter((p) => typeof p !== "string")]))
  /** Text to hide, each with its placeholder; longest first, so a value inside another is not cut in two. */
  const hidden = new Map<string, string>()
  const hide = (value: string, placeholder: string) => {
    for (const form of formsOf(value)) if (!hidden.has(form)) hidden.set(form, placeholder)
  }
  for (const secret of opened) {
    if (secret.kind === "secret") hide(secret.value, `{{secret:${secret.name}}}`)
    else {
      hide(secret.value, `{{totp:${secret.name}}}`)
      const seed = /[?&]secret=([A-Z2-7]+)/i.exec(secret.value)?.[1]
      if (seed !== undefined) hide(seed, `{{totp:${secret.name}}}`)
    }
  }
  let ordered: ReadonlyArray<[string, string]> = []
  const reorder = () => {
    ordered = [...hidden.entries()].sort((a, b) => b[0].length - a[0].length)
  }
  reorder()
  return {
    listed: opened.map((secret) => ({ name: secret.name, kind: secret.kind, origins: secret.origins, description: secret.description })),
    reveal: (kind, name, origin) => {
      const secret = byName.get(name)
      if (secret === undefined) {
        return {
          refused: `{{${kind}:${name}}}: this run has no secret named ${JSON.stringify(name)}` +
            (opened.length > 0 ? ` (it has ${opened.map((s) => `{{${s.kind}:${s.name}}}`).join(", ")})` : "")
        }
      }
      if (secret.kind !== kind) {
        return {
          refused: secret.kind === "totp"
            ? `${JSON.stringify(name)} is a TOTP secret: write {{totp:${name}}} for its current code`
            : `${JSON.stringify(name)} is not a TOTP secret: write {{secret:${name}}}`
        }
      }
      if (!originAllowed(origin, patterns.get(name) ?? [])) {
        return {
          refused: `{{${kind}:${name}}} may be typed only on ${secret.origins.join(", ")}; this field is on ${origin}, so nothing was typed`
        }
      }
      if (secret.kind === "secret") return { value: secret.value }
      const code = totpCode(secret.value, now())
      if (!hidden.has(code)) {
        hidden.set(code, `{{totp:${name}}}`)
        reorder()
      }
      return { value: code }
    },
    redact: (text) => {
      if (ordered.length === 0 || text.length < MIN_REDACTED_LENGTH) return text
      let out = text
      for (const [form, placeholder] of ordered) if (out.includes(form)) out = out.replaceAll(form, placeholder)
      return out
    }
  }
}

/** The agent's SecretVault over the project's secrets. */
export const SecretVaultLive = Layer.effect(
  SecretVault,
  Effect.gen(function*() {
    const store = yield* SecretStore
    return SecretVault.of(withMethodSpans("SecretVault", {
      forRun: (projectId, names) =>
        Effect.gen(function*() {
          const wanted = [...new Set(names)]
          const opened = yield* store.openForRun(projectId, wanted).pipe(
            Effect.mapError((e) => new SecretsUnavailable({ detail: `the secret ${JSON.stringify(e.name)} cannot be opened: ${e.reason}` }))
          )
          const missing = wanted.filter((name) => !opened.some((secret) => secret.name === name))
          if (missing.length > 0) {
            return yield* new SecretsUnavailable({
              detail: `the run names secrets this project does not have: ${missing.join(", ")} (create them under /v1/projects/{pid}/secrets)`
            })
          }
          return makeRunSecrets(opened)
        })
    }))
  })
).pipe(Layer.provide(SecretStore.layer))
