#!/usr/bin/env node
// `npx wa ...` runs with the project's Node 24 (first on PATH under npm), which runs .ts directly.
// src/main.ts picks the verb and loads only that verb's modules (client verbs: the SDK alone).
await import("../src/main.ts")
