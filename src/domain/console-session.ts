/** A signed-in console user's session (cookie from the console, bearer from the CLI). */
export type SessionKind = "cookie" | "bearer"

export interface ConsoleSession {
  readonly sessionId: string
  readonly userId: string
  readonly email: string
  readonly kind: SessionKind
  readonly expiresAt: Date
}
