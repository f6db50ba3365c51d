# syntax=docker/dockerfile:1

# The Node.js LTS the service ships on, pinned; CI runs the test suite on this same version too.
ARG NODE_VERSION=24.9.0

# Build: all dependencies, then compile TypeScript to dist/ and bundle the server (dist/server.mjs)
# and the operator commands user, seed, migrate and keys (dist/cli.mjs); prepare the template a new
# embedded database is copied from (node_modules/.cache/ehr-service).
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The npm workspace of the OpenAPI type generator, which the build runs first (npm run openapi:types).
COPY scripts/openapi-types/package.json ./scripts/openapi-types/
# Without the root's prepare script, which needs the sources: the build below runs it.
RUN npm ci --ignore-scripts
# openapi.json: the typed client (scripts/client) is compiled with the types generated from it.
COPY tsconfig.json tsconfig.build.json openapi.json ./
COPY src ./src
COPY db ./db
COPY schemas ./schemas
COPY scripts ./scripts
RUN npm run build && test -f dist/server.mjs && test -f dist/cli.mjs

# Run: compiled JavaScript and production dependencies only, as the unprivileged `node` user.
FROM node:${NODE_VERSION}-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production DATA_DIR=/data PORT=8080
COPY package.json package-lock.json ./
# npm ci needs every workspace of the lock file; the generator's packages are dev-only, so not installed.
COPY scripts/openapi-types/package.json ./scripts/openapi-types/
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
# dist/ holds both bundles: the server, and the operator commands, run with node alone (no tsx, no
# sources), e.g. `docker run --rm -v ehr-data:/data ehr-service node dist/cli.mjs user help`, or
# `npm run user:prod -- help` (docs/operations.md). On the embedded database, stop the service
# container first; with DATABASE_URL, `docker exec` into a running one.
COPY --from=build /app/dist ./dist
# The embedded database's template: a first start on a new /data volume copies it (docs/operations.md).
# Owned by the user who reads it: some of its files are readable by their owner only.
COPY --from=build --chown=node:node /app/node_modules/.cache/ehr-service ./node_modules/.cache/ehr-service
# The embedded database lives in /data when DATABASE_URL is not set; mount a volume to keep it.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080
# Readiness: UP once migrations ran and the database answers; DOWN while shutting down or when the
# database is unreachable. The first start creates the embedded database, hence the start period.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/actuator/health/readiness').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1 and handles SIGTERM (graceful shutdown in src/start.ts); the options are
# those of `npm run start:prod` (docs/operations.md, "Running in production").
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=32", "dist/server.mjs"]
