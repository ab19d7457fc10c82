/** Handlers of /v1/projects/{pid}/profiles. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import type { Profile } from "../../domain/profile.ts"
import { Profiles } from "../../do-anything/profiles.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { publicBaseUrl } from "./do-anything.ts"
import { DEFAULT_LIMIT, decodeCursor, toPage } from "../pagination.ts"

const iso = (date: Date | null) => date === null ? null : date.toISOString()

export const profileView = (profile: Profile) => ({
  id: profile.id,
  project_id: profile.project_id,
  name: profile.name,
  customer_user_id: profile.customer_user_id,
  state: profile.state,
  last_used_at: iso(profile.last_used_at),
  last_alive_at: iso(profile.last_alive_at),
  last_failure_reason: profile.last_failure_reason,
  proxy_country_code: profile.proxy_country_code,
  bb_context_id: null,
  cookie_domains: [],
  has_saved_state: profile.has_saved_state,
  state_saved_at: iso(profile.state_saved_at),
  leased_by_session_id: profile.leased_by_session_id,
  created_at: profile.created_at.toISOString(),
  updated_at: profile.updated_at.toISOString()
})

export const ProfilesHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "profiles",
  Effect.fn(function*(handlers) {
    const profiles = yield* Profiles
    return handlers
      .handle("create", ({ payload }) =>
        CurrentKey.use(({ projectId }) => profiles.create(projectId, payload)).pipe(Effect.map(profileView)))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const limit = query.limit ?? DEFAULT_LIMIT
          const beforeId = yield* decodeCursor(query.cursor)
          const { items, total } = yield* profiles.list(projectId, { limit: limit + 1, beforeId, customerUserId: query.customer_user_id })
          const page = toPage(items, limit)
          return { items: page.items.map(profileView), total, next_cursor: page.next_cursor }
        }))
      .handle("get", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(profiles.get(projectId, params.profile_id))).pipe(Effect.map(profileView)))
      .handle("update", ({ params, payload }) =>
        CurrentKey.use(({ projectId }) => httpErrors(profiles.update(projectId, params.profile_id, payload))).pipe(Effect.map(profileView)))
      .handle("delete", ({ params }) =>
        CurrentKey.use(({ projectId }) => httpErrors(profiles.remove(projectId, params.profile_id))))
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const key = yield* CurrentKey
          const started = yield* httpErrors(profiles.startLogin(key, payload, yield* publicBaseUrl))
          return {
            profile_id: started.profile.id,
            session_id: started.sessionId,
            run_id: started.runId,
            site_id: payload.site_id,
            start_url: payload.start_url,
            state: started.profile.state,
            control_url: started.control?.standalone_control_url ?? null,
            control_url_exp: started.control?.exp ?? null,
            profile: profileView(started.profile)
          }
        }))
      .handle("confirm", ({ params, payload }) =>
        CurrentKey.use(({ projectId }) => httpErrors(profiles.confirm(projectId, params.profile_id, payload))))
  })
)
