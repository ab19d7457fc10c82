/** A signed-in console user's session (cookie from the console, bearer from the CLI). */

import type { UserId, UserSessionId } from "./id-schemas.ts"

export type SessionKind = "cookie" | "bearer"

export interface ConsoleSession {
  readonly sessionId: UserSessionId
  readonly userId: UserId
  readonly email: string
  readonly kind: SessionKind
  readonly expiresAt: Date
}
