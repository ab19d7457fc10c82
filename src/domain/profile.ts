/**
 * Profiles: one whole browser identity (cookies, local storage, IndexedDB) per end user, reused by
 * DoAnything sessions and Track monitors. The saved state itself never leaves the store in this
 * model: a `Profile` says whether one is saved and when.
 */
import { Schema } from "effect"
import { ProfileId } from "./id-schemas.ts"
import { MaxString, OptionalNullable } from "./schemas.ts"
import type { SessionId } from "./run.ts"
import { ProjectId } from "./run.ts"

export { ProfileId } from "./id-schemas.ts"

/**
 * `active` (the default: usable), `login_pending` (an interactive login session is open),
 * `logged_out` (the last login probe found the site signed out).
 */
export const ProfileStates = ["active", "login_pending", "logged_out"] as const
export const ProfileState = Schema.Literals(ProfileStates)
export type ProfileState = typeof ProfileState.Type

export const PROFILE_NAME_MAX = 255
export const CUSTOMER_USER_ID_MAX = 255
export const SITE_ID_MAX = 64
export const DISPLAY_LABEL_MAX = 255
export const SELECTOR_MAX = 500
/** The largest saved state accepted (JSON bytes before encryption); a larger one is not saved. */
export const MAX_STATE_BYTES = 8 * 1024 * 1024

const Nullable = <S extends Schema.Top>(schema: S) => Schema.NullOr(schema)

export class Profile extends Schema.Class<Profile>("wa/domain/Profile")({
  id: ProfileId,
  project_id: ProjectId,
  name: Nullable(Schema.String),
  customer_user_id: Nullable(Schema.String),
  state: ProfileState,
  last_used_at: Nullable(Schema.Date),
  last_alive_at: Nullable(Schema.Date),
  last_failure_reason: Nullable(Schema.String),
  proxy_country_code: Nullable(Schema.String),
  has_saved_state: Schema.Boolean,
  state_saved_at: Nullable(Schema.Date),
  /** The open session holding the profile's lease, if any. */
  leased_by_session_id: Nullable(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
}) {}

export const decodeProfile = Schema.decodeUnknownSync(Profile)

/** An interactive login of a profile on one site. */
export interface ProfileLogin {
  readonly profile_id: ProfileId
  readonly site_id: string
  readonly start_url: string
  readonly display_label: string | null
  readonly session_id: SessionId | null
  readonly logged_in_selector: string | null
  readonly logged_out_selector: string | null
  readonly probe_result: string | null
  readonly probed_at: Date | null
}

/** ISO 3166-1 alpha-2, upper case (stored for a proxy choice; no proxy is used yet). */
export const ProxyCountryCode = Schema.String.check(Schema.isPattern(/^[A-Z]{2}$/u)).annotate({ description: "ISO 3166-1 alpha-2 country code, e.g. US" })

export const profileFields = {
  name: OptionalNullable(MaxString(PROFILE_NAME_MAX)),
  customer_user_id: OptionalNullable(MaxString(CUSTOMER_USER_ID_MAX)),
  proxy_country_code: OptionalNullable(ProxyCountryCode)
}

export const CreateProfileRequest = Schema.Struct(profileFields)
export type CreateProfileRequest = typeof CreateProfileRequest.Type
export const PatchProfileRequest = Schema.Struct(profileFields)
export type PatchProfileRequest = typeof PatchProfileRequest.Type
