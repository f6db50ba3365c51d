import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

type Bindings = Parameters<ChildLoggerFactory>[1]
type ChildOptions = Parameters<ChildLoggerFactory>[2]

// A class rather than an object literal of closures: one small object per request instead of ten
// closures and their context, a share of what a by-id read allocates (docs/performance-log.md).
class LazyChildLogger {
  private child_: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  private real(): FastifyBaseLogger {
    this.child_ ??= this.parent.child(this.bindings, this.options)
    return this.child_
  }

  get level(): string {
    return this.child_?.level ?? this.options.level ?? this.parent.level
  }

  set level(level: string) {
    this.real().level = level
  }

  fatal(...args: unknown[]) {
    this.log('fatal', args)
  }
  error(...args: unknown[]) {
    this.log('error', args)
  }
  warn(...args: unknown[]) {
    this.log('warn', args)
  }
  info(...args: unknown[]) {
    this.log('info', args)
  }
  debug(...args: unknown[]) {
    this.log('debug', args)
  }
  trace(...args: unknown[]) {
    this.log('trace', args)
  }
  silent(...args: unknown[]) {
    this.log('silent', args)
  }

  child(bindings: Bindings, options?: ChildOptions) {
    return this.real().child(bindings, options)
  }

  private log(level: Level, args: unknown[]) {
    const child = this.real()
    ;(child[level] as (...args: unknown[]) => void).apply(child, args)
  }
}

/**
 * Fastify gives every request a child logger carrying its id. Pino builds a child's bound fields at
 * once, through the credential redaction: for the `*.password`-style paths that parses each path
 * again and allocated a large share of a by-id read's memory (docs/performance-log.md), although
 * most requests never log through it (the access line is written by request-context.ts). The child
 * is made on first use instead; until then it costs one small object.
 */
export const lazyChildLoggers: ChildLoggerFactory = (logger, bindings, options) =>
  new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger
