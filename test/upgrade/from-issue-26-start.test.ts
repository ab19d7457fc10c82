/**
 * Upgrade from the database of 4d2d092 (2026-11-28), main just before the first commit whose message
 * names issue 26: migrations 0001-0031 already one file each in src/store/migrations/, before
 * 0032 (pending runs) and 0033 (Track's ticks moved onto the shared run tables). Its fixture also
 * holds what that main had and e7b3803 had not: a safety policy, a project secret, a skill. See
 * upgrade-suite.ts.
 */
import { upgradeSuite } from "./upgrade-suite.ts"

upgradeSuite("4d2d092")
