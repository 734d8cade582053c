# syntax=docker/dockerfile:1
# odds-service image. Build from the repository root:
#   docker build -t odds-service:0.1.0 .
# Node 24 LTS on Debian 13 (glibc 2.41): uWebSockets.js v20.57's binaries need
# glibc 2.38 or newer, and none of the uWS builds load on musl (alpine).
# test/deploy/image.test.ts replays these steps on a clean checkout in `npm test`.

# 1. Build: full install (protobufjs-cli, typescript and esbuild are devDependencies),
#    generate the protobuf code, compile TypeScript to dist/, bundle the board.
FROM node:24-trixie-slim AS build
WORKDIR /app
# The lock file names the client/ workspace, so npm ci needs its package.json.
COPY package.json package-lock.json ./
COPY client/package.json ./client/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY proto ./proto
COPY src ./src
COPY client ./client
RUN npm run build

# 2. Production dependencies only, from the same lock file. Optional ones are left out: the
#    embedded Postgres (the development start without DATABASE_URL) and uWS v20.30 (Node 20 on
#    an older glibc). Of v20.57's binaries only the one for this image's Node is kept: a missing
#    one fails the build here rather than the start. npm's cache stays in this stage: only
#    node_modules is copied on.
FROM node:24-trixie-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --workspaces=false --no-audit --no-fund
RUN keep="uws_$(node -p 'process.platform + "_" + process.arch + "_" + process.versions.modules').node" \
    && test -f "node_modules/uWebSockets.js-v20.57/$keep" \
    && find node_modules/uWebSockets.js-v20.57 -name 'uws_*.node' ! -name "$keep" -delete

# 3. Runtime: compiled code and the board, migrations, the protobuf schema, the OpenAPI document
#    (served at /openapi.json), production node_modules. Files stay owned by root, so the app
#    cannot change them.
FROM node:24-trixie-slim AS runtime
# Every interface, so the container's port can be published, with API keys on: with
# AUTH=off the service would otherwise listen on loopback only.
ENV NODE_ENV=production \
    PORT=8080 \
    METRICS_PORT=9464 \
    HOST=0.0.0.0 \
    AUTH=on
# bzip2: recorded exchange files come as .bz2 (Betfair's historical data), read through the
# system's bzip2 (src/exchange/files.ts); the slim base has none.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bzip2 \
    && rm -rf /var/lib/apt/lists/*
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
