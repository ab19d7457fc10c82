/**
 * The one Node global the domain schemas the console's types come from still name:
 * src/domain/run.ts (a run's `output_schema`) and src/domain/monitor.ts (a monitor's
 * `extraction_schema`) bound a JSON Schema's size with `Buffer.byteLength` in a filter. The console
 * only takes types from there (nothing of it runs in the console), but `tsc -p console` checks
 * those files with the browser's globals, which have no Buffer. Declared here as narrowly as they
 * use it, rather than giving the console every Node type. Remove once the domain measures with
 * `new TextEncoder().encode(text).length` (the browser SDK bundles these filters, where Buffer is
 * not defined either).
 */
declare const Buffer: { byteLength(text: string): number }
