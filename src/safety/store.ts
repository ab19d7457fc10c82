/**
 * Safety policies in PostgreSQL (table safety_policies, migration 0028): one row per project that
 * has one; no row reads as the empty policy. Entries are stored as the service normalised them.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { CONFIRM_CATEGORIES, type SafetyPolicy } from "./policy.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ProjectId } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"

export interface StoredPolicy extends SafetyPolicy {
  /** Null while the project has never set one. */
  readonly updated_at: Date | null
}

const policyRows = decodeRows(Schema.Struct({
  allowed_domains: Schema.Array(Schema.String),
  denied_domains: Schema.Array(Schema.String),
  confirm_actions: Schema.Array(Schema.Literals(CONFIRM_CATEGORIES)),
  updated_at: Schema.Date
}))

export class SafetyPolicyStore extends Context.Service<SafetyPolicyStore, {
  readonly get: (projectId: ProjectId) => Effect.Effect<StoredPolicy>
  /** Replaces the project's policy (already normalised). */
  readonly put: (projectId: ProjectId, policy: SafetyPolicy) => Effect.Effect<StoredPolicy>
}>()("wa/safety/SafetyPolicyStore") {
  static readonly layer = Layer.effect(
    SafetyPolicyStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return SafetyPolicyStore.of(withMethodSpans("SafetyPolicyStore", {
        get: (projectId) =>
          policyRows(sql`SELECT allowed_domains, denied_domains, confirm_actions, updated_at FROM safety_policies WHERE project_id = ${projectId}`).pipe(
            Effect.map((rows): StoredPolicy => rows[0] ?? { allowed_domains: [], denied_domains: [], confirm_actions: [], updated_at: null })
          ),
        put: (projectId, policy) =>
          policyRows(sql`
            INSERT INTO safety_policies (project_id, allowed_domains, denied_domains, confirm_actions)
            VALUES (${projectId}, ${JSON.stringify(policy.allowed_domains)}::jsonb, ${JSON.stringify(policy.denied_domains)}::jsonb,
                    ${JSON.stringify(policy.confirm_actions)}::jsonb)
            ON CONFLICT (project_id) DO UPDATE SET
              allowed_domains = excluded.allowed_domains,
              denied_domains = excluded.denied_domains,
              confirm_actions = excluded.confirm_actions,
              updated_at = now()
            RETURNING allowed_domains, denied_domains, confirm_actions, updated_at`).pipe(
            Effect.map((rows): StoredPolicy => rows[0]!)
          )
      }))
    })
  )
}
