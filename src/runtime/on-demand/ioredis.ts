// Packages that only some settings need are imported through a module like this one, with
// `await import()`: the bundle puts each in a chunk of its own, read when first asked for rather than
// on every start (scripts/bundle). A static import here, not a dynamic import of the package itself:
// a chunk of a CommonJS package would offer only its default export.
export { Redis } from 'ioredis'
