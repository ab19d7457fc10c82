/**
 * Proven addresses (src/accounts/users.ts, account-mail.ts): `users.email_verified`, and the
 * single-use tokens that an emailed link carries (address verification, password reset).
 *
 * Existing accounts: an account made by accepting an invitation without signing in is unverified
 * (the inviter held the token, nobody proved the address); it is recognised by its user row and
 * the invitation's acceptance having been written in one transaction (equal `now()`). Every other
 * account was made by the operator (`wa users create`) or by SSO with a verified address.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT false`
  yield* sql`
    UPDATE users u SET email_verified = true
    WHERE NOT EXISTS (SELECT 1 FROM invitations i WHERE i.accepted_by_user_id = u.id AND i.accepted_at = u.created_at)`
  // Only the SHA-256 of a token is stored. `email` is the address the mail went to: a
  // verification counts only while the account still has that address.
  yield* sql`
    CREATE TABLE account_tokens (
      token_hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      purpose text NOT NULL CHECK (purpose IN ('verify_email', 'reset_password')),
      email text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX account_tokens_user ON account_tokens (user_id, purpose, created_at)`
})
