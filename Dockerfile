# syntax=docker/dockerfile:1
# odds-service image. Build from the repository root:
#   docker build -t odds-service:0.1.0 .
# Node 24 LTS on Debian 13 (glibc 2.41): uWebSockets.js v20.57's binaries need
# glibc 2.38 or newer, and none of the uWS builds load on musl (alpine).

# 1. Build: full install (protobufjs-cli and typescript are devDependencies),
#    generate the protobuf code, compile TypeScript to dist/.
FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY proto ./proto
COPY sql ./sql
COPY src ./src
RUN npm run build

# 2. Production dependencies only, from the same lock file.
FROM node:24-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# 3. Runtime: compiled code, migrations, protobuf schema, the OpenAPI document (served at /openapi.json), production
#    node_modules. Files stay owned by root, so the app cannot change them.
FROM node:24-trixie-slim AS runtime
# Every interface, so the container's port can be published, with API keys on: with
# AUTH=off the service would otherwise listen on loopback only.
ENV NODE_ENV=production \
    PORT=8080 \
    METRICS_PORT=9464 \
    HOST=0.0.0.0 \
    AUTH=on
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json package-lock.json ./
COPY sql ./sql
COPY proto ./proto
COPY docs/openapi.json ./docs/openapi.json
# The image's "node" user (uid 1000), numeric so Kubernetes runAsNonRoot can check it.
USER 1000:1000
# 8080: REST and sockets, answering to localhost, IP addresses and the names in ALLOWED_HOSTS;
# 9464: /metrics for Prometheus only, on loopback unless METRICS_HOST opens it (the Kubernetes
# ConfigMap does, with a NetworkPolicy and METRICS_TOKEN).
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node runs as PID 1 and handles SIGTERM itself (graceful drain, exit 0).
CMD ["node", "dist/src/main.js"]
