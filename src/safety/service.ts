/**
 * The safety boundary of a project (`/v1/projects/{pid}/safety`):
 *
 * - `SafetyPolicies`: read and replace a project's policy (entries checked and normalised,
 *   policy.ts), refuse a DoAnything create whose URLs break it (`checkCreate`), and give a run
 *   its boundary (`forRun`): the navigation check the browser's guard applies to every document
 *   (agent navigation, clicks, redirects, pop-ups; src/browser/guard.ts), and the confirm
 *   categories the agent's click tools ask a person about (confirm.ts).
 * - A run takes the policy when it starts; a change applies to runs started afterwards.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { InvalidField, type WireBody } from "../domain/errors.ts"
import {
  type BoundaryRefusal,
  checkUrl,
  CONFIRM_CATEGORIES,
  type ConfirmCategory,
  emptyPolicy,
  MAX_DOMAINS,
  normaliseDomain,
  type SafetyPolicy,
  urlsOfCreate
} from "./policy.ts"
import { SafetyPolicyStore, type StoredPolicy } from "./store.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"

export { type BoundaryRefusal, CONFIRM_CATEGORIES, type ConfirmCategory, type SafetyPolicy } from "./policy.ts"
export type { StoredPolicy } from "./store.ts"

/** A create (or continue) whose URLs break the project's policy: 403 safety_boundary_violated. */
export class SafetyBoundaryViolated extends Schema.TaggedError<SafetyBoundaryViolated>()("SafetyBoundaryViolated", {
  reason: Schema.String,
  field: Schema.String,
  url: Schema.String,
  domain: Schema.NullOr(Schema.String),
  rule: Schema.String
}) {
  get httpStatus() { return 403 as const }
  get code() { return "safety_boundary_violated" }
  wire(): WireBody {
    return {
      detail: `refused by the project's safety boundary (/v1/projects/{pid}/safety): ${this.field} names ${this.url}; ${this.reason}`,
      extra: { reason: this.reason, field: this.field, url: this.url, domain: this.domain, rule: this.rule }
    }
  }
}

export interface PolicyInput {
  readonly allowed_domains?: ReadonlyArray<string> | undefined
  readonly denied_domains?: ReadonlyArray<string> | undefined
  readonly confirm_actions?: ReadonlyArray<string> | undefined
}

/** One run's boundary. */
export interface RunSafety {
  readonly policy: SafetyPolicy
  /** Undefined when a document may load from `url`; the refusal otherwise. */
  readonly navigation: (url: string) => BoundaryRefusal | undefined
  /** Whether clicks of this category wait for a person's yes. */
  readonly confirms: (category: ConfirmCategory) => boolean
  /** Whether anything is checked at all (no policy: the run goes exactly as before). */
  readonly active: boolean
  /** Whether pages are checked (a domain list is set): without, the guard routes nothing for it. */
  readonly checksDomains: boolean
}

export const runSafety = (policy: SafetyPolicy): RunSafety => ({
  policy,
  navigation: (url) => checkUrl(policy, url),
  confirms: (category) => policy.confirm_actions.includes(category),
  active: policy.allowed_domains.length > 0 || policy.denied_domains.length > 0 || policy.confirm_actions.length > 0,
  checksDomains: policy.allowed_domains.length > 0 || policy.denied_domains.length > 0
})

export const noSafety: RunSafety = runSafety(emptyPolicy)

const invalid = (field: ReadonlyArray<string>, msg: string) =>
  new InvalidField({ field, detail: `${field.join(".")} ${msg}`, msg, type: "value_error" })

const checkDomains = (field: string, entries: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (entries.length > MAX_DOMAINS) return yield* invalid([field], `must list at most ${MAX_DOMAINS} domains`)
    const out: Array<string> = []
    for (const [index, entry] of entries.entries()) {
      const normalised = normaliseDomain(entry)
      if (typeof normalised === "string") return yield* invalid([field, String(index)], `${JSON.stringify(entry.slice(0, 100))} ${normalised}`)
      if (!out.includes(normalised.domain)) out.push(normalised.domain)
    }
    return out
  })

/** The policy as it is stored, or the first bad entry. */
export const normalisePolicy = (input: PolicyInput): Effect.Effect<SafetyPolicy, InvalidField> =>
  Effect.gen(function*() {
    const allowed = yield* checkDomains("allowed_domains", input.allowed_domains ?? [])
    const denied = yield* checkDomains("denied_domains", input.denied_domains ?? [])
    const confirm: Array<ConfirmCategory> = []
    for (const [index, category] of (input.confirm_actions ?? []).entries()) {
      if (!(CONFIRM_CATEGORIES as ReadonlyArray<string>).includes(category)) {
        return yield* invalid(["confirm_actions", String(index)], `must be one of ${CONFIRM_CATEGORIES.join(", ")}`)
      }
      if (!confirm.includes(category as ConfirmCategory)) confirm.push(category as ConfirmCategory)
    }
    return { allowed_domains: allowed, denied_domains: denied, confirm_actions: confirm }
  })

export class SafetyPolicies extends Context.Service<SafetyPolicies, {
  readonly get: (projectId: ProjectId) => Effect.Effect<StoredPolicy>
  readonly put: (projectId: ProjectId, input: PolicyInput) => Effect.Effect<StoredPolicy, InvalidField>
  /** Fails when a URL of the create body (instructions' URLs, `*_url` fields but callback_url) is outside the policy. */
  readonly checkCreate: (projectId: ProjectId, body: Readonly<Record<string, unknown>>) => Effect.Effect<void, SafetyBoundaryViolated>
  readonly forRun: (projectId: ProjectId) => Effect.Effect<RunSafety>
}>()("wa/safety/SafetyPolicies") {
  static readonly layer = Layer.effect(
    SafetyPolicies,
    Effect.gen(function*() {
      const store = yield* SafetyPolicyStore
      return SafetyPolicies.of({
        ...withMethodSpans<Pick<SafetyPolicies["Service"], "get" | "forRun">>("SafetyPolicies", { get: store.get, forRun: (projectId) => Effect.map(store.get(projectId), runSafety) }),
        put: Effect.fn("SafetyPolicies.put")(function*(projectId: ProjectId, input: PolicyInput) {
          return yield* store.put(projectId, yield* normalisePolicy(input))
        }),
        checkCreate: Effect.fn("SafetyPolicies.checkCreate")(function*(projectId: ProjectId, body: Readonly<Record<string, unknown>>) {
          const urls = urlsOfCreate(body)
          if (urls.length === 0) return
          const policy = yield* store.get(projectId)
          for (const { field, url } of urls) {
            const refused = checkUrl(policy, url)
            if (refused !== undefined) {
              return yield* new SafetyBoundaryViolated({
                reason: refused.reason,
                field,
                url: refused.url,
                domain: refused.domain,
                rule: refused.rule
              })
            }
          }
        })
      })
    })
  ).pipe(Layer.provide(SafetyPolicyStore.layer))
}
