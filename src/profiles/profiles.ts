/**
 * Profiles: the product service of browser identities. CRUD, and the interactive login:
 *
 * - `startLogin` creates (or takes) a profile and opens a login session: a kept-alive DoAnything
 *   session holding the profile, whose first run opens the start URL. A person signs in there
 *   (through the live view's take control once it exists; until then the run's agent, given
 *   `instructions`, does it), then calls confirm.
 * - `confirm` closes the login session if it is still open (its Session entity saves the browser
 *   state into the profile, encrypted, before the session is closed), then asks the Profile entity
 *   to probe the saved state on the start URL (src/profiles/probe.ts) and records the result:
 *   `logged_in` → state `active` and `last_alive_at`; `logged_out` → state `logged_out` and
 *   `last_failure_reason`.
 */
import { Context, Effect, Layer } from "effect"
import type { InsufficientCredits, LoginNotStarted, MissingFields, ProfileInUse, ProfileNotFound, SessionCapReached, UnknownNames, WorkspaceNotFound } from "../domain/errors.ts"
import { InvalidField, LoginNotStarted as LoginNotStartedError } from "../domain/errors.ts"
import type { Profile, ProfileState } from "../domain/profile.ts"
import { ProfileEntity } from "../entities/profile.ts"
import { Sessions } from "../entities/sessions.ts"
import { RunStore } from "../store/runs.ts"
import { type ProfileFields, ProfileStore } from "./profile-store.ts"
import type { ProbeResult } from "./probe.ts"

export interface StartLogin {
  readonly profile_id?: string | null | undefined
  readonly name?: string | null | undefined
  readonly customer_user_id?: string | null | undefined
  readonly start_url: string
  readonly site_id: string
  readonly display_label?: string | null | undefined
  readonly instructions?: string | null | undefined
  readonly logged_in_selector?: string | null | undefined
  readonly logged_out_selector?: string | null | undefined
}

export interface LoginStarted {
  readonly profile: Profile
  readonly sessionId: string
  readonly runId: string
}

export interface Confirmed {
  readonly profile_id: string
  readonly state: ProfileState | string
  readonly probe_result: ProbeResult
  readonly final_url: string | null
  readonly reason: string
}

/** What the login session's first run is told when the request gives no instructions. */
export const loginInstructions = (startUrl: string, siteId: string) =>
  `Open ${startUrl} (site ${siteId}) with navigate and stay there: a person signs in to this site in this browser. ` +
  "Do not type credentials yourself. Ask the person with ask_human to sign in and to answer when they are done, then finish with done."

export class Profiles extends Context.Service<Profiles, {
  readonly create: (projectId: string, fields: ProfileFields) => Effect.Effect<Profile>
  readonly list: (projectId: string, options: { readonly limit: number; readonly beforeId?: string | undefined; readonly customerUserId?: string | undefined }) => Effect.Effect<{ readonly items: ReadonlyArray<Profile>; readonly total: number }>
  readonly get: (projectId: string, profileId: string) => Effect.Effect<Profile, ProfileNotFound>
  readonly update: (projectId: string, profileId: string, fields: ProfileFields) => Effect.Effect<Profile, ProfileNotFound>
  readonly remove: (projectId: string, profileId: string) => Effect.Effect<void, ProfileNotFound | ProfileInUse>
  readonly startLogin: (key: { readonly projectId: string; readonly keyId: string }, request: StartLogin) => Effect.Effect<
    LoginStarted,
    ProfileNotFound | ProfileInUse | SessionCapReached | UnknownNames | MissingFields | InvalidField | WorkspaceNotFound | InsufficientCredits
  >
  readonly confirm: (projectId: string, profileId: string, request: { readonly site_id: string; readonly display_label?: string | null | undefined }) => Effect.Effect<
    Confirmed,
    ProfileNotFound | LoginNotStarted
  >
}>()("wa/profiles/Profiles") {
  static readonly layer = Layer.effect(
    Profiles,
    Effect.gen(function*() {
      const store = yield* ProfileStore
      const sessions = yield* Sessions
      const runs = yield* RunStore
      const entityFor = yield* ProfileEntity.client

      return Profiles.of({
        create: store.create,
        list: store.list,
        get: store.get,
        update: store.update,
        remove: store.remove,
        startLogin: Effect.fn("Profiles.startLogin")(function*(key, request) {
          const given = request.profile_id ?? null
          if (given !== null && ((request.name ?? null) !== null || (request.customer_user_id ?? null) !== null)) {
            return yield* new InvalidField({
              field: ["name"],
              detail: "give profile_id (an existing profile) or name/customer_user_id (a new one), not both",
              msg: "not allowed with profile_id",
              type: "value_error"
            })
          }
          const profile = given !== null ? yield* store.get(key.projectId, given) : yield* store.create(key.projectId, {
            name: request.name ?? null,
            customer_user_id: request.customer_user_id ?? null
          })
          const created = yield* sessions.create(key, {
            _tag: "DoAnything",
            instructions: request.instructions ?? loginInstructions(request.start_url, request.site_id),
            profile_id: profile.id,
            keep_alive: true
          }).pipe(
            // A profile made for this login does not outlive a login that could not start.
            Effect.tapError(() => given === null ? store.remove(key.projectId, profile.id).pipe(Effect.ignore) : Effect.void)
          )
          yield* store.startLogin({
            profile_id: profile.id,
            site_id: request.site_id,
            start_url: request.start_url,
            display_label: request.display_label ?? null,
            session_id: created.session.id,
            logged_in_selector: request.logged_in_selector ?? null,
            logged_out_selector: request.logged_out_selector ?? null
          })
          yield* store.setState(profile.id, "login_pending")
          yield* Effect.logInfo("interactive login started").pipe(Effect.annotateLogs({ profile_id: profile.id, site_id: request.site_id, session_id: created.session.id }))
          return { profile: yield* store.get(key.projectId, profile.id), sessionId: created.session.id, runId: created.run.id }
        }),
        confirm: Effect.fn("Profiles.confirm")(function*(projectId, profileId, request) {
          yield* store.get(projectId, profileId)
          const login = yield* store.findLogin(profileId, request.site_id)
          if (login === undefined) return yield* new LoginNotStartedError({ profileId, siteId: request.site_id })
          if (login.session_id !== null) {
            const session = yield* runs.getSession(projectId, login.session_id)
            if (session !== undefined && session.status !== "closed") {
              // Closing saves the login session's browser state into the profile first.
              yield* sessions.close(projectId, session.id).pipe(Effect.ignore)
            }
          }
          const probed = yield* entityFor(profileId).Probe({ siteId: request.site_id, displayLabel: request.display_label }).pipe(Effect.orDie)
          return { profile_id: profileId, state: probed.state, probe_result: probed.probe_result, final_url: probed.final_url, reason: probed.reason }
        })
      })
    })
  ).pipe(Layer.provide(ProfileStore.layer))
}
