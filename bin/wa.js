#!/usr/bin/env node
// `npx wa ...` runs with the project's Node 24 (first on PATH under npm), which runs .ts directly.
await import("../src/main.ts")
