/** Schema helpers of the contract: the shared ones (src/domain/schemas.ts) and the project path parameter. */
import { Schema } from "effect"

export { CallbackUrl, MaxString, OptionalNullable, Timestamp } from "../../domain/schemas.ts"

export const ProjectIdParam = { pid: Schema.String.check(Schema.isMaxLength(64)) }
