import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

/**
 * Fastify gives every request a child logger carrying its id. Pino builds a child's bound fields at
 * once, through the credential redaction: for the `*.password`-style paths that parses each path
 * again and allocated a tenth of all the memory of a by-id read, although most requests never log
 * through it (the access line is written by request-context.ts). The child is made on first use
 * instead; until then it costs one small object.
 */
export const lazyChildLoggers: ChildLoggerFactory = (logger, bindings, options) => {
  let child: FastifyBaseLogger | undefined
  const real = () => {
    child ??= logger.child(bindings, options)
    return child
  }
  const method =
    (level: Level) =>
    (...args: unknown[]) =>
      (real()[level] as (...args: unknown[]) => void)(...args)
  return {
    get level() {
      return child?.level ?? options.level ?? logger.level
    },
    set level(level: string) {
      real().level = level
    },
    fatal: method('fatal'),
    error: method('error'),
    warn: method('warn'),
    info: method('info'),
    debug: method('debug'),
    trace: method('trace'),
    silent: method('silent'),
    child: (childBindings, childOptions) => real().child(childBindings, childOptions),
  } as FastifyBaseLogger
}
