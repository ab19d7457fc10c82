/**
 * Handlers of /v1/projects/{pid}/skills, through the Skills service. Any key of the project may
 * create, read, update and delete them (scope `run`), as it may its profiles: a skill is what the
 * project's runs are given.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type Skill, type SkillDetail, Skills } from "../../do-anything/skills.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { cursorPage } from "../pagination.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

/** A skill in a list, created or updated: its current version, without the versions. */
export const skillSummaryView = (skill: Skill) => ({
  id: skill.id,
  name: skill.name,
  description: skill.description,
  parameters: skill.parameters,
  kind: skill.kind,
  instructions: skill.instructions,
  steps: skill.steps,
  version: skill.version,
  call_count: skill.call_count,
  last_used_at: iso(skill.last_used_at),
  created_at: skill.created_at.toISOString(),
  updated_at: skill.updated_at.toISOString()
})

export const skillView = (skill: SkillDetail) => ({
  ...skillSummaryView(skill),
  versions: skill.versions.map((version) => ({
    version: version.version,
    kind: version.kind,
    source_run_id: version.source_run_id,
    created_at: version.created_at.toISOString()
  }))
})

export const SkillsHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "skills",
  Effect.fn(function*(handlers) {
    const skills = yield* Skills
    return handlers
      .handle("create", ({ payload: { name, ...input } }) =>
        CurrentKey.use(({ projectId }) => skills.create(projectId, name, input)).pipe(
          httpErrors,
          Effect.map(skillSummaryView)
        ))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          return yield* cursorPage(query, (limit, beforeId) => skills.list(projectId, limit, beforeId), skillSummaryView)
        }))
      .handle("get", ({ params }) =>
        CurrentKey.use(({ projectId }) => skills.get(projectId, params.skill)).pipe(
          httpErrors,
          Effect.map(skillView)
        ))
      .handle("update", ({ params, payload }) =>
        CurrentKey.use(({ projectId }) => skills.update(projectId, params.skill, payload)).pipe(
          httpErrors,
          Effect.map(skillSummaryView)
        ))
      .handle("delete", ({ params }) =>
        CurrentKey.use(({ projectId }) => skills.remove(projectId, params.skill)).pipe(
          httpErrors
        ))
  })
)
