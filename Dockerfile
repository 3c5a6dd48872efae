# syntax=docker/dockerfile:1
# comfy-durable: one image for the worker and the HTTP front (`worker` / `api`, see src/cli/main.ts).
# Debian (glibc), not Alpine: @temporalio/core-bridge ships glibc-only prebuilt binaries (musl fails with
# `__register_atfork: symbol not found`). No build step: TypeScript runs through tsx, a runtime dependency.
FROM node:20.20.2-bookworm-slim

WORKDIR /app

# Dependencies first (cached while only sources change). tsx is in `dependencies`, so --omit=dev keeps it.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --loglevel=error \
 && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src

# /data holds the blob store and the options file; a fresh named volume inherits this ownership.
RUN mkdir -p /data && chown node:node /data
ENV DATA_DIR=/data \
    HOST=0.0.0.0

USER node
VOLUME ["/data"]
EXPOSE 7860

# Node runs the TypeScript CLI directly with tsx's loader, as a single process, so SIGTERM from
# `docker stop` reaches the CLI's own handler and in-flight work drains. (bin/comfy-durable.js would put a
# spawnSync wrapper in front that neither handles nor forwards signals.) Same commands as the bin:
#   docker run IMAGE worker | api | contract URL | ...
ENTRYPOINT ["node", "--import", "tsx", "src/cli/main.ts"]
CMD ["api"]
